#!/bin/bash
# The split-K kernel's ending with the folded weight loaded by TMA (benchmarks/decode_tma_tickets.py) against the
# shipped kernel on the fold, the prepared object and cuBLAS, bf16 at six decode points, one H200.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 420 python decode_tma_tickets.py --out $W --dtype bf16 --rounds 10 > $W/tickets.txt 2>&1
gzip $W/*.csv
cd $W && tar czf $OUT/r.tgz .
grep -v "Warn\|_warn_once" $W/tickets.txt | tail -80
