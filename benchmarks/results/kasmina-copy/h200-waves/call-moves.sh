#!/bin/bash
# movement only, K adjacent seeds a program (moves.py)
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device-moves.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device-moves.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/commit-moves.txt
cd benchmarks
PYTHONPATH=. timeout 500 python ../benchmarks/results/kasmina-copy/h200-waves/moves.py 512x1000x64,512x4000x64,512x1000x32,256x1000x64,64x4000x64,512x1000x128,512x4000x128 8 > $W/moves.txt 2>&1
echo "moves rc $?"
grep "^|" $W/moves.txt | awk -F'|' '$3 ~ /copy/ {print} {n[$2]++; if (n[$2] <= 4) print}' ; grep -ih "error\|Traceback" $W/*.txt | head -5
tar czf $OUT/r.tgz -C $W .
