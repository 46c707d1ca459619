#!/bin/bash
# A third H200, the width rules shipped: the GPU tests of the rules; the race again inside and at the edges of the
# bands (rows not raced before) and at points raced before; kprof grid at the grid points the rules changed.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 70 python -m pytest -q -p no:cacheprovider tests/kernels/add_rmsnorm/test_split.py \
  -k "mid_width or one_row or hints or compiled_in or mid_row" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd benchmarks
timeout 250 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 896x3072,640x4096,896x4096,640x5120,896x5120,896x6144,2048x7168,4096x7168,640x8192,896x8192,3072x8192,3072x6144,2048x5120,256x5120,1024x3072,1024x8192,2048x6144,8192x8192 \
  --dtypes fp16,bf16 --budget-s 235 > $W/add_rmsnorm.log 2>&1
cd ..
timeout 200 python benchmarks/race_grids.py --out $W/grid --budget 190 --min-left 10 --no-graph \
  --part add_rmsnorm:shapes=2048x6144+2048x8192+8192x6144+8192x8192:bf16 \
  --part add_rmsnorm:shapes=2048x6144+2048x8192+8192x6144+8192x8192:fp16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-90)"; done
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
