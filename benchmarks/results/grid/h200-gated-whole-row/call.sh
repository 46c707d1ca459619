#!/bin/bash
# One H200: where the gated ops' dispatch ran 1.05-1.08x kprof's own whole-row kernel (512 rows of H 2048-8192) and
# around it, every launch config of silu_mul and gelu_mul raced at 2 places in memory beside triton_tuned,
# torch.compile and Liger (from its wheel); add_rmsnorm 512x6144, left uncertain at 1.044x torch.compile in fp16
W=/tmp/w; mkdir -p $W
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm,power.limit --format=csv > $W/device.txt
python -m pip install -q --no-deps --no-build-isolation -e . > /dev/null 2>&1
python -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl > /dev/null 2>&1 || echo "no liger"
python -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $W/device.txt
export KPROF_GIT_COMMIT=$(cat .whl/commit.txt); cp .whl/commit.txt $W/
cd benchmarks
S=512x8192,512x16384,1024x8192,1024x16384,768x16384,512x4096,2048x8192,2048x6144
for fam in silu_mul gelu_mul; do
  timeout 230 python gated_placed_race.py --out $W/$fam --placements 2 --rounds 3 --families $fam \
    --shapes $S --dtypes bf16,fp16 --budget-s 200 > $W/$fam.log 2>&1
done
timeout 50 python add_rmsnorm_placed_race.py --out $W/add_rmsnorm --placements 2 --rounds 3 \
  --shapes 512x6144,512x5120 --dtypes fp16,bf16 --budget-s 30 > $W/add_rmsnorm.log 2>&1
cd $W && tar czf $OUT/r.tgz .
for f in silu_mul gelu_mul add_rmsnorm; do echo "== $f"; grep -A4 "^==\|WRONG\|Error\|budget" $W/$f.log | grep -v "Warn\|_warn" | cut -c1-90; done
