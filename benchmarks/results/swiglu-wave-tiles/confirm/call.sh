#!/bin/bash
# The one-wave rule (`tuned.one_wave_config`) out of sample: `--set rule` at 8 shapes where it takes the taller tiles
# and 3 where it keeps the persistent 128x128 ones, none of them raced before; then swiglu's `models` grid part
# through `kprof grid` (race_grids.py, every provider); bf16 on GPU 0, fp16 on GPU 1, after the GPU tests.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
CUDA_VISIBLE_DEVICES=0 timeout 150 python -m pytest -q -m gpu tests/kernels -k "swiglu" -p no:cacheprovider \
  > $W/gpu-tests.txt 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 150 python -m pytest -q -m gpu tests/kernels/test_ops.py -p no:cacheprovider \
  > $W/gpu-tests-ops.txt 2>&1 &
wait
SHAPES=2000x2048x768,1900x2048x768,3900x2048x768,2048x2048x1408,1024x2048x1408,3000x2048x1024,2048x4096x1408
SHAPES=$SHAPES,3900x7168x768,2200x2048x768,2048x2048x1024,1536x4096x1536
run() {  # GPU, dtype
  export CUDA_VISIBLE_DEVICES=$1
  (cd benchmarks && timeout 200 python swiglu_interleaved_tiles.py --out $W --set rule --dtype $2 --rounds 5 \
    --shapes $SHAPES > $W/race-$2.txt 2>&1)
  python benchmarks/race_grids.py --out $W/grid-$2 --budget 260 --min-left 30 --no-graph \
    --part swiglu:models:$2 > $W/grid-race-$2.txt 2>&1
}
run 0 bf16 & run 1 fp16 & wait
rm -rf $W/grid-*/traces
cd $W && tar czf $OUT/r.tgz .
for f in $W/gpu-tests*.txt; do tail -n 2 $f; done
cat $W/race-*.txt | cut -c1-110 | grep -v "not timed\|Warn\|warn"
for f in $W/grid-*/grid-*.md; do echo "$(basename $f)"; grep -h "2048x2048x768\|points:" $f | cut -c1-250; done
