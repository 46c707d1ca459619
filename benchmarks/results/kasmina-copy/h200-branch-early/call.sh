#!/bin/bash
# branch_free's kernel with x early (EARLY 1, 2) against as shipped (0): GPU tests, then the probe at its H200 points
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 170 python -m pytest -q -m gpu tests/kernels/test_kasmina_stacked.py tests/kernels/test_kasmina_tma.py \
  tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_kasmina_stats.py \
  tests/kernels/test_catalog_behaviour.py -k "kasmina or stacked or tma" -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -1 $W/gpu_tests.txt
cd benchmarks
S=8x100x32,8x100x64,8x100x128,8x1000x32,8x1000x64,8x1000x128,8x4000x32,8x4000x64,8x4000x128
S=$S,64x100x32,64x100x64,64x100x128,64x1000x32,64x1000x64,64x1000x128,64x4000x32,64x4000x64,64x4000x128
S=$S,512x100x32,512x100x64,512x100x128,512x1000x128,48x333x100,64x250x256
PYTHONPATH=. timeout 250 python results/kasmina-copy/h200-branch-early/probe.py $S bf16 10 > $W/probe-bf16.txt 2>&1
echo "bf16 rc $?"
F=8x1000x64,8x1000x128,64x1000x32,64x1000x64,64x1000x128,64x4000x64,512x100x64,512x1000x32,512x1000x64,48x333x100
PYTHONPATH=. timeout 120 python results/kasmina-copy/h200-branch-early/probe.py $F fp32 10 > $W/probe-fp32.txt 2>&1
echo "fp32 rc $?"; grep -h "^| [bf]" $W/probe-*.txt | cut -d'|' -f2-4,6-11; grep -h Traceback -A8 $W/*.txt | head -20
tar czf $OUT/r.tgz -C $W .
