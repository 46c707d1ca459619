#!/bin/bash
# rmsnorm's two fp32 wide points through the slotted kernel: raced, then read by ncu into the same store
G=$OUT/r; mkdir -p $G
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $G/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $G/
timeout 50 python benchmarks/race_grids.py --out $G --budget 45 --min-left 20 --no-graph \
  --part rmsnorm:shapes=2048x65536+16384x65536:fp32:triton_tuned,torch_compile,copy_bytes > /dev/null 2>&1
gunzip $G/rmsnorm.db.gz
BASE=$(python -c "from kprof.store import RunStore; print(RunStore('$G/rmsnorm.db', create=False).runs()['id'].iloc[0])")
timeout 75 kprof profile rmsnorm --shape 2048x65536 --shape 16384x65536 --dtype fp32 --profiler ncu --provider triton_tuned \
  --rep-ms 10 --store $G/rmsnorm.db > $G/ncu.log 2>&1; echo "ncu rc $?"
NCU=$(python -c "from kprof.store import RunStore; r=RunStore('$G/rmsnorm.db', create=False).runs()['id']; print(r.iloc[0] if r.iloc[0] != '$BASE' else r.iloc[-1])")
kprof grid $BASE --ncu $NCU --store $G/rmsnorm.db --markdown $G/grid-rmsnorm-points-fp32-ncu.md > /dev/null 2>&1
for r in $BASE $NCU; do kprof show $r --store $G/rmsnorm.db --csv $G/m-$r.csv > /dev/null 2>&1; done
gzip $G/ncu.log $G/m-*.csv; rm -rf $G/rmsnorm.db $G/traces
grep "^| [0-9]" $G/grid-rmsnorm-points-fp32-ncu.md | cut -c1-700
tar czf $OUT/r.tgz -C $G .
