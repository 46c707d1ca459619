#!/bin/bash
# One H200: add_rmsnorm's configs (36 a point: the rows kernel, triton_one_row's, the chunked kernel with and without
# the width compiled in and Inductor's cache hints) at 256-1024 rows of 3072-8192 columns and 2048 rows of 4096-8192,
# both 16-bit dtypes, beside triton_tuned, triton_one_row, torch.compile and Liger-Kernel.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 545 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 512x4096,512x5120,512x8192,256x4096,256x5120,256x8192,1024x4096,1024x5120,1024x8192,512x3072,1024x3072,2048x4096,2048x6144,2048x8192,256x3072 \
  --dtypes fp16,bf16 --budget-s 520 > $W/add_rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
