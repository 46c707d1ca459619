#!/bin/bash
# add_rmsnorm's width rules at 1025-4096 rows of 3072 and 4096 columns shipped: their GPU tests; the race at rows inside
# the bands not raced before and at their edges; kprof grid at the grid point they changed (2048x3072).
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 90 python -m pytest -q -p no:cacheprovider tests/kernels/add_rmsnorm/test_split.py -k "mid_width" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd benchmarks
timeout 270 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 1152x3072,1408x3072,1600x3072,1700x3072,2112x3072,2240x3072,3072x3072,4096x3072,1152x4096,1400x4096,2112x4096,2240x4096,3072x4096,4096x4096 \
  --dtypes fp16,bf16 --budget-s 250 > $W/add_rmsnorm.log 2>&1
cd ..
timeout 80 python benchmarks/race_grids.py --out $W/grid --budget 70 --min-left 10 --no-graph \
  --part add_rmsnorm:shapes=2048x3072:bf16 --part add_rmsnorm:shapes=2048x3072:fp16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-90)"; done
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
