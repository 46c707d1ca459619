O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
RL=triton_tuned,triton_rstd_epilogue_prepared,triton_prepared_op,cublas_xw,torch_compile
S=8192x8192x5504+2048x8192x5504
timeout 200 python benchmarks/race_grids.py --out $R/grid --budget 185 --min-left 30 --no-graph --part rmsnorm_linear:shapes=$S:fp16:$RL --part rmsnorm_linear:shapes=$S:bf16:$RL > $R/grid.log 2>&1; echo "grid rc $? $(( $(date +%s)-T0 ))s"
for f in $(find $R/grid -name 'grid-*.md'); do echo $f; grep -E "^Targets" $f | cut -c1-300; grep -E "^\| [0-9]+x" $f | cut -d'|' -f2-9,12,13,14,15; done
P=bf16:8192x8192x5504,fp16:8192x8192x5504
mkdir -p $R/cupti
timeout 100 python benchmarks/stream_k_tail.py --out $R/cupti --points $P --rounds 3 --timer cupti > $R/cupti/stream_k_tail.txt 2>&1; echo "cupti rc $? $(( $(date +%s)-T0 ))s"
grep -A4 "^| dtype" $R/cupti/stream_k_tail.txt
cd $O && tar czf results.tgz r && rm -rf r
