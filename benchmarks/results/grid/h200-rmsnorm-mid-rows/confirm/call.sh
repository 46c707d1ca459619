#!/bin/bash
# rmsnorm's mid bands at 1024-4096 rows of 3072-8192 columns shipped: their GPU tests; the race at rows inside the bands
# not raced before and at their edges, 3584 columns (inside the bands' column ranges, not raced), 6144 at 1024-2048
# rows and 7168 (left out of the bands); kprof grid at two of the grid points the bands changed.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 60 python -m pytest -q -p no:cacheprovider tests/kernels/rmsnorm/test_versions.py -k "mid_band or h200" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd benchmarks
timeout 330 python rmsnorm_placed_race.py --out $W/rmsnorm --two-pass --placements 2 --rounds 3 \
  --shapes 1152x3072,1920x3072,2112x3072,2240x3072,3072x3072,1280x3584,2048x3584,3072x3584,1152x4096,1664x4096,1920x4096,2240x4096,1024x5120,1664x5120,2112x5120,2240x5120,4000x5120,1024x6144,1792x6144,2048x6144,1152x8192,1664x8192,2048x8192,1536x7168 \
  --dtypes fp16,bf16 --budget-s 310 > $W/rmsnorm.log 2>&1
cd ..
timeout 150 python benchmarks/race_grids.py --out $W/grid --budget 140 --min-left 10 --no-graph \
  --part rmsnorm:shapes=2048x3072+2048x8192:bf16 --part rmsnorm:shapes=2048x3072+2048x8192:fp16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-90)"; done
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
