#!/bin/bash
# float32 rows of 65536 (the fp32 parts' misses): the library's meeting kernels in float32 layouts against the
# dispatch (the cooperative kernel) and a copy; then the four points raced and read by ncu into one store a family
W=$OUT/r; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 90 python wide_row_forms.py --out $W/rms --set library --dtypes fp32 --shapes 2048x65536,16384x65536 --rounds 3 \
  > $W/rms.txt 2>&1; echo "rms rc $?"
timeout 90 python wide_row_forms.py --out $W/add --set add-library --dtypes fp32 --shapes 2048x65536,16384x65536 \
  --rounds 3 > $W/add.txt 2>&1; echo "add rc $?"
sed -n '/% of the copy, per candidate/,$p' $W/rms.txt $W/add.txt
cd ..
for f in rmsnorm add_rmsnorm; do
  G=$W/ncu-$f; mkdir -p $G
  timeout 65 python benchmarks/race_grids.py --out $G --budget 60 --min-left 20 --no-graph \
    --part $f:shapes=2048x65536+16384x65536:fp32:triton_tuned,torch_compile,copy_bytes > /dev/null 2>&1
  gunzip $G/$f.db.gz
  BASE=$(python -c "from kprof.store import RunStore; print(RunStore('$G/$f.db', create=False).runs()['id'].iloc[0])")
  timeout 80 kprof profile $f --shape 2048x65536 --shape 16384x65536 --dtype fp32 --profiler ncu --provider triton_tuned \
    --rep-ms 10 --store $G/$f.db > $G/ncu.log 2>&1; echo "ncu $f rc $?"
  NCU=$(python -c "from kprof.store import RunStore; r=RunStore('$G/$f.db', create=False).runs()['id']; print(r.iloc[0] if r.iloc[0] != '$BASE' else r.iloc[-1])")
  kprof grid $BASE --ncu $NCU --store $G/$f.db --markdown $G/grid-$f-points-fp32-ncu.md > /dev/null 2>&1
  for r in $BASE $NCU; do kprof show $r --store $G/$f.db --csv $G/m-$r.csv > /dev/null 2>&1; done
  gzip $G/ncu.log $G/m-*.csv; rm -rf $G/$f.db $G/traces
  grep "^| [0-9]" $G/grid-$f-points-fp32-ncu.md | cut -c1-600
done
gzip $W/rms/times.csv $W/add/times.csv
tar czf $OUT/r.tgz -C $W .; rm -rf $W/*
