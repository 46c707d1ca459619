#!/bin/bash
# rmsnorm's and add_rmsnorm's float32 configurations at the grid's other widths (2048, 3072, 6144, 7168, 16384 columns),
# where the fp32 parts never went: norm_fp32_rows.py (with two-pass chunks up to 16384), Liger from its wheel
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
SHAPES=${SHAPES:-2048x16384,16384x16384,8192x6144,8192x7168,512x6144,32768x6144,8192x16384}
for fam in rmsnorm add_rmsnorm; do
  mkdir -p $W/$fam
  timeout ${RACE_LIMIT:-270} python norm_fp32_rows.py --out $W/$fam --families $fam --shapes $SHAPES --rounds 6 \
    > $W/$fam/race.txt 2>&1
  echo "$fam race rc $?"
done
cd ..
for fam in rmsnorm add_rmsnorm; do grep -h "^==\|^  \[\|^  [a-z_]* [0-9]* x" $W/$fam/race.txt | awk '/^==/{n=0} {n++; if (n<=6) print}'; done
tar czf $OUT/r.tgz -C $W .
