O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
timeout 150 python .whl/quant.py > $R/quant.txt 2>&1; echo "quant rc $?"
timeout 200 python -m pytest -q -m gpu tests/kernels/rmsnorm_linear tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_routes.py > $R/gpu-tests.txt 2>&1; echo "gpu tests rc $?"
timeout 60 python -m pytest -q tests/kernels/test_routes.py -k prepared > $R/gpu-tests-routes.txt 2>&1; echo "routes rc $?"
tail -3 $R/gpu-tests.txt; tail -3 $R/gpu-tests-routes.txt; tail -12 $R/quant.txt
cd $O && tar czf results.tgz r && rm -rf r
