#!/bin/bash
# A fourth H200, the 6144-column rules of add_rmsnorm shipped: the GPU tests; the placed race again at 384-768 rows of
# 6144 (op = the rules) and at 384-768 rows of 7168 (the rules not taken there: does their pattern hold?); kprof grid at
# 512x6144 in both dtypes
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 60 python -m pytest -q -p no:cacheprovider tests/kernels/add_rmsnorm/test_split.py tests/kernels/test_catalog_behaviour.py \
  -k "6144 or hints or one_wave or compiled_in" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
timeout 90 python benchmarks/race_grids.py --out $W/grid --budget 80 --min-left 10 --no-graph \
  --part add_rmsnorm:shapes=512x6144:bf16 --part add_rmsnorm:shapes=512x6144:fp16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd benchmarks
timeout 200 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 384x6144,512x6144,768x6144,384x7168,512x7168,768x7168 --dtypes fp16,bf16 \
  --budget-s 185 > $W/add_rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-90)"; done
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
