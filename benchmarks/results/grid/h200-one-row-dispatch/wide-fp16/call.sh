#!/bin/bash
# A third H200: the few gated rows' class extended to 1-8 rows of H 8193-131072 (from shipped/'s races in bf16). kprof
# grid at the grid's points of the classes in fp16, and at the extension's points in bf16; placed races past them
# (both dtypes); the GPU tests of the classes' launches
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
E=1x32768+8x32768+1x131072+8x131072+1x262144+8x262144
S=1x4096+1x6144+1x8192+1x12288+1x14336+1x16384+8x4096+8x6144+8x8192+8x12288+8x14336+8x16384
S=$S+64x4096+64x6144+64x8192+64x12288+64x14336+64x16384+512x16384+$E
timeout 330 python benchmarks/race_grids.py --out $W/grid --budget 320 --min-left 15 --no-graph \
  --part gelu_mul:shapes=$S:fp16 --part silu_mul:shapes=$S:fp16 \
  --part gelu_mul:shapes=$E:bf16 --part silu_mul:shapes=$E:bf16 2>&1 | tail -5
rm -rf $W/grid/*.db.gz $W/grid/traces
cd benchmarks
for fam in gelu_mul silu_mul; do
  timeout 60 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes 8x131072,1x262144,64x32768 --dtypes bf16,fp16 --budget-s 50 > $W/$fam.log 2>&1
done
cd ..
timeout 60 python -m pytest -q -p no:cacheprovider tests/kernels/test_catalog_behaviour.py \
  tests/kernels/test_providers_launch_as_ops.py -k "row_class or gated_ops or silu or gelu" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-70)"; done
grep -h "budget\|WRONG\|Error" $W/*.log | head
