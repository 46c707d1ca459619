#!/bin/bash
# An H200: the dispatch as changed after race/ (few gated rows: H-compiled 1024-column tiles; gated 384-528 rows of H
# 7169-8192: the one-row kernel; add_rmsnorm 16-64 bf16 rows of 4097-8192: triton_one_row's kernel). kprof grid at the
# grid's points of those classes in bf16; placed races at their edges and past them; the GPU tests of what changed
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
S=1x4096+1x6144+1x8192+1x12288+1x14336+1x16384+8x4096+8x6144+8x8192+8x12288+8x14336+8x16384
S=$S+64x4096+64x6144+64x8192+64x12288+64x14336+64x16384+512x16384
timeout 290 python benchmarks/race_grids.py --out $W/grid --budget 280 --min-left 15 --no-graph \
  --part gelu_mul:shapes=$S:bf16 --part silu_mul:shapes=$S:bf16 \
  --part add_rmsnorm:shapes=64x6144+64x7168+64x8192:bf16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd benchmarks
for fam in gelu_mul silu_mul; do
  timeout 50 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes 32x8192,1x32768,8x32768,1x131072,8x131072 --dtypes bf16 --budget-s 40 > $W/$fam.log 2>&1
done
timeout 40 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 16x6144,32x8192 --dtypes bf16,fp16 --budget-s 30 > $W/add_rmsnorm.log 2>&1
cd ..
timeout 120 python -m pytest -q -p no:cacheprovider tests/kernels/test_catalog_behaviour.py \
  tests/kernels/test_providers_launch_as_ops.py tests/kernels/add_rmsnorm/test_split.py \
  -k "gated or h200 or row_class or one_row or silu or gelu or plan" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-70)"; done
grep -h "budget\|WRONG\|Error" $W/*.log | head
