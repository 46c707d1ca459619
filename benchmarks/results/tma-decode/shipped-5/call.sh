#!/bin/bash
# The TMA decode kernel shipped (ops.PreparedRMSNormLinear takes it on an H200 at 1-16 rows x K 2048-8192 x N
# 4608-5120): every GPU test from the commit's tree; the designs race again, its [prepared op] now the kernel; the grid
# points it serves and held-out ones around them, every rmsnorm_linear provider, bf16 and fp16
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 320 python -m pytest -q -m gpu tests -p no:cacheprovider --durations=10 > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -3 $W/gpu_tests.txt; grep -E "^(FAILED|ERROR)" $W/gpu_tests.txt | head
(cd benchmarks && timeout 90 python rmsnorm_linear_decode_designs.py --out $W --rows 1,16 --dtypes bf16,fp16 --only tma \
  --points 3584x4608,4096x4608,2048x4608,8192x4608,3584x5120,4096x6144,2048x5504 > $W/race.txt 2>&1; echo "race rc $?")
grep -v -i warn $W/race.txt | cut -c1-160
P=16x3584x4608+1x3584x4608+4x4096x4608+8x5120x5120+16x2048x4608+16x8192x4608
timeout 170 python benchmarks/race_grids.py --out $W/grid --budget 165 --min-left 20 --no-graph \
  --part "rmsnorm_linear:shapes=$P:bf16" --part "rmsnorm_linear:shapes=$P:fp16" > $W/grid.txt 2>&1; echo "grid rc $?"
rm -rf $W/grid/traces; cat $W/grid.txt | tail -5
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-160)"; done
tar czf $OUT/r.tgz -C $W .
