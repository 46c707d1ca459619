O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
RL=triton_tuned,triton_rstd_epilogue_prepared,triton_prepared_op,cublas_xw,torch_compile
S=2048x2048x5504+2048x4096x5504
timeout 200 python benchmarks/race_grids.py --out $R/grid --budget 190 --min-left 30 --no-graph --part rmsnorm_linear:shapes=$S:fp16:$RL --part rmsnorm_linear:shapes=$S:bf16:$RL > $R/grid.log 2>&1; echo "grid rc $? $(( $(date +%s)-T0 ))s"
for f in $(find $R/grid -name 'grid-*.md'); do echo $f; grep -E "^Targets" $f | cut -c1-200; grep -E "^\| [0-9]+x" $f | cut -d'|' -f2-9,12,13,14,15; done
cd $O && tar czf results.tgz r && rm -rf r
