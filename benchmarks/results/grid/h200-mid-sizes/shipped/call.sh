#!/bin/bash
# The mid-size rules shipped, on a third H200: the GPU tests of the new configs, kprof grid at the grid points they
# change and at off-grid points around them (every provider, Liger from its wheel), and silu_mul's tiles again
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 120 python -m pytest -q -m gpu tests/kernels/rmsnorm/test_versions.py tests/kernels/add_rmsnorm/test_split.py \
  -k "h200 or mid_row" > $W/gpu_tests.txt 2>&1; tail -1 $W/gpu_tests.txt
R=8192x6144+8192x8192+2048x16384+8192x5120+4096x6144+12288x8192+1024x16384+4096x16384
A=512x6144+512x7168+512x8192+768x7168+512x5120
timeout 250 python benchmarks/race_grids.py --out $W --budget 240 --min-left 30 --no-graph \
  --part rmsnorm:shapes=$R:bf16 --part rmsnorm:shapes=$R:fp16 \
  --part add_rmsnorm:shapes=$A:bf16 --part add_rmsnorm:shapes=$A:fp16 2>&1 | tail -6
for db in $W/*.db.gz; do
  f=$(basename $db .db.gz); gunzip -k $db
  for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/$f.db', create=False).runs()['id']))"); do
    kprof show $run --store $W/$f.db --csv $W/metrics-$f-$run.csv > /dev/null 2>&1
  done
  rm -f $W/$f.db $db
done
gzip $W/metrics-*.csv 2>/dev/null; rm -rf $W/traces
cd benchmarks
timeout 80 python gated_placed_race.py --out $W/gated --placements 2 --rounds 3 --families silu_mul \
  --shapes 512x12288,512x14336,1024x12288,2048x8192 --dtypes bf16 --budget-s 60 > $W/gated.log 2>&1
for f in $W/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-70)"; done
tar czf $OUT/r.tgz -C $W .
