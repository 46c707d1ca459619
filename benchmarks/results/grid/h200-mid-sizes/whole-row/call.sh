#!/bin/bash
# A sixth H200: the gated families' whole-row rule shipped: their GPU tests, and kprof grid at the points it changes
# and a neighbour it leaves (512x16384), every provider, Liger from its wheel; tables straight into $OUT
W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 90 python -m pytest -q -p no:cacheprovider tests/kernels/test_catalog_behaviour.py tests/kernels/test_ops.py \
  tests/kernels/test_vector_align.py -k "gated or whole or silu or gelu" > $W/gpu_tests.txt 2>&1; tail -1 $W/gpu_tests.txt
S=512x12288+512x14336+1024x12288+512x16384
timeout 150 python benchmarks/race_grids.py --out $W --budget 140 --min-left 20 --no-graph \
  --part silu_mul:shapes=$S:bf16 --part silu_mul:shapes=$S:fp16 --part gelu_mul:shapes=$S:bf16 \
  --part gelu_mul:shapes=$S:fp16 2>&1 | tail -3
rm -rf $W/*.db.gz $W/traces
for f in $W/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-70)"; grep "^| [0-9]" $f | cut -d'|' -f2-10,14; done
