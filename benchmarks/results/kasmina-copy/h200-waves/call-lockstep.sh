#!/bin/bash
# seeds in lockstep: a persistent grid walking seeds p, p + G, ... (lockstep.py)
W=/tmp/w; rm -rf $W; mkdir -p $W/lockstep
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/lockstep/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/lockstep/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/lockstep/
cd benchmarks
PYTHONPATH=. timeout 400 python ../benchmarks/results/kasmina-copy/h200-waves/lockstep.py 512x4000x64,512x4000x128,512x4000x32,64x4000x64,512x1000x64,512x1000x128,512x2000x64 10 2,4,8,16 > $W/lockstep/lockstep.txt 2>&1
echo "lockstep rc $?"; grep "^|" $W/lockstep/lockstep.txt; grep -ih "error\|Traceback" $W/lockstep/*.txt | head -5
tar czf $OUT/r.tgz -C $W .
