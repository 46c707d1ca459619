#!/bin/bash
# kasmina's TMA kernel over adjacent seeds a program (SEEDS 2, 4) against the table's tile, at the TMA points
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
B=512x1000x32,512x4000x32,256x1000x32,64x4000x32,512x1000x64,512x4000x64,64x4000x64
PYTHONPATH=. timeout 300 python results/kasmina-copy/h200-pairs/probe.py $B bf16 10 > $W/probe-bf16.txt 2>&1
echo "bf16 rc $?"
PYTHONPATH=. timeout 120 python results/kasmina-copy/h200-pairs/probe.py 512x1000x32,512x4000x32,512x1000x64 fp16 10 \
  > $W/probe-fp16.txt 2>&1
echo "fp16 rc $?"; grep -h "^==\|^| [0-9s]\|left out" $W/probe-*.txt | cut -c1-150; grep -h Traceback -A8 $W/*.txt | head -20
tar czf $OUT/r.tgz -C $W .
