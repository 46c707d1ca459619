#!/bin/bash
# A fourth H200: the new configs' GPU tests (rmsnorm, add_rmsnorm, the gated families' ops), the main job as a user runs
# it (scripts/run_profile.sh rmsnorm), the gated families' fp16 default sweeps, and the mid-row grid points again
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 150 python -m pytest -q -p no:cacheprovider tests/kernels/rmsnorm tests/kernels/add_rmsnorm \
  tests/kernels/test_ops.py tests/kernels/test_vector_align.py -k "h200 or mid_row or silu or gelu or gated" \
  > $W/gpu_tests.txt 2>&1; echo "tests rc $?"; tail -1 $W/gpu_tests.txt
export KPROF_STORE=$W/store
( time timeout 200 scripts/run_profile.sh rmsnorm ) > $W/main-job.log 2>&1; echo "main job rc $?"
tail -5 $W/main-job.log
G=1x22016+64x22016+4096x8192+16384x22016+8192x11008
M=2048x6144+2048x7168+2048x8192+8192x7168+8192x8192+8192x6144
timeout 150 python benchmarks/race_grids.py --out $W --budget 140 --min-left 20 --no-graph \
  --part silu_mul:shapes=$G:fp16 --part gelu_mul:shapes=$G:fp16 --part rmsnorm:shapes=$M:bf16 2>&1 | tail -5
for db in $W/*.db.gz; do
  f=$(basename $db .db.gz); gunzip -k $db
  for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/$f.db', create=False).runs()['id']))"); do
    kprof show $run --store $W/$f.db --csv $W/metrics-$f-$run.csv > /dev/null 2>&1
  done
  rm -f $W/$f.db $db
done
gzip $W/metrics-*.csv 2>/dev/null; rm -rf $W/traces
for f in $W/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-70)"; done
kprof show latest --store $W/store > /dev/null 2>&1; ls $W/store
tar czf $OUT/r.tgz -C $W --exclude=store .
tar czf $OUT/store.tgz -C $W store
