O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
timeout 170 python -m pytest -q -m gpu tests/kernels/rmsnorm_linear tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_routes.py tests/kernels/test_catalog_behaviour.py tests/toolkit/test_occupancy.py > $R/gpu-tests.txt 2>&1; echo "tests rc $? $(( $(date +%s)-T0 ))s"; tail -2 $R/gpu-tests.txt; grep -E "FAIL|Error" $R/gpu-tests.txt | head
timeout 60 python -m pytest -q tests/kernels/test_routes.py -k prepared > $R/route-races.txt 2>&1; echo "routes rc $?"; tail -1 $R/route-races.txt
T0=$(date +%s)
RL=triton_tuned,triton_rstd_epilogue_prepared,triton_prepared_op,cublas_xw,torch_compile
S=2048x8192x5504+2048x8192x28672+8192x8192x5504
timeout 240 python benchmarks/race_grids.py --out $R/grid --budget 230 --min-left 30 --no-graph --part rmsnorm_linear:shapes=$S:bf16:$RL --part rmsnorm_linear:shapes=$S:fp16:$RL > $R/grid.log 2>&1; echo "grid rc $? $(( $(date +%s)-T0 ))s"
for f in $(find $R/grid -name 'grid-*.md'); do echo $f; grep -E "^Targets|^Prepared" $f | cut -c1-200; grep -E "^\| [0-9]+x" $f | cut -d'|' -f2-9,12,13,14,15 | cut -c1-250; done
cd $O && tar czf results.tgz r && rm -rf r
