#!/bin/bash
# the TMA kernel with its first tile loaded before the seed's state (early.py)
W=/tmp/w; rm -rf $W; mkdir -p $W/early
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/early/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/early/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/early/
cd benchmarks
PYTHONPATH=. timeout 300 python ../benchmarks/results/kasmina-copy/h200-waves/early.py 512x1000x64,256x1000x64,512x1000x32,512x4000x32,512x4000x64,512x1000x128,512x4000x128,64x4000x64,64x4000x32 bf16,fp16 12 > $W/early/early.txt 2>&1
echo "early rc $?"; grep "^|" $W/early/early.txt; grep -h "Traceback" -A5 $W/early/*.txt | head -8
tar czf $OUT/r.tgz -C $W .
