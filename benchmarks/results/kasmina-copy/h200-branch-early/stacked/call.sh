#!/bin/bash
# the stacked kernel's EARLY on and off where the grid of h200-branch-early read slower than the table's grid before
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
PYTHONPATH=. timeout 150 python results/kasmina-copy/h200-branch-early/stacked_early.py 8x4000x32,8x4000x64,8x4000x128,5x4000x64,6x4000x32,8x6000x32,8x8000x64,4x4000x64,2x4000x32,3x2000x64 bf16,fp16 12 > $W/stacked-16.txt 2>&1
echo "16-bit rc $?"
PYTHONPATH=. timeout 100 python results/kasmina-copy/h200-branch-early/stacked_early.py 1x2000x64,1x2970x64,1x3000x64,1x4000x64,1x8000x64,1x4000x48,1x4000x32,1x1000x64 fp32 12 > $W/stacked-fp32.txt 2>&1
echo "fp32 rc $?"; grep -h "^| [bf]" $W/stacked-*.txt; grep -h Traceback -A8 $W/*.txt | head
tar czf $OUT/r.tgz -C $W .
