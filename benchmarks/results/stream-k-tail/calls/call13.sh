O=$OUT; R=$O/r; mkdir -p $R/probe
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
cd benchmarks
T0=$(date +%s)
timeout 280 python overlap_harness.py --out $R/probe --point bf16:8192x8192x5504 --host-us 20,120,300 > $R/probe/overlap_harness.txt 2>&1; echo "probe rc $? $(( $(date +%s)-T0 ))s"
cat $R/probe/overlap_harness.txt | grep -v Warning | tail -40
cd $O && tar czf results.tgz r && rm -rf r
