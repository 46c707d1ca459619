#!/bin/bash
# A second H200: add_rmsnorm's configs (the first race's set) between and beyond the first race's rows, to draw the
# bands: 320-1536 rows of 3072-8192 columns, and triton_one_row's class (2048-8192 rows of 6144-16384) for its warps.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 560 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 384x3072,384x4096,384x5120,384x8192,768x3072,768x4096,768x5120,768x8192,1536x3072,1536x4096,1536x5120,1536x6144,1536x8192,320x4096,320x5120,320x8192,1024x6144,4096x6144,4096x8192,2048x16384,8192x6144,8192x8192,4096x16384,2048x3072 \
  --dtypes fp16,bf16 --budget-s 540 > $W/add_rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
