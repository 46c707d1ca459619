#!/bin/bash
# A second H200: where 4096-column tiles of 16 warps (H compiled in) lead the few-rows class (2048-column tiles of 16
# warps) at H = 16384: 20-48 rows, both families, bf16 and fp16; 32 rows at H = 10240 and 12288. Then add_rmsnorm at
# 384-768 rows of 6144 (torch.compile 1.037x ahead at 512x6144 fp16 in an earlier race), with Inductor's generated
# kernels kept (its cache directory, the .py files)
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor
cd benchmarks
B=20x32768,24x32768,28x32768,32x32768,40x32768,48x32768,32x24576,32x20480
for fam in silu_mul gelu_mul; do
  timeout 150 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes $B --dtypes bf16,fp16 --budget-s 135 > $W/$fam.log 2>&1
done
timeout 170 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 512x6144,384x6144,768x6144 --dtypes fp16,bf16 --budget-s 150 > $W/add_rmsnorm.log 2>&1
mkdir -p $W/inductor && find /tmp/inductor -name "*.py" -size -200k -exec grep -l "add\|rsqrt" {} + | head -40 \
  | xargs -I{} cp {} $W/inductor/
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log; ls $W/inductor | wc -l
