#!/bin/bash
# the stacked kernel with x and its blueprint loaded before the seeds' state: GPU tests, then against the kernel before
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 100 python -m pytest -q -m gpu tests/kernels/test_kasmina_stacked.py tests/kernels/test_ops.py -k "kasmina or stacked" -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -1 $W/gpu_tests.txt
cd benchmarks
PYTHONPATH=. timeout 150 python ../benchmarks/results/kasmina-copy/h200-stacked-early/probe.py \
  1x100x32,1x250x64,1x500x128,1x1000x32,1x1000x64,1x1000x128,1x2000x64,1x4000x32,1x4000x64,1x4000x128,4x4000x64,8x4000x128 bf16,fp16 12 > $W/probe.txt 2>&1
echo "probe rc $?"
PYTHONPATH=. timeout 60 python ../benchmarks/results/kasmina-copy/h200-stacked-early/probe.py 1x1000x32,1x4000x32,1x1000x64,1x2000x64,1x4000x64 fp32 12 > $W/probe-fp32.txt 2>&1
echo "fp32 rc $?"; grep "^|" $W/probe.txt $W/probe-fp32.txt | cut -d: -f2; grep -h Traceback -A5 $W/*.txt | head
tar czf $OUT/r.tgz -C $W .
