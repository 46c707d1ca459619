#!/bin/bash
# ncu at the `models` points whose targets were missed with no ncu reading in their latest tables: swiglu's
# 2048x2048x768 (bf16, fp16), 3000x2048x8192, 4096x1536x8960, 5000x4096x14336 (fp16), into the store of the runs
# that judged them (../../swiglu-wave-tiles/grid-final/, carried in .whl/stores/); rmsnorm_linear's fp16 `models`
# part raced again (its table's store was not kept), then ncu at its four misses of h200-models/fp16/
# (16x3584x4608, 3000x3584x4608, 4096x2048x3072, 5000x8192x10240). Then `kprof grid RUN --ncu latest` per run.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
newest() { python -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select id from runs order by created_at desc limit 1').fetchone()[0])" $1; }
S=$W/swiglu.db; gunzip -c .whl/stores/swiglu-final.db.gz > $S
P=triton_tuned_prepared,cublas_gate_up
timeout 120 kprof profile swiglu --shape 2048x2048x768 --dtype bf16 --profiler ncu --provider $P --rep-ms 10 --store $S \
  > $W/ncu-swiglu-bf16.log 2>&1
kprof grid 20261201-012036-3a05 --ncu latest --store $S --markdown $W/grid-swiglu-models-bf16-ncu.md > /dev/null 2>&1
timeout 200 kprof profile swiglu --shape 2048x2048x768,3000x2048x8192,4096x1536x8960,5000x4096x14336 --dtype fp16 \
  --profiler ncu --provider $P --rep-ms 10 --store $S > $W/ncu-swiglu-fp16.log 2>&1
kprof grid 20261201-012216-7975 --ncu latest --store $S --markdown $W/grid-swiglu-models-fp16-ncu.md > /dev/null 2>&1
python benchmarks/race_grids.py --out $W/rl --budget 170 --min-left 30 --no-graph --part rmsnorm_linear:models:fp16 \
  > $W/race-rmsnorm_linear.txt 2>&1
R=$W/rl/rmsnorm_linear.db; gunzip -f $R.gz 2>/dev/null; RUN=$(newest $R); echo "timed run $RUN" >> $W/race-rmsnorm_linear.txt
timeout 150 kprof profile rmsnorm_linear --shape 16x3584x4608,3000x3584x4608,4096x2048x3072,5000x8192x10240 --dtype fp16 \
  --profiler ncu --provider triton_split_k_prepared,triton_rstd_epilogue_prepared,triton_tuned,cublas_xw --rep-ms 10 \
  --store $R > $W/ncu-rmsnorm_linear-fp16.log 2>&1
kprof grid $RUN --ncu latest --store $R --markdown $W/grid-rmsnorm_linear-models-fp16-ncu.md > /dev/null 2>&1
rm -rf $W/rl/traces; gzip $W/*.log $S $R
cd $W && tar czf $OUT/r.tgz .
tail -3 $W/race-rmsnorm_linear.txt
for f in $W/grid-*-ncu.md $W/rl/grid-*.md; do echo "== $(basename $f)"; grep -h "points:" $f | cut -c1-90; grep -E "\*\*no\*\*|not judged" $f | cut -d'|' -f2,12,16,17 | cut -c1-420; done
