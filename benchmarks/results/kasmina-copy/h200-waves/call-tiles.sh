#!/bin/bash
# the TMA kernel at 64 (and 32) channels: register caps, 1-4 warps, deeper pipelines (kasmina_copy.py --tma-tiles)
W=/tmp/w; rm -rf $W; mkdir -p $W/tiles
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/tiles/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/tiles/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/tiles/
cd benchmarks
timeout 520 python kasmina_copy.py --out $W/tiles --shapes 512x1000x64,256x1000x64,512x4000x64,64x4000x64,512x1000x32 \
  --dtypes bf16 --tiles 0x0 --no-floors --tma --rounds 10 \
  --tma-tiles 16x2x4x128,16x2x4x96,16x2x4x112,16x2x6x112,16x2x8x128,16x1x4,16x1x6,16x1x8,16x1x4x96,32x2x4x128,16x4x4,32x4x4 \
  > $W/tiles/race.txt 2>&1
echo "race rc $?"; grep -A40 "^| point\|^| shape" $W/tiles/race.txt | head -80; ls $W/tiles
tar czf $OUT/r.tgz -C $W .
