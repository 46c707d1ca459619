source scripts/_bootstrap.sh; set +e +u +o pipefail; export KPROF_GIT_COMMIT=$(cat .dev_commit) KPROF_GIT_DIRTY=0 PYTHONUNBUFFERED=1
mkdir -p $OUT/x
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $OUT/x/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/x/device.txt
(cd benchmarks && python3 events_fallback.py --out $OUT/x --rounds 5 2>&1 | grep -v -i warn | tee $OUT/x/run.log | tail -12)
python3 -m pytest -q -m gpu tests/toolkit/test_harness.py tests/toolkit/test_timing.py tests/toolkit/test_launch.py 2>&1 | tail -5 | tee $OUT/x/gpu_tests.txt
cd $OUT && tar czf all.tgz x && rm -rf x
