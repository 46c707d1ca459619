#!/bin/bash
# W alone by TMA descriptor, x by cp.async (a decode call's x is new, its descriptor would be made each call), against
# x by descriptor too, in the tiles within 10% of the fastest of tma-3; 1-16 rows, K 2048-8192, N 4608-6144
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 480 python rmsnorm_linear_stream_k.py --out $W --rows 1,4,8,16 --dtypes bf16,fp16 --only tma-w --points 3584x4608,4096x4608,5120x4608,2048x4608,8192x4608,3584x5120,4096x5120,4096x6144,2048x5504,4096x5504,8192x5504 > $W/race.txt 2>&1
echo "race rc $?"; cat $W/race.txt | cut -c1-250 | tail -50
python rmsnorm_linear_stream_k.py --score $W/stream_k.csv > $W/score.txt 2>&1; cat $W/score.txt
tar czf $OUT/r.tgz -C $W .
