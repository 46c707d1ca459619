#!/bin/bash
# The one-row cluster kernel's meeting with one release fence a CTA (--set fence) against the meeting as raced and
# the kernel without it, rmsnorm bf16 at parts-3's points; then ncu (--set full) of the 9 launches at 8192x65536
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
cd benchmarks
timeout 300 python wide_row_clusters.py --out $W --family rmsnorm --set fence --dtypes bf16 \
  --shapes 512x65536,8192x65536,8192x131072 > $W/rmsnorm.log 2>&1; echo "fence rc $?"
timeout 200 $NCU --set full -k regex:cluster_kernel -f -o $W/fence python wide_row_clusters.py --out $W --set fence \
  --ncu-once --shapes 8192x65536 --dtypes bf16 > $W/ncu.log 2>&1; echo "ncu rc $?"
$NCU --import $W/fence.ncu-rep --csv --page raw > $W/raw.csv 2> $W/import.err; echo "import rc $?"
grep -E "left out|failed" $W/rmsnorm.log; tail -12 $W/rmsnorm.log; grep "^launch" $W/ncu.log
python - "$W/raw.csv" <<'PY'
import sys, pandas as pd
raw = pd.read_csv(sys.argv[1], low_memory=False).iloc[1:]  # row 0: units
cols = ["gpu__time_duration.sum", "dram__bytes.sum.per_second", "smsp__average_warp_latency_per_inst_issued.ratio",
        "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"]
t = raw[[c for c in cols if c in raw.columns]].apply(pd.to_numeric, errors="coerce").T
t.columns = [f"launch {i}" for i in range(t.shape[1])]
print(t.round(3).to_string())
PY
rm -f $W/fence.ncu-rep  # tens of MB: the raw export keeps what was read
tar czf $OUT/r.tgz -C $W .
