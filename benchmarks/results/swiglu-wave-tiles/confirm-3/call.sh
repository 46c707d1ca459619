#!/bin/bash
# Out of sample, the prepared object's route (`[prepared op]`): cuBLAS's product on the interleaved weights, then the
# pairs pass, where the kernel's tiles make one wave under 90% full (`tuned.underfilled_wave`: 7 shapes), the kernel
# elsewhere (6 shapes, 91-100% full, the taller tiles at 4 of them); none raced before. bf16 then fp16 on one H200,
# after the GPU tests.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 150 python -m pytest -q -m gpu tests/kernels -k "swiglu" -p no:cacheprovider > $W/gpu-tests.txt 2>&1
timeout 150 python -m pytest -q -m gpu tests/kernels/test_ops.py -p no:cacheprovider > $W/gpu-tests-ops.txt 2>&1
SHAPES=1100x2048x768,1024x4096x1024,1280x2048x1408,2304x4096x1024,1024x5120x1536,3072x2048x768,1200x4096x2048
SHAPES=$SHAPES,1800x2048x1024,2560x4096x768,1500x7168x2048,2816x2048x1024,1408x2048x1408,2048x5120x1536
cd benchmarks
for d in bf16 fp16; do
  timeout 220 python swiglu_interleaved_tiles.py --out $W --set rule --dtype $d --rounds 5 --shapes $SHAPES \
    > $W/race-$d.txt 2>&1
done
cd $W && tar czf $OUT/r.tgz .
for f in $W/gpu-tests*.txt; do tail -n 2 $f; done
grep -h "==\|\[" $W/race-*.txt | cut -c1-60
