O=$OUT; R=$O/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
RL=triton_rstd_epilogue_prepared,triton_prepared_op,cublas_xw
S=8192x8192x5504+2048x8192x5504
timeout 120 python benchmarks/race_grids.py --out $R/stream-k-on --budget 110 --min-left 20 --no-graph --part rmsnorm_linear:shapes=$S:bf16:$RL > $R/on.log 2>&1; echo "on rc $? $(( $(date +%s)-T0 ))s"
sed -i 's/^TMA_STREAM_K = True$/TMA_STREAM_K = False/' kernels/rmsnorm_linear/rstd_epilogue.py; grep -n "^TMA_STREAM_K" kernels/rmsnorm_linear/rstd_epilogue.py
timeout 120 python benchmarks/race_grids.py --out $R/stream-k-off --budget 110 --min-left 20 --no-graph --part rmsnorm_linear:shapes=$S:bf16:$RL > $R/off.log 2>&1; echo "off rc $? $(( $(date +%s)-T0 ))s"
sed -i 's/^TMA_STREAM_K = False$/TMA_STREAM_K = True/' kernels/rmsnorm_linear/rstd_epilogue.py
for d in on off; do zcat $R/stream-k-$d/*.db.gz > /tmp/$d.db; echo "== stream-K $d"; python - <<PY
import sqlite3
c=sqlite3.connect("/tmp/$d.db")
for row in c.execute("select shape, provider, round(gpu_time_us,2), substr(cold_kernels,1,120) from cases order by shape, gpu_time_us"): print(*row)
PY
done
cd $O && tar czf results.tgz r && rm -rf r
