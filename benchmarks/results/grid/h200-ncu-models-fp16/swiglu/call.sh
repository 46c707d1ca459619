#!/bin/bash
# ncu at swiglu's `models` points whose 1.03x target was missed with no reading of the kernel that ran there
# (2048x2048x768 in bf16 and fp16, 3000x2048x8192, 4096x1536x8960 and 5000x4096x14336 in fp16), into the store of
# the runs that judged them (../../../swiglu-wave-tiles/grid-final/, kernel code 2c55b5f1; the store travels in
# .whl/stores/), then `kprof grid RUN --ncu latest` for each dtype.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
gunzip -c .whl/stores/swiglu-final.db.gz > /tmp/swiglu.db
P=triton_tuned_prepared,cublas_gate_up
timeout 150 kprof profile swiglu --shape 2048x2048x768 --dtype bf16 --profiler ncu --provider $P --rep-ms 10 \
  --store /tmp/swiglu.db > $W/ncu-bf16.log 2>&1
kprof grid 20261201-012036-3a05 --ncu latest --store /tmp/swiglu.db --markdown $W/grid-swiglu-models-bf16-ncu.md > /dev/null 2>&1
timeout 300 kprof profile swiglu --shape 2048x2048x768,3000x2048x8192,4096x1536x8960,5000x4096x14336 --dtype fp16 \
  --profiler ncu --provider $P --rep-ms 10 --store /tmp/swiglu.db > $W/ncu-fp16.log 2>&1
kprof grid 20261201-012216-7975 --ncu latest --store /tmp/swiglu.db --markdown $W/grid-swiglu-models-fp16-ncu.md > /dev/null 2>&1
kprof show latest --store /tmp/swiglu.db --csv $W/swiglu-ncu-fp16-metrics.csv > /dev/null 2>&1
gzip $W/*.log $W/*.csv
cd $W && tar czf $OUT/r.tgz .
for f in $W/grid-*-ncu.md; do echo "== $(basename $f)"; grep -E "\*\*no\*\*|not judged|2048x2048x768" $f | cut -d'|' -f2,12,16,17 | cut -c1-500; done
