#!/bin/bash
# swiglu's interleaved TMA kernel with tiles of 128 + 64 rows (`--set lower`) where 128-row tiles fill few waves of
# SMs (2048x2048x768: 96 tiles of 128x128 outputs, 0.73 of a wave; 132 of 192x64), against the shipped launch,
# cuBLAS's x @ [Wg Wu] (alone and then the pairs pass) and torch.compile: bf16 on GPU 0, fp16 on GPU 1, after the
# GPU tests of the changed kernel.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
CUDA_VISIBLE_DEVICES=0 timeout 150 python -m pytest -q -m gpu tests/kernels -k "swiglu" -p no:cacheprovider \
  > $W/gpu-tests.txt 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 150 python -m pytest -q -m gpu tests/kernels/test_ops.py -p no:cacheprovider \
  > $W/gpu-tests-ops.txt 2>&1 &
wait
cd benchmarks
race() {  # GPU, dtype
  CUDA_VISIBLE_DEVICES=$1 timeout 400 python swiglu_interleaved_tiles.py --out $W --set lower --dtype $2 --rounds 3 \
    --shapes 2048x2048x768,4096x2048x768,2048x4096x1536,1024x7168x2048 > $W/race-$2.txt 2>&1
}
race 0 bf16 & race 1 fp16 & wait
cd $W && tar czf $OUT/r.tgz .
tail -3 $W/gpu-tests*.txt
cat $W/race-*.txt | cut -c1-150
