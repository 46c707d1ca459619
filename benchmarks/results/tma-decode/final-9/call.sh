#!/bin/bash
# The session's last commit: every -m gpu test from its tree (the versions on prepared weights now share one runner)
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 290 python -m pytest -q -m gpu tests -p no:cacheprovider -rs --durations=5 > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -3 $W/gpu_tests.txt; grep -E "^(FAILED|ERROR)" $W/gpu_tests.txt | head
tar czf $OUT/r.tgz -C $W .
