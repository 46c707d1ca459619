#!/bin/bash
# A fourth H200: the few gated rows of the widest H (2H 32768-262144) raced again with Liger declaring the H it refuses
# (wide-fp16/'s race stopped at 1x262144, where Liger raised); both families, bf16 and fp16
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
for fam in gelu_mul silu_mul; do
  timeout 100 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes 1x262144,8x262144,8x131072,2x131072,64x32768 --dtypes bf16,fp16 --budget-s 85 > $W/$fam.log 2>&1
done
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error" $W/*.log | head
