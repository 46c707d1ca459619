#!/bin/bash
# kprof grid on real GPU runs after the timing rule: rmsnorm bf16 at 3 points, one run declared cold and one warm
# (every mode is measured; the declared one ranks), then `kprof grid` of each run alone and of both together; then
# every -m gpu test of the tree
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
P="-s 512x65536,2048x8192,8192x4096 -d bf16 -p triton_tuned,triton_looped,torch_compile,copy_bytes --profiler none"
for mode in cold warm; do
  timeout 120 kprof profile rmsnorm $P --timing-mode $mode --store $W/k.db --report $W/report-$mode.md \
    > $W/profile-$mode.log 2>&1; echo "profile $mode rc $?"
done
ids=$(python -c "import sqlite3; print(' '.join(r[0] for r in sqlite3.connect('$W/k.db').execute('SELECT id FROM runs ORDER BY created_at')))")
set -- $ids; echo "runs: $ids" | tee $W/runs.txt
kprof grid $1 --store $W/k.db --markdown $W/grid-cold.md > /dev/null 2> $W/grid-cold.err; echo "grid cold rc $?"
kprof grid $2 --store $W/k.db --markdown $W/grid-warm.md > /dev/null 2> $W/grid-warm.err; echo "grid warm rc $?"
kprof grid $1 $2 --store $W/k.db --markdown $W/grid-both.md > /dev/null 2> $W/grid-both.err; echo "grid both rc $?"
gzip -k $W/k.db
timeout 300 python -m pytest -q -m gpu tests -p no:cacheprovider -rs --durations=5 > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -3 $W/gpu_tests.txt; grep -E "^(FAILED|ERROR)" $W/gpu_tests.txt | head
for f in cold warm both; do echo "== $f"; head -3 $W/grid-$f.md | cut -c1-400; grep -E "^\| [0-9]" $W/grid-$f.md | cut -c1-420; done
rm $W/k.db; tar czf $OUT/r.tgz -C $W .
