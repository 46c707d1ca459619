#!/bin/bash
# An H200: rmsnorm at 1, 8 and 64 16-bit rows of 2048-16384 columns, every one-block and two-pass config at 2 places
# in memory beside triton_tuned, triton_one_row, torch.compile and Liger (rmsnorm_placed_race.py --two-pass); then
# the gated families' tile configs each also through a 1-D row kernel (no row mask, no mask at all where H is compiled
# in and a multiple of the block: gated_placed_race.py --rows-1d)
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
S=""; for r in 1 8 64; do for n in 2048 3072 4096 6144 7168 8192 16384; do S="$S,${r}x$n"; done; done
timeout 330 python rmsnorm_placed_race.py --out $W/rmsnorm --two-pass --placements 2 --rounds 3 \
  --shapes ${S#,} --dtypes bf16,fp16 --budget-s 300 > $W/rmsnorm.log 2>&1
G=1x8192,8x32768,64x16384,64x32768,256x8192,768x12288,32x32768,8x131072
timeout 110 python gated_placed_race.py --out $W/silu_mul --rows-1d --placements 2 --rounds 3 --families silu_mul \
  --shapes $G --dtypes bf16 --budget-s 95 > $W/silu_mul.log 2>&1
timeout 110 python gated_placed_race.py --out $W/gelu_mul --rows-1d --placements 2 --rounds 3 --families gelu_mul \
  --shapes $G --dtypes fp16 --budget-s 95 > $W/gelu_mul.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
