#!/bin/bash
# A fifth H200: is silu_mul's kernel body what Liger's kernel is ahead by? The op's launch and Liger's, each with
# silu_mul's body, silu as one division, and Liger's arithmetic (gated_placed_race.py --bodies)
W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 150 python gated_placed_race.py --out $W/bodies --bodies --families silu_mul --placements 2 --rounds 3 \
  --shapes 512x12288,512x14336,1024x12288,2048x8192 --dtypes bf16,fp16 --budget-s 130 > $W/bodies.log 2>&1
grep -v "_warn_once\|UserWarning" $W/bodies.log | grep -A10 "^==" | grep -v "^--\|mean over\|compile's" | cut -c1-80
