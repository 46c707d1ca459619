#!/bin/bash
# fp32 at 32 channels, one row, again (probe.py), 20 rounds
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
PYTHONPATH=. timeout 70 python ../benchmarks/results/kasmina-copy/h200-stacked-early/probe.py 1x990x32,1x1000x32,1x1500x32,1x4000x32 fp32 20 > $W/probe-fp32.txt 2>&1
echo "rc $?"; grep "^|" $W/probe-fp32.txt
tar czf $OUT/r.tgz -C $W .
