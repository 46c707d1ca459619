#!/bin/bash
# rmsnorm's configs (one-block and two-pass, --two-pass) at 1280-4096 rows of 3072-5120 columns and 1280-1792 rows of
# 6144 and 8192, past one wave of the mid bands' programs, where the op ran 1.06-1.18x the fastest config at 1280x4096,
# 1536x3072 and 3072x4096 (behind torch.compile or Liger-Kernel). The known gaps first, so a spent budget drops the rest.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 555 python rmsnorm_placed_race.py --out $W/rmsnorm --two-pass --placements 2 --rounds 3 \
  --shapes 1280x4096,1536x3072,3072x4096,1280x3072,1536x4096,1792x3072,1792x4096,2560x3072,2560x4096,3584x3072,3584x4096,4096x3072,4096x4096,2048x3072,1280x5120,1536x5120,1792x5120,2560x5120,3584x5120,1280x6144,1536x6144,1280x8192,1536x8192,1792x8192 \
  --dtypes fp16,bf16 --budget-s 530 > $W/rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
