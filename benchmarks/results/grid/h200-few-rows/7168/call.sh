#!/bin/bash
# A fifth H200: add_rmsnorm's 7168-column rules (256-511 rows the rows kernel with 8 warps, 640-896 one 8192-column chunk
# of 4 warps with cache hints) raced at 256-1024 rows in both dtypes, their edges inside and out; the GPU tests
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 50 python -m pytest -q -p no:cacheprovider tests/kernels/add_rmsnorm/test_split.py -k "6144 or hints or mid_width" \
  > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd benchmarks
timeout 185 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 384x7168,768x7168,256x7168,512x7168,640x7168,896x7168,1024x7168 --dtypes fp16,bf16 \
  --budget-s 165 > $W/add_rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
