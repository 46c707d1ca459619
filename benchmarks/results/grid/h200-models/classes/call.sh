#!/bin/bash
# What the held-out `models` grids found off the dispatch's classes, raced on a 2xH200 machine, one GPU a half:
# GPU 0, rmsnorm_linear: the split-K kernel (plain and on g folded into W) in its nearest column class's tiles at
#   columns between the classes (QKV widths), 1/4/16 rows, against the norm then cuBLAS's product; then the norm then
#   kprof's Triton product against the norm then cuBLAS's at 24 and 32 rows (the rule's Triton rows, never raced).
# GPU 1, add_rmsnorm: every config at widths between the H200's band widths, rows inside the bands, and 100-200 rows.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
gpu0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout 330 python rmsnorm_linear_split_k.py --out $W/split-k --shipped-only --folded --rows 1,4,16 \
    --ks 3584,4096,5120 --cols 4608,6144,7168,8192,10240 --dtypes bf16,fp16 --rounds 8 > $W/split-k.txt 2>&1
  timeout 190 python rmsnorm_linear_split_k.py --out $W/rows-17-32 --shipped-only --rows 24,32 \
    --ks 3584,4096,8192 --cols 6144,10240,14336,28672 --dtypes bf16,fp16 --rounds 8 > $W/rows-17-32.txt 2>&1
}
gpu1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 530 python add_rmsnorm_placed_race.py --out $W/add --placements 2 --rounds 3 --budget-s 510 \
    --shapes 1000x2560,1536x2560,2500x2560,4096x2560,1000x3584,1280x3584,2048x3584,3000x3584,512x4608,1000x4608,3000x4608,400x5376,700x5376,1000x5376,3000x5376,128x7168,100x8192,200x8192,160x6144 \
    --dtypes bf16,fp16 > $W/add.txt 2>&1
}
gpu0 & gpu1 & wait
cd $W && tar czf $OUT/r.tgz .
grep -h "x.*cublas" $W/split-k.txt $W/rows-17-32.txt | cut -c1-250 | head -150
grep -c "^==" $W/add.txt; grep -h "budget\|Error\|error\|WRONG" $W/*.txt | head
