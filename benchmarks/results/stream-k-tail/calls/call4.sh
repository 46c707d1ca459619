O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
P=bf16:8192x8192x5504,fp16:8192x8192x5504,bf16:2048x8192x5504,fp16:2048x8192x5504
mkdir -p $R/cupti $R/events
timeout 200 python benchmarks/stream_k_tail.py --out $R/cupti --points $P --rounds 3 --timer cupti > $R/cupti/stream_k_tail.txt 2>&1; echo "cupti rc $? $(( $(date +%s)-T0 ))s"
grep -A8 "^| dtype" $R/cupti/stream_k_tail.txt
timeout 120 python benchmarks/stream_k_tail.py --out $R/events --points $P --rounds 5 > $R/events/stream_k_tail.txt 2>&1; echo "events rc $? $(( $(date +%s)-T0 ))s"
grep -A8 "^| dtype" $R/events/stream_k_tail.txt
grep -h "^==\|op-" $R/cupti/stream_k_tail.txt | head -24
cd $O && tar czf results.tgz r && rm -rf r
