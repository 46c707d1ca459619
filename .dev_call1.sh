source scripts/_bootstrap.sh; set +e +u +o pipefail; export KPROF_GIT_COMMIT=$(cat .dev_commit) KPROF_GIT_DIRTY=0 PYTHONUNBUFFERED=1
mkdir -p $OUT/x
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $OUT/x/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/x/device.txt
cd benchmarks
python3 swiglu_tma.py --out $OUT/x --decode --only-two-accumulators --rounds 5 \
  --shapes 1x2048x5504,1x2056x5512,16x2048x5504,16x2056x5512,16x4096x11008,16x4104x11000 2>&1 | tee $OUT/x/race.log | tail -120
cd $OUT && tar czf all.tgz x && rm -rf x
