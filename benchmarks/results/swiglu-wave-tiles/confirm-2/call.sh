#!/bin/bash
# The one-wave rule as widened after ../confirm/ (192x64 tiles wherever they fit in one wave, 192x128 where they do
# and the 128x128 tiles spill past one): `--set rule` at 6 shapes where it takes the taller tiles (5 raced nowhere
# before; 1536x4096x1536, ../confirm/'s control, is where the widening came from) and 4 where it keeps the persistent
# 128x128 ones; bf16 then fp16 on one H200 (no 2xH200 was lent), after the GPU tests.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 150 python -m pytest -q -m gpu tests/kernels -k "swiglu" -p no:cacheprovider > $W/gpu-tests.txt 2>&1
timeout 150 python -m pytest -q -m gpu tests/kernels/test_ops.py -p no:cacheprovider > $W/gpu-tests-ops.txt 2>&1
SHAPES=1000x2048x768,1200x2048x1024,1536x2048x1536,2560x2048x1024,1536x2048x2048,1536x4096x1536
SHAPES=$SHAPES,1300x4096x1536,1700x2048x1024,2048x7168x2048,1024x7168x2048
cd benchmarks
for d in bf16 fp16; do
  timeout 200 python swiglu_interleaved_tiles.py --out $W --set rule --dtype $d --rounds 5 --shapes $SHAPES \
    > $W/race-$d.txt 2>&1
done
cd $W && tar czf $OUT/r.tgz .
for f in $W/gpu-tests*.txt; do tail -n 2 $f; done
cat $W/race-*.txt | cut -c1-60 | grep -v "not timed\|Warn\|warn"
