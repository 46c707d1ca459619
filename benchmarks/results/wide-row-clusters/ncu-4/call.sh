#!/bin/bash
# ncu (--set full) of the one-row cluster kernel with and without its barrier (--set parts --ncu-once), rmsnorm bf16
# at 8192x65536: where the barrier's 27-29 points of a copy go
W=/tmp/w; rm -rf $W; mkdir -p $W
S=/tmp/src; rm -rf $S; mkdir -p $S; tar xzf .whl/head.tgz -C $S; cp -r .whl $S/; cd $S
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
$NCU --version | tail -1 >> $W/device.txt
cd benchmarks
timeout 400 $NCU --set full -k regex:cluster_kernel -f -o $W/parts python wide_row_clusters.py --out $W --set parts \
  --ncu-once --shapes 8192x65536 --dtypes bf16 > $W/ncu.log 2>&1; echo "ncu rc $?"
$NCU --import $W/parts.ncu-rep --csv --page raw > $W/raw.csv 2> $W/import.err; echo "import rc $?"
$NCU --import $W/parts.ncu-rep --page details --print-details all > $W/details.txt 2>> $W/import.err
grep "^launch" $W/ncu.log
python - "$W/raw.csv" <<'PY'
import sys, pandas as pd
raw = pd.read_csv(sys.argv[1], low_memory=False).iloc[1:]  # row 0: units
keep = ["gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__cluster_dim_x" ,
        "smsp__average_warp_latency_per_inst_issued.ratio"]
stalls = [c for c in raw.columns if c.startswith("smsp__average_warps_issue_stalled_") and c.endswith("_per_issue_active.ratio")]
cols = [c for c in keep if c in raw.columns] + stalls
t = raw[cols].apply(pd.to_numeric, errors="coerce").T
t.columns = [f"launch {i}" for i in range(t.shape[1])]
print(t[(t.max(axis=1) > 0.05)].round(3).to_string())
PY
rm -f $W/parts.ncu-rep  # tens of MB: the raw and details exports keep what was read
tar czf $OUT/r.tgz -C $W .
