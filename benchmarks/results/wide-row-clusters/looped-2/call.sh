#!/bin/bash
# The persistent cluster kernel (--set looped) at rmsnorm's wide rows
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 400 python wide_row_clusters.py --out $W --family rmsnorm --set looped --dtypes bf16 \
  --shapes 512x65536,2048x131072,8192x65536,512x131072,8192x131072 > $W/rmsnorm.log 2>&1; echo "rmsnorm rc $?"
tail -22 $W/rmsnorm.log; grep -E "left out|failed" $W/rmsnorm.log | head
tar czf $OUT/r.tgz -C $W .
