#!/bin/bash
# rmsnorm_linear's fp16 `models` prefill points that ../call.sh's race did not reach before its budget (2048x5120x7168,
# 3000x3584x4608, 4096x2048x3072, 5000x8192x10240): raced whole, every provider, then ncu at the three whose 1.03x
# target h200-models/fp16/ missed, and `kprof grid RUN --ncu latest`.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
newest() { python -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select id from runs order by created_at desc limit 1').fetchone()[0])" $1; }
python benchmarks/race_grids.py --out $W/rl --budget 300 --min-left 30 --no-graph \
  --part "rmsnorm_linear:shapes=2048x5120x7168+3000x3584x4608+4096x2048x3072+5000x8192x10240:fp16" > $W/race.txt 2>&1
R=$W/rl/rmsnorm_linear.db; gunzip -f $R.gz 2>/dev/null; RUN=$(newest $R); echo "timed run $RUN" >> $W/race.txt
timeout 170 kprof profile rmsnorm_linear --shape 3000x3584x4608,4096x2048x3072,5000x8192x10240 --dtype fp16 \
  --profiler ncu --provider triton_rstd_epilogue_prepared,triton_tuned,cublas_xw --rep-ms 10 --store $R > $W/ncu.log 2>&1
kprof grid $RUN --ncu latest --store $R --markdown $W/grid-rmsnorm_linear-prefill-fp16-ncu.md > /dev/null 2>&1
rm -rf $W/rl/traces; gzip $W/*.log $R
cd $W && tar czf $OUT/r.tgz .
tail -3 $W/race.txt
for f in $W/grid-*-ncu.md $W/rl/grid-*.md; do echo "== $(basename $f)"; grep -h "points:" $f | cut -c1-90; grep "^| [0-9]" $f | cut -d'|' -f2-12,16,17 | cut -c1-520; done
