#!/bin/bash
# swiglu's `models` grid part at the commit that ships (the kernel without LOWER_M compiles to 0b51a22's PTX again;
# ../confirm/'s grid ran the loads in the taller tiles' order at every point): race_grids.py, every provider, bf16
# then fp16 on one H200 within 230 s.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
python benchmarks/race_grids.py --out $W/grid --budget 230 --min-left 30 --no-graph \
  --part swiglu:models:bf16 --part swiglu:models:fp16 > $W/grid-race.txt 2>&1
rm -rf $W/grid/traces
cd $W && tar czf $OUT/r.tgz .
cat $W/grid-race.txt | tail -8
for f in $W/grid/grid-*.md; do echo "$(basename $f)"; grep -h "2048x2048x768\|points:" $f | cut -c1-200; done
