#!/bin/bash
# several seeds a program, one TMA box, rows split (multi.py)
W=/tmp/w; rm -rf $W; mkdir -p $W/multi
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/multi/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/multi/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/multi/
cd benchmarks
PYTHONPATH=. timeout 450 python ../benchmarks/results/kasmina-copy/h200-waves/multi.py 512x4000x64,512x2000x64,512x1000x64,512x4000x32,512x1000x32,512x4000x128,64x4000x64 10 > $W/multi/multi.txt 2>&1
echo "multi rc $?"; grep "^|" $W/multi/multi.txt | awk -F'|' '{n[$2]++; if (n[$2] <= 6 || $3 ~ /shipped|copy/) print}'; grep -ih "Traceback" -A3 $W/multi/*.txt | head -8
tar czf $OUT/r.tgz -C $W .
