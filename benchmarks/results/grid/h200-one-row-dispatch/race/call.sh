#!/bin/bash
# An H200: the launches of the dispatch gaps left on the H200 scoreboard, raced at 2 places in memory, 3 rounds.
# gelu_mul and silu_mul at 1-512 rows (the one-row kernel with 4-32 warps among the candidates, through the ops' launch
# path); add_rmsnorm at 1-64 rows of 4096-16384 (triton_one_row's kernel, no cache hints, beside the rows kernel)
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
S=512x16384,384x16384,1x4096,1x8192,1x16384,8x12288,8x16384,64x4096,64x12288,512x2048
for fam in gelu_mul silu_mul; do
  timeout 175 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes $S --dtypes bf16,fp16 --budget-s 150 > $W/$fam.log 2>&1
done
timeout 150 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 64x6144,64x7168,64x8192,64x4096,64x16384,8x8192,1x8192 --dtypes bf16,fp16 --budget-s 125 \
  > $W/add_rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error" $W/*.log | head
