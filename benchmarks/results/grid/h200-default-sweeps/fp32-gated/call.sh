#!/bin/bash
# silu_mul's and gelu_mul's default sweeps in float32 (the parts the call before had no time for), with what was left of
# the session's device time: the tables written straight into $OUT as each part ends
W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
G=1x22016+64x22016+4096x8192+16384x22016+8192x11008
python benchmarks/race_grids.py --out $W --budget 100 --min-left 30 --no-graph \
  --part silu_mul:shapes=$G:fp32 --part gelu_mul:shapes=$G:fp32 2>&1 | tail -4
rm -rf $W/*.db.gz $W/traces; grep -h "points:" $W/grid-*.md | cut -c1-70
