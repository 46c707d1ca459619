#!/bin/bash
# The 192x64 tiles' warps, stages, BLOCK_K and GROUP_M (`--set narrow`) at four shapes where they make one wave
# (2048x2048x768, still 1.064x cuBLAS in `kprof grid`), bf16 then fp16 on one H200; first the GPU tests of swiglu,
# the ops and the route races at this commit.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 150 python -m pytest -q -m gpu tests/kernels -k "swiglu or interleaved or route" -p no:cacheprovider \
  > $W/gpu-tests.txt 2>&1
timeout 150 python -m pytest -q -m gpu tests/kernels/test_ops.py -p no:cacheprovider > $W/gpu-tests-ops.txt 2>&1
cd benchmarks
for d in bf16 fp16; do
  timeout 150 python swiglu_interleaved_tiles.py --out $W --set narrow --dtype $d --rounds 5 \
    --shapes 2048x2048x768,2000x2048x768,1024x2048x1408,1280x4096x768 > $W/race-$d.txt 2>&1
done
cd $W && tar czf $OUT/r.tgz .
for f in $W/gpu-tests*.txt; do tail -n 2 $f; done
grep -h "==\|\[\| tile " $W/race-*.txt | grep -v "route race" | cut -c1-70
