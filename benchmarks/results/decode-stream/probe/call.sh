#!/bin/bash
# The decode weight stream probe (benchmarks/decode_stream.py): the read floor, cuBLAS, the shipped split-K kernel on
# the fold and TMA-streamed probe kernels (kn and nk folds) at four decode points, bf16, on one H200; the probe kernels
# compiled first in 8 processes.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
S=16x3584x4608,1x3584x4608,16x4096x6144,16x2048x5504
for i in 0 1 2 3 4 5 6 7; do timeout 200 python decode_stream.py --out $W --shapes $S --compile-only $i/8 > $W/compile-$i.txt 2>&1 & done; wait
timeout 300 python decode_stream.py --out $W --shapes $S --rounds 10 > $W/probe.txt 2>&1
gzip $W/decode_stream.csv
cd $W && tar czf $OUT/r.tgz .
tail -c 6000 $W/probe.txt; tail -3 $W/compile-0.txt
