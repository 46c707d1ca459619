#!/bin/bash
# The one-row cluster kernel taken apart (--set parts); then every -m gpu test of the tree
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
(cd benchmarks && timeout 200 python wide_row_clusters.py --out $W --family rmsnorm --set parts --dtypes bf16 \
  --shapes 512x65536,8192x65536,8192x131072 > $W/rmsnorm.log 2>&1; echo "parts rc $?")
timeout 330 python -m pytest -q -m gpu tests -p no:cacheprovider -rs --durations=5 > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -3 $W/gpu_tests.txt; grep -E "^(FAILED|ERROR)" $W/gpu_tests.txt | head
tail -12 $W/rmsnorm.log
tar czf $OUT/r.tgz -C $W .
