#!/bin/bash
# A fifth H200: the whole-row classes' launch through the tile kernel against triton_one_row (the same block and warps
# through the one-row kernel), which ran 1.024-1.053x faster for gelu_mul at 384-512 rows of H 8192 in kprof grid
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
S=384x16384,512x16384,512x4096,1024x8192,1024x12288,512x12288
for fam in gelu_mul silu_mul; do
  timeout 110 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes $S --dtypes bf16,fp16 --budget-s 90 > $W/$fam.log 2>&1
done
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error" $W/*.log | head
