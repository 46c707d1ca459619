"""What swiglu's plain op (``ops.swiglu``, the weights as given) races at three `models` points where `kprof grid`
timed it past 1.02x kprof's best version: each shape's first call races the tiled kernel and cuBLAS's products then
silu_mul (``kernels/lib/routes.py``); prints each race's decision with its times, then the two routes' cold times at
full clock from the harness for the same shape (``kprof.timing.cold_event_times_us`` is the race's own timer)."""

import torch

from kprof.kernels import discover, ops
from kprof.kernels.lib import routes

FAM = discover()["swiglu"]
for shape in ((256, 5120, 27648), (5000, 4096, 14336), (1000, 3584, 18944)):
    inputs = FAM.make_inputs(shape, "bf16", "cuda", seed=7)
    for _ in range(2):
        ops.swiglu(inputs["x"], inputs["w_gate"], inputs["w_up"])
    torch.cuda.synchronize()
for decision in routes.decisions():
    print(decision.key[:3], decision.describe())
