#!/bin/bash
# The float32 rules for 4097-16384 columns shipped: the GPU tests of both families, norm_fp32_rows.py at the rules'
# edges and widths no race had seen (5120, 12288), then the off-grid points through race_grids.py (every provider,
# Liger from its wheel, one process a family) for kprof grid's verdicts
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 120 python -m pytest -q -p no:cacheprovider tests/kernels/rmsnorm tests/kernels/add_rmsnorm -k "fp32 or h200 or slotted" > $W/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -2 $W/gpu_tests.txt
cd benchmarks
mkdir -p $W/rmsnorm $W/add_rmsnorm
timeout 110 python norm_fp32_rows.py --out $W/rmsnorm --families rmsnorm --rounds 6 \
  --shapes 512x8192,1024x6144,8192x8192,2048x12288,16384x12288,4096x5120,16384x5120 > $W/rmsnorm/race.txt 2>&1
echo "rmsnorm race rc $?"
timeout 90 python norm_fp32_rows.py --out $W/add_rmsnorm --families add_rmsnorm --rounds 6 \
  --shapes 2048x5120,2048x12288,16384x12288,16384x5120,4096x7168 > $W/add_rmsnorm/race.txt 2>&1
echo "add_rmsnorm race rc $?"
cd ..
G=$W/grid; mkdir -p $G
S=2048x6144+2048x7168+2048x16384+8192x6144+16384x2048+16384x3072+16384x6144+16384x7168+16384x16384+32768x6144
timeout 230 python benchmarks/race_grids.py --out $G --budget 220 --min-left 40 --no-graph \
  --part rmsnorm:shapes=$S:fp32 --part add_rmsnorm:shapes=$S:fp32 2>&1 | tail -4
for db in $G/*.db.gz; do
  f=$(basename $db .db.gz); gunzip -k $db
  for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$G/$f.db', create=False).runs()['id']))"); do
    kprof show $run --store $G/$f.db --csv $G/metrics-$f.csv > /dev/null 2>&1
  done
  rm -f $G/$f.db $db
done
gzip $G/metrics-*.csv 2>/dev/null; rm -rf $G/traces
grep -h "points:" $G/grid-*.md
tar czf $OUT/r.tgz -C $W .
