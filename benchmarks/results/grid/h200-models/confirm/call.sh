#!/bin/bash
# The rules drawn from ../classes/ shipped (add_rmsnorm's width classes, rmsnorm_linear's H200 rows and folded split-K
# between the classes), on another 2xH200 machine: the two families' GPU tests; add_rmsnorm's race at model widths and
# rows none of the races had (out of sample); `race_grids.py` at both families' `models` parts and at rmsnorm_linear
# decode points between the classes, bf16 and fp16.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
gpu0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout 120 python -m pytest -q -p no:cacheprovider -m gpu tests/kernels/add_rmsnorm > $W/gpu_tests_add_rmsnorm.txt 2>&1
  (cd benchmarks && timeout 260 python add_rmsnorm_placed_race.py --out $W/add --placements 2 --rounds 3 --budget-s 245 \
    --shapes 1200x2304,2200x2304,900x2880,3000x2880,1100x3840,2300x3840,600x4608,2500x4608,180x5376,300x5376,640x5376,900x5376,6000x5376,90x7168,240x6144,1800x2560 \
    --dtypes bf16,fp16 > $W/add.txt 2>&1)
  timeout 150 python benchmarks/race_grids.py --out $W/grid0 --budget 140 --min-left 20 --no-graph \
    --part add_rmsnorm:models:bf16 > $W/race-gpu0.txt 2>&1
}
gpu1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 150 python -m pytest -q -p no:cacheprovider -m gpu tests/kernels/rmsnorm_linear > $W/gpu_tests_rmsnorm_linear.txt 2>&1
  timeout 420 python benchmarks/race_grids.py --out $W/grid1 --budget 410 --min-left 20 --no-graph \
    --part rmsnorm_linear:shapes=2x3584x4608+8x4096x6144+12x5120x7168+20x4096x6144+28x8192x10240+24x3584x18944:bf16 \
    --part rmsnorm_linear:models:bf16 \
    --part rmsnorm_linear:shapes=2x3584x4608+8x4096x6144+12x5120x7168+20x4096x6144+28x8192x10240+24x3584x18944:fp16 \
    > $W/race-gpu1.txt 2>&1
}
gpu0 & gpu1 & wait
rm -rf $W/grid*/traces
cd $W && tar czf $OUT/r.tgz .
tail -1 $W/gpu_tests_*.txt; cat $W/race-gpu*.txt | grep -v "^$"
for f in $W/grid*/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-100)"; grep -h "^Dispatch\|^Prepared" $f | cut -c1-330; done
grep -c "^==" $W/add.txt; grep -h "budget\|Error\|WRONG" $W/add.txt | head -5
