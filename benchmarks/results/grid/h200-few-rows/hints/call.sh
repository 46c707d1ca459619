#!/bin/bash
# A third H200: add_rmsnorm's chunked kernel with Inductor's cache hints and 8192-column chunks (torch.compile's kernel
# at 512x6144: one 8192-column chunk, 16 warps, h read back, evict_first / evict_last) at 256-2048 rows of 4096-8192
# columns, both dtypes; the gated one-wave tiles (shipped at this commit) raced again; the GPU tests of both
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 60 python -m pytest -q -p no:cacheprovider tests/kernels/test_catalog_behaviour.py tests/kernels/add_rmsnorm/test_split.py \
  -k "one_wave or hints or row_class or compiled_in" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd benchmarks
timeout 260 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 512x6144,384x6144,768x6144,1024x6144,256x6144,512x8192,512x4096,2048x6144 --dtypes fp16,bf16 \
  --budget-s 235 > $W/add_rmsnorm.log 2>&1
for fam in silu_mul gelu_mul; do
  timeout 45 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes 24x32768,32x32768,32x24576 --dtypes bf16 --budget-s 35 > $W/$fam.log 2>&1
done
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
