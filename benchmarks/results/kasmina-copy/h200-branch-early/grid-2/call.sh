#!/bin/bash
# the stacked kernel's EARLY where the bf16/fp32 grid read slower than its table before (against its state-first copy),
# then kasmina's main grid part in fp16 and the default part in every dtype
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
(cd benchmarks
PYTHONPATH=. timeout 100 python results/kasmina-copy/h200-stacked-early/probe.py 1x2000x64,1x3000x64,1x4000x64,1x8000x64,1x4000x48 fp32 12 > $W/stacked-fp32.txt 2>&1
echo "stacked fp32 rc $?"
PYTHONPATH=. timeout 100 python results/kasmina-copy/h200-stacked-early/probe.py 8x4000x32,8x4000x64,8x4000x128,5x4000x64,8x3000x64,4x4000x64 bf16,fp16 12 > $W/stacked-16.txt 2>&1
echo "stacked 16-bit rc $?"; grep -h "^| [bf]" $W/stacked-*.txt)
P=triton_telemetry,torch_compile,copy_x,copy_through_ids
python benchmarks/race_grids.py --out $W --budget 330 --min-left 60 --no-graph \
  --part kasmina:main:fp16:$P --part kasmina:default:bf16:$P --part kasmina:default:fp16:$P --part kasmina:default:fp32:$P 2>&1 | tail -6
gunzip $W/kasmina.db.gz
for r in $(python -c "from kprof.store import RunStore; print(' '.join(RunStore('$W/kasmina.db', create=False).runs()['id']))"); do
  kprof show $r --store $W/kasmina.db --csv $W/m-$r.csv > /dev/null 2>&1; done
rm -rf $W/*.db $W/traces; gzip $W/m-*.csv
tar czf $OUT/r.tgz -C $W .; ls $W
