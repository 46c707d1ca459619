#!/bin/bash
# rmsnorm's mid bands as changed after the confirming race (3073-4096 columns at 1057-1791 rows: one row in 2048-element
# chunks, the width at run time; 1024-1056 rows of 5120-6144 two rows in 2048-element chunks; 7168 joins 8192's band):
# GPU tests; the race where they changed; kprof grid at the two grid points the bands changed not yet run. Then
# add_rmsnorm's configs at 1280-3584 rows of 3072 and 4096 columns, rows its width rules leave (not raced before).
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 60 python -m pytest -q -p no:cacheprovider tests/kernels/rmsnorm/test_versions.py -k "mid_band or h200" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd benchmarks
timeout 160 python rmsnorm_placed_race.py --out $W/rmsnorm --two-pass --placements 2 --rounds 3 \
  --shapes 1152x4096,1280x4096,1536x4096,1664x4096,1280x3584,1536x3584,1024x5120,1056x6144,1280x7168,1792x7168,2048x7168,2048x5120,2048x6144 \
  --dtypes fp16,bf16 --budget-s 145 > $W/rmsnorm.log 2>&1
cd ..
timeout 125 python benchmarks/race_grids.py --out $W/grid --budget 115 --min-left 10 --no-graph \
  --part rmsnorm:shapes=2048x5120+2048x6144:bf16 --part rmsnorm:shapes=2048x5120+2048x6144:fp16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd benchmarks
timeout 215 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 1280x3072,1536x3072,1792x3072,2560x3072,3584x3072,1280x4096,1536x4096,1792x4096,2560x4096,3584x4096,1280x5120,1536x8192 \
  --dtypes fp16,bf16 --budget-s 195 > $W/add_rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-90)"; done
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
