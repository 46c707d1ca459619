#!/usr/bin/env bash
# The issue-7 sweeps on a GPU machine: rmsnorm one-row over BLOCK_N x num_warps for N in {1024, 4096, 8192},
# the same under ncu (achieved occupancy) at N = 4096, and the swiglu tiled version over tile sizes and
# num_stages at 2048x2048x5504; plus one ordinary profile showing attribution of an autotuned version.
#   benchmarks/sweeps_h100.sh OUT_DIR [rmsnorm|swiglu|ncu|all]
set -euo pipefail
OUT=${1:?usage: benchmarks/sweeps_h100.sh OUT_DIR [rmsnorm|swiglu|ncu|all]}
STEP=${2:-all}
mkdir -p "$OUT"

if [[ $STEP == rmsnorm || $STEP == all ]]; then
kprof sweep rmsnorm --version triton_one_row --param BLOCK_N=1024..16384 --param num_warps=1,2,4,8,16,32 \
  --shapes 16384x1024,16384x4096,16384x8192 --dtypes bf16 --no-graph \
  --report "$OUT/rmsnorm_one_row_report.md" --guide "$OUT/rmsnorm_one_row_guide.md" > /dev/null
kprof show latest --csv "$OUT/rmsnorm_one_row_sweep.csv" > /dev/null
fi

if [[ $STEP == swiglu || $STEP == all ]]; then
kprof sweep swiglu --version triton_tiled --param BLOCK_M=64,128 --param BLOCK_N=64,128,256 --param BLOCK_K=32,64 \
  --param GROUP_M=8 --param num_warps=4,8 --param num_stages=2,3,4,5 \
  --shapes 2048x2048x5504 --dtypes bf16 --no-graph \
  --report "$OUT/swiglu_tiled_report.md" --guide "$OUT/swiglu_tiled_guide.md" > /dev/null
kprof show latest --csv "$OUT/swiglu_tiled_sweep.csv" > /dev/null
fi

if [[ $STEP == ncu || $STEP == all ]]; then
kprof sweep rmsnorm --version triton_one_row --param BLOCK_N=4096,8192 --param num_warps=1,2,4,8,16,32 \
  --shapes 16384x4096 --dtypes bf16 --no-graph --profiler ncu \
  --guide "$OUT/rmsnorm_one_row_ncu_guide.md" > /dev/null
kprof show latest --csv "$OUT/rmsnorm_one_row_ncu_sweep.csv" > /dev/null
fi
