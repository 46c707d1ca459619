O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
timeout 250 python -m pytest -q -m gpu tests/kernels/rmsnorm_linear tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_routes.py tests/kernels/test_catalog_behaviour.py tests/toolkit/test_occupancy.py tests/toolkit/test_timing.py tests/toolkit/test_grid.py > $R/gpu-tests.txt 2>&1; echo "tests rc $? $(( $(date +%s)-T0 ))s"; tail -2 $R/gpu-tests.txt; grep -E "FAIL|ERROR" $R/gpu-tests.txt | head
timeout 60 python -m pytest -q tests/kernels/test_routes.py -k prepared > $R/route-races.txt 2>&1; echo "routes rc $?"; tail -1 $R/route-races.txt
cd $O && tar czf results.tgz r && rm -rf r
