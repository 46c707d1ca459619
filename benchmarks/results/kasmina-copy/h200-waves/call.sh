#!/bin/bash
# kasmina's TMA kernel: its time against whole waves of seeds, and on a grid whose programs take equal runs of tiles (probe.py)
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
P=../benchmarks/results/kasmina-copy/h200-waves/probe.py
cd benchmarks
PYTHONPATH=. timeout 200 python $P waves 512x924x64,512x1000x64,512x1056x64,512x1188x64,512x1000x32,512x1320x32,512x1000x128,512x1056x128 bf16 10 > $W/waves.txt 2>&1
echo "waves rc $?"
PYTHONPATH=. timeout 330 python $P flat 512x1000x64,512x1000x32,256x1000x64,512x1000x128,512x4000x64,512x4000x128 bf16 10 2,4,8,10,16 > $W/flat.txt 2>&1
echo "flat rc $?"
cat $W/waves.txt $W/flat.txt | grep "^|"; grep -ih "error\|Traceback" $W/*.txt | head -5
tar czf $OUT/r.tgz -C $W .
