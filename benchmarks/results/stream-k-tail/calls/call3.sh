O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
SK=$(for d in bf16 fp16; do for s in 2048x4096x5504 2048x8192x5504 2048x8192x14336 2048x8192x28672 8192x8192x5504 8192x8192x11008; do printf "%s:%s," $d $s; done; done)
timeout 150 python benchmarks/stream_k_tail.py --out $R --points ${SK%,} --rounds 5 --calls 10 > $R/stream_k_tail.txt 2>&1; echo "race rc $? $(( $(date +%s)-T0 ))s"
grep -A20 "^| dtype" $R/stream_k_tail.txt; grep "zero\|STREAM_K=" $R/stream_k_tail.txt | head -3
RL=triton_tuned,triton_rstd_epilogue_prepared,triton_prepared_op,cublas_xw,torch_compile
S=2048x8192x5504+2048x8192x28672+8192x8192x5504
left=$(( 420 - ($(date +%s)-T0) ))
timeout $left python benchmarks/race_grids.py --out $R/grid --budget $(( left - 15 )) --min-left 30 --no-graph --part rmsnorm_linear:shapes=$S:fp16:$RL --part rmsnorm_linear:shapes=$S:bf16:$RL > $R/grid.log 2>&1; echo "grid rc $? $(( $(date +%s)-T0 ))s"
tail -4 $R/grid.log
for f in $(find $R/grid -name 'grid-*.md'); do echo $f; grep -E "^Prepared|^Dispatch|^Targets" $f | cut -c1-300; grep -E "^\| [0-9]+x" $f | cut -d'|' -f2-9,13,14,15; done
{ timeout 140 python -m pytest -q -m gpu tests/kernels/rmsnorm_linear tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_routes.py tests/kernels/test_catalog_behaviour.py -k "rmsnorm_linear or ops or route or prepared or tail or pdl"; } > $R/gpu-tests.txt 2>&1; echo "tests rc $? $(( $(date +%s)-T0 ))s"
grep -E "passed|failed|Error" $R/gpu-tests.txt | tail -6
cd $O && tar czf results.tgz r && rm -rf r
