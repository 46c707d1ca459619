#!/bin/bash
# A fifth H200, rmsnorm's mid bands and add_rmsnorm's 5120 band at 2048-4096 rows shipped: their GPU tests; the races
# at rows inside the bands (most not raced before) and at their raced points; kprof grid at rmsnorm's grid point there.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 60 python -m pytest -q -p no:cacheprovider tests/kernels/rmsnorm/test_versions.py tests/kernels/add_rmsnorm/test_split.py \
  -k "mid_band or mid_width" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd benchmarks
timeout 60 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 2048x5120,3072x5120,4096x5120 --dtypes fp16,bf16 --budget-s 55 > $W/add_rmsnorm.log 2>&1
timeout 150 python rmsnorm_placed_race.py --out $W/rmsnorm --two-pass --placements 2 --rounds 3 \
  --shapes 768x8192,896x8192,1024x3072,1280x4096,1536x3072,2048x4096,3072x4096,3072x5120 \
  --dtypes fp16,bf16 --budget-s 140 > $W/rmsnorm.log 2>&1
cd ..
timeout 100 python benchmarks/race_grids.py --out $W/grid --budget 95 --min-left 10 --no-graph \
  --part rmsnorm:shapes=2048x4096:bf16 --part rmsnorm:shapes=2048x4096:fp16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-90)"; done
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
