#!/bin/bash
# rmsnorm float32 at 4097-8192 columns with the two-pass config from 8192 rows (it had been from 16384): the GPU tests
# of the family's float32 configs, norm_fp32_rows.py around the new edge, then race_grids.py at those points and at
# 16384x2048 (uncertain in the grid before)
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 60 python -m pytest -q -p no:cacheprovider tests/kernels/rmsnorm/test_versions.py -k "fp32 or h200" > $W/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -1 $W/gpu_tests.txt
mkdir -p $W/rmsnorm
(cd benchmarks && timeout 100 python norm_fp32_rows.py --out $W/rmsnorm --families rmsnorm --rounds 8 \
  --shapes 8192x6144,8192x7168,8192x8192,6144x6144,12288x5120 > $W/rmsnorm/race.txt 2>&1; echo "race rc $?")
G=$W/grid; mkdir -p $G
S=8192x6144+8192x7168+8192x8192+6144x6144+16384x2048
timeout 150 python benchmarks/race_grids.py --out $G --budget 140 --min-left 30 --no-graph --part rmsnorm:shapes=$S:fp32 2>&1 | tail -2
gunzip $G/rmsnorm.db.gz
for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$G/rmsnorm.db', create=False).runs()['id']))"); do
  kprof show $run --store $G/rmsnorm.db --csv $G/metrics-rmsnorm.csv > /dev/null 2>&1
done
rm -f $G/rmsnorm.db; gzip $G/metrics-*.csv 2>/dev/null; rm -rf $G/traces
grep -h "points:" $G/grid-*.md
tar czf $OUT/r.tgz -C $W .
