#!/bin/bash
# After the audits of kprof diff, the ops, the parsers and kprof profile: every GPU test at the commit, then kprof diff
# on real runs: two cold runs of the same code, and a run timed --timing-mode warm (not one measurement with cold)
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 300 python -m pytest -q -m gpu tests -p no:cacheprovider --durations=15 > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -3 $W/gpu_tests.txt
P="rmsnorm -s 4096x4096,64x4096,8192x5120 -d bf16 -p triton_tuned,torch_compile,torch_F --profiler none --store $W/d.db"
for what in cold-1 cold-2 warm; do
  mode=cold; [ $what = warm ] && mode=warm
  timeout 80 kprof profile $P --timing-mode $mode > $W/profile-$what.txt 2>&1; echo "profile $what rc $?"
done
RUNS=($(kprof runs --store $W/d.db 2>/dev/null | grep -o '2026[0-9]*-[0-9]*-[0-9a-f]*' | sort -u))
echo "runs: ${RUNS[*]}"
timeout 60 kprof diff ${RUNS[0]} ${RUNS[1]} --store $W/d.db --fail-on-regression --markdown $W/diff-cold-cold.md > $W/diff-cold-cold.txt 2>&1
echo "diff cold-1 cold-2 --fail-on-regression rc $?"
timeout 60 kprof diff ${RUNS[0]} ${RUNS[2]} --store $W/d.db --fail-on-regression --markdown $W/diff-cold-warm.md > $W/diff-cold-warm.txt 2>&1
echo "diff cold-1 warm --fail-on-regression rc $?"
cat $W/diff-cold-cold.txt $W/diff-cold-warm.txt | cut -c1-220
tar czf $OUT/r.tgz -C $W .
