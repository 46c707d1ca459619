O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
sed -i 's/^STREAM_K_MAX_ROWS = 2048$/STREAM_K_MAX_ROWS = 8192/' kernels/rmsnorm_linear/rstd_epilogue.py; grep -n "^STREAM_K_MAX_ROWS" kernels/rmsnorm_linear/rstd_epilogue.py
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
timeout 150 python benchmarks/race_grids.py --out $R/grid --budget 140 --min-left 20 --no-graph --part rmsnorm_linear:shapes=8192x8192x5504:bf16:triton_rstd_epilogue,triton_rstd_epilogue_prepared,cublas_xw > $R/grid.log 2>&1; echo "grid rc $? $(( $(date +%s)-T0 ))s"
zcat $R/grid/*.db.gz > /tmp/g.db; python - <<PY
import sqlite3
c=sqlite3.connect("/tmp/g.db")
for row in c.execute("select provider, round(gpu_time_us,2), round(host_time_us,1), substr(cold_kernels,1,150) from cases order by gpu_time_us"): print(*row)
PY
cd $O && tar czf results.tgz r && rm -rf r
