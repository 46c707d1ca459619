#!/bin/bash
# The slot meeting with x's next chunks staged in shared memory (wide_row_forms.py --set staged) against the library's
# slotted kernel, a copy and the dispatch; first the kasmina GPU tests of the tree (commits not run on a GPU before)
W=/tmp/w; rm -rf $W; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
timeout 150 python -m pytest -q -m gpu tests/kernels/test_kasmina_stacked.py tests/kernels/test_kasmina_tma.py \
  tests/kernels/test_ops.py tests/kernels/test_providers_launch_as_ops.py tests/kernels/test_kasmina_stats.py \
  tests/kernels/test_catalog_behaviour.py -k "kasmina or stacked or tma" -p no:cacheprovider > $W/gpu_tests.txt 2>&1
echo "gpu tests rc $?"; tail -1 $W/gpu_tests.txt
cd benchmarks
timeout ${RACE_LIMIT:-330} python wide_row_forms.py --out $W/race --set staged --dtypes bf16,fp16 --rounds 5 \
  --shapes 512x65536,512x131072,2048x131072,8192x65536 > $W/race.txt 2>&1
echo "race rc $?"; sed -n '/% of the copy, per candidate/,$p' $W/race.txt; grep -h "left out\|registers a thread\|Error" $W/race.txt | sort | uniq -c | head -30
tar czf $OUT/r.tgz -C $W .
