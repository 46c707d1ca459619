#!/bin/bash
# the final fp32 table: GPU tests, its rule race again, and kasmina's main grid part in fp32
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 150 python -m pytest -q -m gpu tests/kernels/test_kasmina_stacked.py tests/kernels/test_kasmina_tma.py \
  tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_kasmina_stats.py \
  tests/kernels/test_catalog_behaviour.py -k "kasmina or stacked or tma" -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -1 $W/gpu_tests.txt
(cd benchmarks
timeout 120 python kasmina_copy.py --out $W/rule --shapes 1x1000x64,1x1979x64,1x1980x64,1x2000x64,1x2500x64,1x2969x64,1x2970x64,1x3000x64 --dtypes fp32 --tiles 0x0 --no-floors --stacked --stacked-tiles 16x4,64x4,64x8 --rounds 10 > $W/rule.txt 2>&1
echo "rule rc $?")
P=triton_telemetry,torch_compile,copy_x,copy_through_ids
python benchmarks/race_grids.py --out $W --budget 280 --min-left 60 --no-graph --part kasmina:main:fp32:$P 2>&1 | tail -4
gunzip $W/kasmina.db.gz
for r in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/kasmina.db', create=False).runs()['id']))"); do
  kprof show $r --store $W/kasmina.db --csv $W/m-$r.csv > /dev/null 2>&1; done
rm -rf $W/*.db $W/traces; gzip $W/m-*.csv
grep "copy" $W/rule.txt | sed -e 's/no telemetry.*shipped/shipped/' | cut -c1-150
tar czf $OUT/r.tgz -C $W .; ls $W
head -8 $W/grid-kasmina-main-fp32.md | cut -c1-300
