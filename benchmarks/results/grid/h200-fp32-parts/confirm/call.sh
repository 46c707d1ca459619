#!/bin/bash
# With the H200's float32 rules of both families: their tests on the GPU, the configurations raced again on another
# H200 at 512-32768 rows of 4096 and 8192 columns (the dispatch now the rules), then the two fp32 grid parts again
W=$OUT/r; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__, 'liger-kernel 0.8.5')" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 120 python -m pytest -q -p no:cacheprovider tests/kernels/rmsnorm/test_versions.py tests/kernels/add_rmsnorm/test_split.py \
  -k "fp32_configs or h200" > $W/gpu_tests.txt 2>&1; echo "tests rc $?"; tail -1 $W/gpu_tests.txt
S=512x4096,2048x4096,4096x4096,8192x4096,16384x4096,32768x4096,512x8192,2048x8192,4096x8192,8192x8192,16384x8192,32768x8192
cd benchmarks
timeout 300 python norm_fp32_rows.py --out $W/race --shapes $S --rounds 6 > $W/race.txt 2>&1; echo "race rc $?"
cd ..
python benchmarks/race_grids.py --out $W/grid --budget 170 --min-left 40 --no-graph \
  --part rmsnorm:fp32:fp32 --part add_rmsnorm:fp32:fp32 2>&1 | tail -3
for f in rmsnorm add_rmsnorm; do
  gunzip $W/grid/$f.db.gz && for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/grid/$f.db', create=False).runs()['id']))"); do
    kprof show $run --store $W/grid/$f.db --csv $W/grid/metrics-$f.csv > /dev/null 2>&1; done; rm -f $W/grid/$f.db
done
gzip $W/grid/metrics-*.csv $W/race/times.csv; rm -rf $W/grid/traces
grep -h "points:\|Targets\|Dispatch" $W/grid/grid-*.md | cut -c1-200
tar czf $OUT/r.tgz -C $W .; rm -rf $W/*
