O=$OUT; R=$O/r; mkdir -p $R/caps
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
timeout 170 python -m pytest -q -m gpu tests/kernels/rmsnorm_linear tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_routes.py tests/kernels/test_catalog_behaviour.py > $R/gpu-tests.txt 2>&1; echo "tests rc $? $(( $(date +%s)-T0 ))s"; tail -2 $R/gpu-tests.txt
T0=$(date +%s)
timeout 200 python benchmarks/stream_k_tail.py --out $R/caps --timer cupti --rounds 5 --caps 176,168 --points bf16:8192x8192x5504,fp16:8192x8192x5504,bf16:8192x4096x5504 > $R/caps/stream_k_tail.txt 2>&1 || true; echo "caps $(( $(date +%s)-T0 ))s"
tail -25 $R/caps/stream_k_tail.txt
sed -i 's/^STREAM_K_MAX_ROWS = 2048$/STREAM_K_MAX_ROWS = 8192/' kernels/rmsnorm_linear/rstd_epilogue.py; grep -n "^STREAM_K_MAX_ROWS" kernels/rmsnorm_linear/rstd_epilogue.py
T0=$(date +%s)
timeout 150 python benchmarks/race_grids.py --out $R/grid --budget 140 --min-left 20 --no-graph --part rmsnorm_linear:shapes=8192x8192x5504:bf16:triton_rstd_epilogue_prepared,cublas_xw > $R/grid.log 2>&1; echo "grid rc $? $(( $(date +%s)-T0 ))s"
zcat $R/grid/*.db.gz > /tmp/g.db 2>/dev/null || cp $R/grid/*.db /tmp/g.db; python - <<PY
import sqlite3
c=sqlite3.connect("/tmp/g.db")
for row in c.execute("select provider, round(gpu_time_us,2), round(host_time_us,1), substr(cold_kernels,1,200) from cases order by gpu_time_us"): print(*row)
PY
B=$(python -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends','nvidia','bin'))")
for f in $(find ~/.triton/cache -name "*.cubin" | xargs grep -l "_row_rstd_kernel\|_tma_product_kernel" 2>/dev/null); do echo "== $f"; $B/cuobjdump -res-usage $f 2>&1 | grep -A1 "Function" ; done > $R/cubins.txt 2>&1; cat $R/cubins.txt | head -40
cd $O && tar czf results.tgz r && rm -rf r
