#!/bin/bash
# TMA descriptors: the split-K kernel's folded loop unsplit, x and W tiles loaded by TMA (one bulk copy a tile),
# every BLOCK_N x BLOCK_K x stages that fits; at 1 and 16 rows, against the same references
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 480 python rmsnorm_linear_stream_k.py --out $W --rows 1,16 --dtypes bf16,fp16 --only tma > $W/race.txt 2>&1
echo "race rc $?"; cat $W/race.txt | cut -c1-250 | tail -50
python rmsnorm_linear_stream_k.py --score $W/stream_k.csv > $W/score.txt 2>&1; cat $W/score.txt
tar czf $OUT/r.tgz -C $W .
