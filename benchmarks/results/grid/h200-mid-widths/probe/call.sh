#!/bin/bash
# A fourth H200: the 7168-column band at 2048-8192 rows (shipped at this commit) raced, 5120 columns at 1536-4096 rows
# (past its band), 640x8192 again; then rmsnorm's configs (one-block and two-pass, --two-pass) at 256-2048 rows of
# 3072-8192 columns, the rows where add_rmsnorm's configs before ran up to 1.19x the fastest.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 40 python -m pytest -q -p no:cacheprovider tests/kernels/add_rmsnorm/test_split.py -k "mid_width" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd benchmarks
timeout 150 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 2048x7168,3072x7168,8192x7168,1536x5120,2048x5120,3072x5120,4096x5120,640x8192 \
  --dtypes fp16,bf16 --budget-s 140 > $W/add_rmsnorm.log 2>&1
timeout 260 python rmsnorm_placed_race.py --out $W/rmsnorm --two-pass --placements 2 --rounds 3 \
  --shapes 256x3072,256x4096,256x5120,256x8192,1024x3072,1024x4096,1024x5120,1024x8192,2048x4096,2048x5120,2048x8192,768x8192 \
  --dtypes fp16,bf16 --budget-s 245 > $W/rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
