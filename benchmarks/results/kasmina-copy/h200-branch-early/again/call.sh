#!/bin/bash
# the classes where EARLY 1 or 2 was faster in ../call.sh, raced again with their edges (another call, maybe another H200)
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 60 python -m pytest -q tests/kernels/test_kasmina_stats.py -k before_the_state -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -1 $W/gpu_tests.txt
cd benchmarks
P="timeout 130 env PYTHONPATH=. python results/kasmina-copy/h200-branch-early/probe.py"
# 16-bit: 65-128 channels under 256 rows (not 128 channels at 64-255 rows with a program per seed); 2-15 rows
$P 1x1000x100,8x100x128,8x1000x128,16x1000x128,32x1000x128,48x333x100,32x333x100,128x333x100,8x1000x96,64x100x128,2x100x32,4x100x64,8x100x32,8x100x64,15x100x64,8x1000x32,4x1000x32,8x2000x32,8x1000x64 bf16 12 > $W/probe-bf16.txt 2>&1
echo "bf16 rc $?"
$P 8x1000x128,48x333x100,8x100x32,8x1000x32 fp16 12 > $W/probe-fp16.txt 2>&1
echo "fp16 rc $?"
# fp32: 65-128 channels (2-31 and 32-255 rows, 128 channels), 33-64 channels from 64 rows (by state), 100 channels
$P 4x1000x128,8x1000x128,16x1000x128,8x4000x128,32x1000x128,64x1000x128,128x1000x128,256x1000x64,512x1000x64,512x4000x64,1024x1000x64,512x250x64,128x1000x64,16x333x100,48x333x100,128x333x100,32x1000x100 fp32 10 > $W/probe-fp32.txt 2>&1
echo "fp32 rc $?"; grep -h "^| [bf]" $W/probe-*.txt | cut -d'|' -f2,3,5-10; grep -h Traceback -A8 $W/*.txt | head -20
tar czf $OUT/r.tgz -C $W .
