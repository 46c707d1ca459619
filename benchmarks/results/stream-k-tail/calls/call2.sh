O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
timeout 90 python -m pytest -q -m gpu tests/kernels/test_catalog_behaviour.py -k "tail_in_parts or pdl" > $R/gpu-tests.txt 2>&1; echo "gpu tests rc $?"; tail -3 $R/gpu-tests.txt
timeout 330 python benchmarks/stream_k_tail.py --out $R --rounds 5 --calls 10 > $R/stream_k_tail.txt 2>&1; echo "race rc $?"
grep -v "^  " $R/stream_k_tail.txt | tail -30; grep "STREAM_K=\|compiled" $R/stream_k_tail.txt
cd $O && tar czf results.tgz r && rm -rf r
