#!/bin/bash
# rmsnorm's and add_rmsnorm's float32 configurations at rows of 4096 and 8192 columns (norm_fp32_rows.py), Liger from
# its wheel; then the kasmina point without an ncu reading (8x1000x64 bf16): raced, then read by ncu into its store
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout ${RACE_LIMIT:-330} python norm_fp32_rows.py --out $W --shapes 2048x4096,16384x4096,2048x8192,16384x8192,8192x4096 \
  --rounds 8 > $W/race.txt 2>&1
echo "race rc $?"; grep -h "^==\|^  \[\|inductor" $W/race.txt | head -60
cd ..
K=$W/kasmina; mkdir -p $K
timeout 150 python benchmarks/race_grids.py --out $K --budget 140 --min-left 30 --no-graph \
  --part kasmina:shapes=8x1000x64:bf16:triton_telemetry,torch_compile,copy_x,copy_through_ids > /dev/null 2>&1
gunzip $K/kasmina.db.gz 2>/dev/null
BASE=$(python -c "from kprof.store import RunStore; print(RunStore('$K/kasmina.db', create=False).runs()['id'].iloc[0])")
timeout 90 kprof profile kasmina --shape 8x1000x64 --dtype bf16 --profiler ncu --provider triton_telemetry --rep-ms 10 \
  --store $K/kasmina.db > $K/ncu.log 2>&1; echo "ncu rc $?"
NCU=$(python -c "from kprof.store import RunStore; r=RunStore('$K/kasmina.db', create=False).runs()['id']; print(r.iloc[0] if r.iloc[0] != '$BASE' else r.iloc[-1])")
kprof grid $BASE --ncu $NCU --store $K/kasmina.db --markdown $K/grid-kasmina-points-bf16-ncu.md > /dev/null 2>&1
for r in $BASE $NCU; do kprof show $r --store $K/kasmina.db --csv $K/m-$r.csv > /dev/null 2>&1; done
gzip $K/ncu.log $K/m-*.csv; rm -rf $K/kasmina.db $K/traces
grep "8x1000x64" $K/grid-kasmina-points-bf16-ncu.md | cut -c1-900
tar czf $OUT/r.tgz -C $W .
