#!/bin/bash
# float32 rows of 128 KB or more on an H200 through the slotted kernel (the dispatch's new rule): the slotted kernels'
# GPU tests in every dtype, then the fp32 parts' four wide points raced again
W=$OUT/r; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 150 python -m pytest -q -p no:cacheprovider -m gpu tests/kernels/rmsnorm/test_versions.py \
  tests/kernels/add_rmsnorm/test_cooperative.py -k "slotted" > $W/gpu_tests.txt 2>&1; echo "tests rc $?"; tail -1 $W/gpu_tests.txt
python benchmarks/race_grids.py --out $W --budget 170 --min-left 40 --no-graph \
  --part rmsnorm:shapes=2048x65536+16384x65536:fp32:triton_tuned,torch_compile,copy_bytes \
  --part add_rmsnorm:shapes=2048x65536+16384x65536:fp32:triton_tuned,torch_compile,copy_bytes 2>&1 | tail -3
for f in rmsnorm add_rmsnorm; do
  gunzip $W/$f.db.gz && for run in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/$f.db', create=False).runs()['id']))"); do
    kprof show $run --store $W/$f.db --csv $W/metrics-$f.csv > /dev/null 2>&1; done; rm -f $W/$f.db
done
gzip $W/metrics-*.csv; rm -rf $W/traces
grep -h "^| [0-9]" $W/grid-*.md | cut -c1-300
tar czf $OUT/r.tgz -C $W .; rm -rf $W/*
