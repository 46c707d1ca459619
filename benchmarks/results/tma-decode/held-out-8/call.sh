#!/bin/bash
# Held out: K 3072 (Llama-3.2-3B's hidden size, between the K raced) x N 5120 (its fused QKV width) and x 4608, at
# 1/4/8/16 rows, the designs race with the shipped kernel as the prepared object; rmsnorm_linear's GPU tests after the
# strided-bias change
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
(cd benchmarks && timeout 120 python rmsnorm_linear_decode_designs.py --out $W --rows 1,4,8,16 --dtypes bf16,fp16 \
  --only tma --points 3072x5120,3072x4608 > $W/race.txt 2>&1; echo "race rc $?")
grep -v -i warn $W/race.txt | cut -c1-150
timeout 120 python -m pytest -q -m gpu tests/kernels/rmsnorm_linear -p no:cacheprovider -rs > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -2 $W/gpu_tests.txt; grep -E "^(FAILED|ERROR)" $W/gpu_tests.txt | head
tar czf $OUT/r.tgz -C $W .
