O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
timeout 200 python -m pytest -v -m gpu tests/kernels/test_catalog_behaviour.py tests/toolkit/test_occupancy.py tests/toolkit/test_timing.py -k "stream_k or tail_in_parts or pdl or occupancy or driver or cold" > $R/gpu-tests.txt 2>&1; echo "tests rc $? $(( $(date +%s)-T0 ))s"; grep -E "PASS|FAIL|SKIP|ERROR" $R/gpu-tests.txt | cut -c1-160 | tail -30; tail -1 $R/gpu-tests.txt
cd $O && tar czf results.tgz r && rm -rf r
