#!/bin/bash
# ncu at the `models` points whose targets were missed without a reading (swiglu's four prefill points, rmsnorm_linear's
# three), into the stores of the runs that judged them, then `kprof grid RUN --ncu`; and what swiglu's plain op races
# at its points past 1.02x (swiglu_races.py). The stores travel in .whl/stores/ (the device gets no results folder's
# gzipped stores: they were replaced by metrics CSVs).
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
gunzip -c .whl/stores/swiglu.db.gz > /tmp/swiglu.db; gunzip -c .whl/stores/rmsnorm_linear.db.gz > /tmp/rmsnorm_linear.db
gpu0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout 60 python benchmarks/results/grid/h200-models/ncu/swiglu_races.py > $W/swiglu_races.txt 2>&1
  timeout 300 kprof profile swiglu --shape 3000x2048x8192,4096x1536x8960,5000x4096x14336,2048x2048x768 --dtype bf16 \
    --profiler ncu --provider triton_tuned_prepared,cublas_gate_up --rep-ms 10 --store /tmp/swiglu.db > $W/ncu-swiglu.log 2>&1
  kprof grid 20261130-224626-c24b --ncu latest --store /tmp/swiglu.db --markdown $W/grid-swiglu-models-bf16-ncu.md > /dev/null 2>&1
  kprof show latest --store /tmp/swiglu.db --csv $W/swiglu-ncu-metrics.csv > /dev/null 2>&1
}
gpu1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 360 kprof profile rmsnorm_linear --shape 16x3584x4608,3000x3584x4608,4096x2048x3072 --dtype bf16 --profiler ncu \
    --provider triton_split_k_prepared,triton_rstd_epilogue_prepared,cublas_xw --rep-ms 10 --store /tmp/rmsnorm_linear.db \
    > $W/ncu-rmsnorm_linear.log 2>&1
  kprof grid 20261130-231209-d231 --ncu latest --store /tmp/rmsnorm_linear.db \
    --markdown $W/grid-rmsnorm_linear-models-bf16-ncu.md > /dev/null 2>&1
  kprof show latest --store /tmp/rmsnorm_linear.db --csv $W/rmsnorm_linear-ncu-metrics.csv > /dev/null 2>&1
}
gpu0 & gpu1 & wait
gzip $W/*.log $W/*.csv
cd $W && tar czf $OUT/r.tgz .
cat $W/swiglu_races.txt | grep -v Warn
for f in $W/grid-*-ncu.md; do echo "== $(basename $f)"; grep -E "\*\*no\*\*|not judged" $f | cut -d'|' -f2,12,16,17 | cut -c1-400; done
