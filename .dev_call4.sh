source scripts/_bootstrap.sh; set +e +u +o pipefail; export KPROF_GIT_COMMIT=$(cat .dev_commit) KPROF_GIT_DIRTY=0 PYTHONUNBUFFERED=1
mkdir -p $OUT/x
nvidia-smi --query-gpu=name,serial,driver_version --format=csv > $OUT/x/device.txt
timeout 520 python3 -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tail -25 | tee $OUT/x/gpu_tests.txt
cd $OUT && tar czf all.tgz x && rm -rf x
