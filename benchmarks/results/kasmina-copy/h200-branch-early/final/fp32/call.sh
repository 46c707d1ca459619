#!/bin/bash
# kasmina's main grid part in fp32 with the shipped tables (the next call on the same machine, ../call.sh's budget spent)
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
python benchmarks/race_grids.py --out $W --budget 170 --min-left 60 --no-graph \
  --part kasmina:main:fp32:triton_telemetry,torch_compile,copy_x,copy_through_ids 2>&1 | tail -3
gunzip $W/kasmina.db.gz
for r in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/kasmina.db', create=False).runs()['id']))"); do
  kprof show $r --store $W/kasmina.db --csv $W/m-$r.csv > /dev/null 2>&1; done
rm -rf $W/*.db $W/traces; gzip $W/m-*.csv
tar czf $OUT/r.tgz -C $W .
