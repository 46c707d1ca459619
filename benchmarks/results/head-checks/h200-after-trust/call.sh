#!/bin/bash
# After the ops and diff trust fixes: the host cost of the ops at the tree before (.whl/old.tgz, 518f5b5) and after
# (.whl/head.tgz, the commit in .whl/commit.txt), then every GPU test at the commit
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
cp .whl/commit.txt $W/
for tree in old head; do
  S=/tmp/src-$tree; rm -rf $S; mkdir -p $S; tar xzf .whl/$tree.tgz -C $S; cp -r .whl $S/
done
for tree in old head; do
  cd /tmp/src-$tree; python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
  cd benchmarks; timeout 110 python ops_host_cost.py --out $W/host-$tree --rows 1,8 --rounds 5 > $W/host-$tree.txt 2>&1
  echo "host cost $tree rc $?"
done
cd /tmp/src-head; python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt)
timeout 330 python -m pytest -q -m gpu tests -p no:cacheprovider --durations=15 > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -4 $W/gpu_tests.txt
paste <(grep '^| ' $W/host-old.txt | cut -d'|' -f2-5) <(grep '^| ' $W/host-head.txt | cut -d'|' -f5) | head -60
tar czf $OUT/r.tgz -C $W .
