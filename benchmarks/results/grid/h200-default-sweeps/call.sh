#!/bin/bash
# The memory-bound families' default sweeps (what `kprof profile FAMILY` and scripts/run_profile.sh run) on an H200:
# their shapes through race_grids.py, every provider, Liger from its wheel, one process a family and dtype
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
N=1x4096+64x4096+4096x1024+4096x4096+16384x4096+32768x8192+8192x5120
G=1x22016+64x22016+4096x8192+16384x22016+8192x11008
P=""
for dt in bf16 fp16 fp32; do P="$P --part rmsnorm:shapes=$N+256x131072:$dt --part add_rmsnorm:shapes=$N+256x65536:$dt"; done
for dt in bf16 fp32; do P="$P --part silu_mul:shapes=$G:$dt --part gelu_mul:shapes=$G:$dt"; done
timeout 470 python benchmarks/race_grids.py --out $W --budget 460 --min-left 40 --no-graph $P 2>&1 | tail -12
for db in $W/*.db.gz; do
  f=$(basename $db .db.gz); gunzip -k $db
  for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/$f.db', create=False).runs()['id']))"); do
    kprof show $run --store $W/$f.db --csv $W/metrics-$f-$run.csv > /dev/null 2>&1
  done
  rm -f $W/$f.db $db
done
gzip $W/metrics-*.csv 2>/dev/null; rm -rf $W/traces
for f in $W/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-60)"; done
tar czf $OUT/r.tgz -C $W .
