#!/bin/bash
# the EARLY rule as shipped: GPU tests of the stacked kernel, and the probe at three points
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 40 python -m pytest -q -m gpu tests/kernels/test_kasmina_stacked.py -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -1 $W/gpu_tests.txt
cd benchmarks
PYTHONPATH=. timeout 30 python ../benchmarks/results/kasmina-copy/h200-stacked-early/probe.py 1x1000x32,1x4000x32 fp32 10 > $W/probe-fp32.txt 2>&1
echo "rc $?"; grep "^|" $W/probe-fp32.txt
tar czf $OUT/r.tgz -C $W .
