#!/bin/bash
# A second H200: the mid-size configs again, with the rules' edges (rows and widths around the first race's points),
# and silu_mul's / gelu_mul's tiles with H compiled in (COLS) beside Liger's kernel
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 200 python rmsnorm_placed_race.py --out $W/rmsnorm --two-pass --const-only --placements 2 --rounds 3 \
  --shapes 8192x6144,8192x8192,8192x5120,4096x6144,4096x8192,12288x6144,12288x8192,1024x16384,4096x16384,2048x16384 \
  --dtypes bf16,fp16 --budget-s 180 > $W/rmsnorm.log 2>&1
timeout 100 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 512x6144,512x7168,768x7168,1000x8192,512x5120 --dtypes bf16,fp16 --budget-s 80 > $W/add_rmsnorm.log 2>&1
timeout 150 python gated_placed_race.py --out $W/gated --placements 2 --rounds 3 \
  --shapes 512x12288,512x14336,2048x8192,1024x12288,256x14336 --dtypes bf16,fp16 --budget-s 130 > $W/gated.log 2>&1
for f in rmsnorm add_rmsnorm gated; do echo "== $f"; grep -v "_warn_once\|UserWarning" $W/$f.log | grep -A4 "^==\|WRONG\|Error\|budget" | grep -v "^--\|mean over" | cut -c1-90; done
tar czf $OUT/r.tgz -C $W .
