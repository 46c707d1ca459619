#!/bin/bash
# A second H200: the rows around the whole-row wins of ../ (512 rows of H 2048-8192, 1024 of H 4096) and 768-896 rows
# of H 6144-7168, inside the shipped whole-row rule but never raced; silu_mul in bf16 and gelu_mul in fp16
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
S=768x12288,768x14336,896x12288,640x12288,256x4096,384x4096,640x4096,768x4096,1024x4096
S=$S,256x8192,384x8192,768x8192,1280x8192,1536x8192,256x16384,384x16384,640x16384
timeout 245 python gated_placed_race.py --out $W/silu_mul --placements 2 --rounds 3 --families silu_mul \
  --shapes $S --dtypes bf16 --budget-s 220 > $W/silu_mul.log 2>&1
timeout 245 python gated_placed_race.py --out $W/gelu_mul --placements 2 --rounds 3 --families gelu_mul \
  --shapes $S --dtypes fp16 --budget-s 220 > $W/gelu_mul.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error" $W/*.log | head
