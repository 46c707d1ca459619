#!/bin/bash
# A fourth H200, the classes as shipped (column tiles only where H fills them): the gated GPU tests; the main job
# for silu_mul as a user runs it; kprof grid at the gated grid's 512-row points in both 16-bit dtypes
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 120 python -m pytest -q -p no:cacheprovider tests/kernels/test_catalog_behaviour.py tests/kernels/test_ops.py \
  tests/kernels/test_vector_align.py -k "gated or whole or silu or gelu or mid_row" > $W/gpu_tests.txt 2>&1
tail -1 $W/gpu_tests.txt
export KPROF_STORE=$W/store
( time timeout 170 scripts/run_profile.sh silu_mul ) > $W/main-job.log 2>&1; echo "main job rc $?"
tail -4 $W/main-job.log
unset KPROF_STORE
S=512x2048+512x3072+512x4096+512x6144+512x8192+512x12288+512x14336+512x16384
timeout 220 python benchmarks/race_grids.py --out $W/grid --budget 210 --min-left 20 --no-graph \
  --part silu_mul:shapes=$S:bf16 --part silu_mul:shapes=$S:fp16 --part gelu_mul:shapes=$S:bf16 \
  --part gelu_mul:shapes=$S:fp16 2>&1 | tail -3
rm -rf $W/grid/*.db.gz $W/grid/traces
kprof show latest --store $W/store --csv $W/main-job-metrics.csv > $W/main-job-report.txt 2>&1; gzip $W/main-job-metrics.csv
cd $W && tar czf $OUT/r.tgz --exclude=store .
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-70)"; done
