O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
T0=$(date +%s)
timeout 170 python -m pytest -q -m gpu tests/kernels/rmsnorm_linear tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_catalog_behaviour.py -k "rmsnorm_linear or rms_norm_linear or stream_k or pdl or prepared" > $R/gpu-tests.txt 2>&1; echo "tests rc $? $(( $(date +%s)-T0 ))s"; tail -1 $R/gpu-tests.txt; grep -E "FAIL|ERROR" $R/gpu-tests.txt | head
cd $O && tar czf results.tgz r && rm -rf r
