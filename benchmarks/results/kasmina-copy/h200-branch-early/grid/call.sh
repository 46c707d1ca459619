#!/bin/bash
# EARLY in the H200's table, shipped: GPU tests (the kasmina files on the GPU), kasmina's main grid parts, bf16 and fp32
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 150 python -m pytest -q -m gpu tests/kernels/test_kasmina_stacked.py tests/kernels/test_kasmina_tma.py \
  tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_catalog_behaviour.py \
  -k "kasmina or stacked or tma" -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -1 $W/gpu_tests.txt
timeout 120 python -m pytest -q tests/kernels/test_kasmina_stats.py -p no:cacheprovider > $W/stats_tests_on_gpu.txt 2>&1
echo "kasmina_stats on the GPU rc $?"; tail -1 $W/stats_tests_on_gpu.txt
P=triton_telemetry,torch_compile,copy_x,copy_through_ids
python benchmarks/race_grids.py --out $W --budget 380 --min-left 60 --no-graph \
  --part kasmina:main:bf16:$P --part kasmina:main:fp32:$P 2>&1 | tail -4
gunzip $W/kasmina.db.gz
for r in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/kasmina.db', create=False).runs()['id']))"); do
  kprof show $r --store $W/kasmina.db --csv $W/m-$r.csv > /dev/null 2>&1; done
rm -rf $W/*.db $W/traces; gzip $W/m-*.csv
tar czf $OUT/r.tgz -C $W .; ls $W
for d in bf16 fp32; do head -4 $W/grid-kasmina-main-$d.md | tail -2 | cut -c1-200; done
