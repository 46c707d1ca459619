O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
timeout 200 python benchmarks/stream_k_parts_cost.py --out $R --rounds 5 > $R/stream_k_parts_cost.txt 2>&1; echo "rc $? $(( $(date +%s)-T0 ))s"
grep -A10 "^| dtype" $R/stream_k_parts_cost.txt; grep -i "not timed\|counters\|Error" $R/stream_k_parts_cost.txt | head
cd $O && tar czf results.tgz r && rm -rf r
