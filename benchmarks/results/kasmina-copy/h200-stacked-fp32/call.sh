#!/bin/bash
# the stacked kernel's fp32 table as a rule against the route before it (branch_free's), and the GPU tests
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 200 python -m pytest -q -m gpu tests/kernels -k "kasmina or catalog" -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -3 $W/gpu_tests.txt
S=1x990x32,1x1000x32,1x2000x32,1x4000x32,1x8000x32,1x1000x48,1x4000x48,1x1000x64,1x2000x64,1x3000x64,1x3960x64,1x4000x64,1x8000x64,1x1000x128,1x250x64
cd benchmarks
timeout 300 python kasmina_copy.py --out $W/race --shapes $S --dtypes fp32 --tiles 0x0 --no-floors --stacked --stacked-tiles 16x4,64x4,64x8 --rounds 10 > $W/race.txt 2>&1
echo "race rc $?"
grep "copy" $W/race.txt | sed -e 's/no telemetry.*shipped/shipped/' | cut -c1-150
tar czf $OUT/r.tgz -C $W .
