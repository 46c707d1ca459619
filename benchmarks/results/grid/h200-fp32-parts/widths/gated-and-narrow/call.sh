#!/bin/bash
# silu_mul's and gelu_mul's float32 at the grid's widths their fp32 parts leave out (race_grids.py, every provider, Liger
# from its wheel), and rmsnorm's float32 configs at 2048-3072 columns (norm_fp32_rows.py), where the grid read the
# table's config 1.03x torch.compile at 16384x2048 twice
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
G=$W/grid; mkdir -p $G
S=2048x2048+2048x6144+2048x7168+2048x16384+16384x2048+16384x3072+16384x6144+16384x7168+32768x6144+8x6144
timeout 260 python benchmarks/race_grids.py --out $G --budget 250 --min-left 40 --no-graph \
  --part silu_mul:shapes=$S:fp32 --part gelu_mul:shapes=$S:fp32 2>&1 | tail -4
for db in $G/*.db.gz; do
  f=$(basename $db .db.gz); gunzip -k $db
  for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$G/$f.db', create=False).runs()['id']))"); do
    kprof show $run --store $G/$f.db --csv $G/metrics-$f.csv > /dev/null 2>&1
  done
  rm -f $G/$f.db $db
done
gzip $G/metrics-*.csv 2>/dev/null; rm -rf $G/traces
grep -h "points:" $G/grid-*.md
mkdir -p $W/rmsnorm
(cd benchmarks && timeout 100 python norm_fp32_rows.py --out $W/rmsnorm --families rmsnorm --rounds 8 \
  --shapes 2048x2048,8192x2048,16384x2048,32768x2048,16384x3072 > $W/rmsnorm/race.txt 2>&1; echo "race rc $?")
tar czf $OUT/r.tgz -C $W .
