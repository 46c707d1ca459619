#!/bin/bash
# rmsnorm at 1792-2112 rows of 6144 columns: the 1057-2112 band's config against every one-block config (the config the
# grid point 2048x6144 took before the band, one row of 4 warps, among them) and the two-pass configs compiled in
# (--ragged); kprof grid at 2048x6144 again, where the fp16 verdict went from a win (0.932x) to a tie (0.980x) between
# two H200s.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 140 python rmsnorm_placed_race.py --out $W/rmsnorm --ragged --placements 2 --rounds 3 \
  --shapes 2048x6144,1792x6144,2112x6144 --dtypes fp16,bf16 --budget-s 110 > $W/rmsnorm.log 2>&1
cd ..
timeout 60 python benchmarks/race_grids.py --out $W/grid --budget 55 --min-left 10 --no-graph \
  --part rmsnorm:shapes=2048x6144:fp16 --part rmsnorm:shapes=2048x6144:bf16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-90)"; done
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
