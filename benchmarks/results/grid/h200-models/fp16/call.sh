#!/bin/bash
# The `models` parts in fp16 (their first race, the rules of ../classes/ in force), every family but kasmina, every
# provider: rmsnorm, add_rmsnorm, silu_mul and gelu_mul on GPU 0, rmsnorm_linear and swiglu on GPU 1 of a 2xH200.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
race() {  # GPU, then the families it races
  local gpu=$1; shift
  local parts=(); for f in "$@"; do parts+=(--part "$f:models:fp16"); done
  CUDA_VISIBLE_DEVICES=$gpu python benchmarks/race_grids.py --out $W/gpu$gpu --budget 320 --min-left 30 --no-graph \
    "${parts[@]}" > $W/race-gpu$gpu.txt 2>&1
}
race 0 rmsnorm add_rmsnorm silu_mul gelu_mul & race 1 rmsnorm_linear swiglu & wait
rm -rf $W/gpu*/traces
cd $W && tar czf $OUT/r.tgz .
cat $W/race-gpu*.txt | grep -v "^$"
for f in $W/gpu*/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-60)"; grep -h "^Dispatch\|^Prepared\|^Targets" $f | cut -c1-200; done
