#!/bin/bash
# The memory-bound families' fp32 grid parts (9 points each), never raced on an H200: every provider, Liger from its
# wheel, one process a family (race_grids.py), no CUDA-graph timing
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $R/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton, liger_kernel; print(torch.__version__, triton.__version__, 'liger-kernel 0.8.5')" >> $R/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $R/
python benchmarks/race_grids.py --out $R --budget ${BUDGET:-540} --min-left 60 --no-graph \
  --part rmsnorm:fp32:fp32 --part add_rmsnorm:fp32:fp32 --part silu_mul:fp32:fp32 --part gelu_mul:fp32:fp32 2>&1 | tail -8
for db in $R/*.db.gz; do
  f=$(basename $db .db.gz); gunzip -k $db
  for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$R/$f.db', create=False).runs()['id']))"); do
    kprof show $run --store $R/$f.db --csv $R/metrics-$f.csv > /dev/null 2>&1
  done
  rm -f $R/$f.db $db
done
gzip $R/metrics-*.csv; rm -rf $R/traces
grep -h "points:" $R/grid-*.md
tar czf $OUT/r.tgz -C $R .; rm -rf $R/*
