#!/bin/bash
# the shipped tables (branch_free's EARLY; the stacked kernel's by-block rows with the state first): GPU tests, then
# kasmina's main grid parts in bf16, fp16 and fp32
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 100 python -m pytest -q -m gpu tests/kernels/test_kasmina_stacked.py tests/kernels/test_ops.py \
  -k "kasmina or stacked" -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -1 $W/gpu_tests.txt
P=triton_telemetry,torch_compile,copy_x,copy_through_ids
python benchmarks/race_grids.py --out $W --budget 350 --min-left 80 --no-graph \
  --part kasmina:main:bf16:$P --part kasmina:main:fp16:$P --part kasmina:main:fp32:$P 2>&1 | tail -5
gunzip $W/kasmina.db.gz
for r in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/kasmina.db', create=False).runs()['id']))"); do
  kprof show $r --store $W/kasmina.db --csv $W/m-$r.csv > /dev/null 2>&1; done
rm -rf $W/*.db $W/traces; gzip $W/m-*.csv
tar czf $OUT/r.tgz -C $W .; ls $W
