#!/bin/bash
# swiglu's TMA kernel on the weights as given (benchmarks/swiglu_paired_probe.py): two weight descriptors against the
# interleaved pair, the shipped launch, the plain op and cuBLAS, bf16 at six prefill shapes and fp16 at three, one H200.
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=index,name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
timeout 330 python swiglu_paired_probe.py --out $W --dtype bf16 --rounds 5 \
  --shapes 5000x4096x14336,2048x4096x5504,2048x8192x28672,8192x8192x11008,3000x2048x8192,1000x4096x14336 > $W/bf16.txt 2>&1
timeout 150 python swiglu_paired_probe.py --out $W --dtype fp16 --rounds 5 \
  --shapes 5000x4096x14336,2048x4096x5504,8192x8192x11008 > $W/fp16.txt 2>&1
cd $W && tar czf $OUT/r.tgz .
grep -v Warn $W/bf16.txt $W/fp16.txt | grep -v _warn_once
