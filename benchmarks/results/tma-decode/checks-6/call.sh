#!/bin/bash
# After the TMA decode kernel shipped: its GPU tests (the plan's kept descriptors, two input sets taking turns); the
# prepared object's host time per call on its new plan against the split-K plan it ran before; the fp16 grid points
# the last call's budget cut
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 120 python -m pytest -q -m gpu tests/kernels/rmsnorm_linear tests/kernels/test_ops.py -p no:cacheprovider -rs > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -3 $W/gpu_tests.txt; grep -E "^(FAILED|ERROR)" $W/gpu_tests.txt | head
(cd benchmarks && timeout 120 python rmsnorm_linear_decode_designs.py --host --out $W --rows 1,16 --dtypes bf16,fp16 \
  --points 3584x4608,2048x4608 --rounds 4 > $W/host.txt 2>&1; echo "host rc $?")
grep -v -i warn $W/host.txt
P=16x3584x4608+1x3584x4608+4x4096x4608+8x5120x5120+16x2048x4608+16x8192x4608
timeout 200 python benchmarks/race_grids.py --out $W/grid --budget 195 --min-left 20 --no-graph \
  --part "rmsnorm_linear:shapes=$P:fp16" > $W/grid.txt 2>&1; echo "grid rc $?"
rm -rf $W/grid/traces; cat $W/grid.txt | tail -3
for f in $W/grid/grid-*.md; do echo "$(basename $f): $(grep -h 'points:' $f | cut -c1-160)"; done
tar czf $OUT/r.tgz -C $W .
