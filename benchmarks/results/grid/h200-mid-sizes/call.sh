#!/bin/bash
# The grid's mid-size 16-bit points that kprof grid left uncertain, leaning to a loss, on an H200: every config of the
# kernels there raced at 2 places in memory against torch.compile (and Liger where it has the op)
W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 250 python rmsnorm_placed_race.py --out $W/rmsnorm --two-pass --const-only --placements 2 --rounds 3 \
  --shapes 8192x8192,2048x7168,2048x8192,2048x16384,2048x6144,8192x6144 --dtypes bf16,fp16 --budget-s 215 \
  > $W/rmsnorm.log 2>&1
timeout 110 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 512x7168,512x6144,512x8192 --dtypes bf16,fp16 --budget-s 85 > $W/add_rmsnorm.log 2>&1
timeout 110 python gated_placed_race.py --out $W/gated --placements 2 --rounds 3 --families silu_mul \
  --shapes 512x12288,512x14336,2048x8192,2048x6144 --dtypes bf16,fp16 --budget-s 85 > $W/gated.log 2>&1
for f in rmsnorm add_rmsnorm gated; do echo "== $f"; grep -A5 "^==\|WRONG\|Error\|budget" $W/$f.log | cut -c1-110; done
