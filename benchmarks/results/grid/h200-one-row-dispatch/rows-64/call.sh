#!/bin/bash
# A fifth H200: 9-64 gated rows of H 8193-16384 now take 2048-column tiles of 16 warps, H compiled in (from wide-rows/'s
# race at 64x32768). Placed races at 16 and 32 rows (bf16), kprof grid at the grid's 64x32768 in both dtypes, the GPU
# tests of the classes' launches
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 45 python -m pytest -q -p no:cacheprovider tests/kernels/test_catalog_behaviour.py -k "row_class or gated_ops" \
  > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
timeout 80 python benchmarks/race_grids.py --out $W/grid --budget 75 --min-left 10 --no-graph \
  --part gelu_mul:shapes=64x32768:bf16 --part silu_mul:shapes=64x32768:bf16 \
  --part gelu_mul:shapes=64x32768:fp16 --part silu_mul:shapes=64x32768:fp16 2>&1 | tail -5
rm -rf $W/grid/*.db.gz $W/grid/traces
cd benchmarks
for fam in gelu_mul silu_mul; do
  timeout 30 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes 16x32768,32x32768 --dtypes bf16 --budget-s 25 > $W/$fam.log 2>&1
done
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-70)"; done
grep -h "budget\|WRONG\|Error" $W/*.log | head
