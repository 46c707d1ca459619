#!/bin/bash
# A probe, no rule drawn: silu_mul's and gelu_mul's configs (gated_placed_race.py) at 1280 and 3072 rows (past the
# H200's gated classes, which end at 1056 rows; not grid rows) of H 4096-14336, whether the ops lose there as
# rmsnorm and add_rmsnorm did.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 215 python gated_placed_race.py --out $W/silu_mul --placements 2 --rounds 3 --families silu_mul \
  --shapes 1280x28672,3072x28672,1280x16384,3072x16384,1280x8192,3072x8192,1280x12288,3072x12288 \
  --dtypes bf16,fp16 --budget-s 195 > $W/silu_mul.log 2>&1
timeout 110 python gated_placed_race.py --out $W/gelu_mul --placements 2 --rounds 3 --families gelu_mul \
  --shapes 1280x28672,3072x28672,1280x16384,3072x16384 --dtypes bf16,fp16 --budget-s 95 > $W/gelu_mul.log 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -h "budget\|WRONG\|Error\|error" $W/*.log | head
grep -c "^==" $W/*.log
