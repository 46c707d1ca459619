O=$OUT; R=$O/r; mkdir -p $R/bias-caps
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation --break-system-packages -e . 2>&1 | tail -1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
T0=$(date +%s)
timeout 300 python benchmarks/stream_k_tail.py --out $R/bias-caps --timer cupti --rounds 5 --bias --caps 184,176 --points bf16:8192x8192x5504,fp16:8192x8192x5504,bf16:2048x8192x5504,fp16:2048x8192x5504 > $R/bias-caps/stream_k_tail.txt 2>&1; echo "rc $? $(( $(date +%s)-T0 ))s"
grep -v "Warn\|warn" $R/bias-caps/stream_k_tail.txt | grep -v "^  product STREAM_K=.*HAS_BIAS=False" | tail -60
cd $O && tar czf results.tgz r && rm -rf r
