#!/bin/bash
# rmsnorm_linear's split-K kernel on the fold at 4096-5120 columns (Qwen2.5-7B's QKV is 3584 x 4608), where the 5504
# class's unsplit tiles launch 64-80 programs on 132 SMs and the prepared object ran 1.04-1.11x cuBLAS's product at
# K 3584 (../classes/split-k/): every tile x split with x pipelined, plain and folded (`--only-pipelined --folded`),
# 1/4/16 rows x K 3584/4096/5120 x N 4608 and K 3584/4096 x N 4096/5120; bf16 on GPU 0, fp16 on GPU 1, each after
# filling Triton's cache in 8 processes.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
race() {  # GPU, dtype
  export CUDA_VISIBLE_DEVICES=$1
  for i in 0 1 2 3 4 5 6 7; do
    timeout 200 python rmsnorm_linear_split_k.py --compile-only --shard $i/8 --dtypes $2 --only-pipelined --folded &
  done; wait
  timeout 150 python rmsnorm_linear_split_k.py --out $W/$2-4608 --only-pipelined --folded --rows 1,4,16 \
    --ks 3584,4096,5120 --cols 4608 --dtypes $2 --rounds 8 > $W/$2-4608.txt 2>&1
  timeout 120 python rmsnorm_linear_split_k.py --out $W/$2-4096-5120 --only-pipelined --folded --rows 1,4,16 \
    --ks 3584,4096 --cols 4096,5120 --dtypes $2 --rounds 8 > $W/$2-4096-5120.txt 2>&1
}
race 0 bf16 & race 1 fp16 & wait
gzip $W/*/split_k.csv
cd $W && tar czf $OUT/r.tgz .
cut -c1-260 $W/*.txt | grep -v "^$" | head -60
