#!/bin/bash
# A third H200: FAST_MEMORY_MID_ROWS shipped. The gated families' GPU tests; kprof grid (every provider, Liger from its
# wheel) at points of each class; every config raced at H that no class was raced at (the rule's other H)
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 120 python -m pytest -q -p no:cacheprovider tests/kernels/test_catalog_behaviour.py tests/kernels/test_ops.py \
  tests/kernels/test_vector_align.py -k "gated or whole or silu or gelu or mid_row" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
S=512x4096+512x8192+512x16384+768x12288+640x12288+1024x8192+1024x4096+256x8192+384x16384
timeout 250 python benchmarks/race_grids.py --out $W/grid --budget 240 --min-left 20 --no-graph \
  --part silu_mul:shapes=$S:bf16 --part silu_mul:shapes=$S:fp16 --part gelu_mul:shapes=$S:bf16 \
  --part gelu_mul:shapes=$S:fp16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
cd benchmarks
mkdir -p $W/other-h
O=512x3072,512x10240,1024x6144,896x11264,384x13312
timeout 75 python gated_placed_race.py --out $W/other-h/silu_mul --placements 2 --rounds 3 --families silu_mul \
  --shapes $O --dtypes bf16 --budget-s 60 > $W/other-h/silu_mul.log 2>&1
timeout 75 python gated_placed_race.py --out $W/other-h/gelu_mul --placements 2 --rounds 3 --families gelu_mul \
  --shapes $O --dtypes fp16 --budget-s 60 > $W/other-h/gelu_mul.log 2>&1
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-70)"; grep "^| [0-9]" $f | cut -d'|' -f2-10,14 | cut -c1-120; done
