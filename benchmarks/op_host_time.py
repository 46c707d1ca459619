"""Diagnostic: host time per call of the ops API's prepared matrix ops at prefill sizes, against the GPU time of
their kernels, and where rmsnorm_linear's prepared path spends it (its steps timed one by one).

    python benchmarks/op_host_time.py --out DIR [--shapes 2048x2048x5504,...] [--calls 200] [--descriptors-per-call]

A model's host must enqueue an op no slower than the GPU runs it, or the GPU waits. Each row: the host time of one
call (``time.perf_counter`` around it, the GPU idle before it, the median of ``--calls``), the same call's
kernels' GPU time (CUDA events around 20 calls back to back, divided by 20), and for
``ops.PreparedRMSNormLinear`` the host time of each step of ``rstd_epilogue.rmsnorm_linear_folded``: the input
checks, the two allocations, the product's tiles and descriptors (``tma_launcher``), the rstd kernel's launch and
the product's launch. ``x @ W`` and eager ``F.rms_norm`` + ``addmm`` are the yardsticks of the same shape.

The prepared objects' TMA plans keep what Triton encodes from their descriptors by x's, the weight's and y's
addresses (``kprof.launch.DescribedLaunch``); ``, x at new addresses`` rows rotate x over 65 copies, so that no call
finds its addresses kept. ``--descriptors-per-call`` makes the plans build their descriptors on every call instead (as
before they kept them: ``Launch.described`` answers None), for a before-and-after on one machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from bench_common import host_us, new_addresses, write_csv

from kprof import harness
from kprof.kernels import discover, ops
from kprof.kernels.lib import launching, plans
from kprof.kernels.rmsnorm_linear import rstd_epilogue
from kprof.kernels.rmsnorm_linear.family import check_inputs
from kprof.kernels.swiglu import op_plan as swiglu_plan


def folded_steps(x, g, w, b, wf, calls: int) -> dict[str, float]:
    """Median host time (us) of each step of ``rmsnorm_linear_folded`` on the TMA route."""
    steps: dict[str, list[float]] = {"checks": [], "allocations": [], "tiles+descriptors": [], "rstd launch": [],
                                     "product launch": []}  # fmt: skip
    m, n = x.shape[0], w.shape[1]
    for _ in range(calls):
        torch.cuda.synchronize()
        t = [time.perf_counter()]
        x2d, _ = check_inputs(x, g, w, b)
        t.append(time.perf_counter())
        rstd = torch.empty(m, dtype=torch.float32, device=x.device)
        y = torch.empty((m, n), dtype=x.dtype, device=x.device)
        t.append(time.perf_counter())
        pdl = launching.pdl_ready(x2d)
        product = rstd_epilogue.tma_launcher(x2d, wf, b, y, rstd, pdl=pdl)
        t.append(time.perf_counter())
        rstd_epilogue.launch_row_rstd(x2d, rstd, 1e-6, pdl=pdl)
        t.append(time.perf_counter())
        product()
        t.append(time.perf_counter())
        for name, a, z in zip(steps, t, t[1:]):
            steps[name].append((z - a) * 1e6)
    torch.cuda.synchronize()
    return {name: statistics.median(v) for name, v in steps.items()}


def swiglu_route() -> str:
    """What ``ops.PreparedSwiGLU`` runs at this shape: its plan's kind (the interleaved TMA kernel, or cuBLAS's one
    product of the pair then the pairs kernel, whichever the shape's first call raced faster), or the checked path."""
    kinds = sorted({type(p).__name__ for p in swiglu_plan.PREPARED_PLANS.plans.values()})
    return ", ".join(kinds) or "checked path each call"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="2048x2048x5504,2048x2048x14336,8192x2048x5504,8192x4096x14336")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--descriptors-per-call", action="store_true", help="the plans make their descriptors each call")
    args = ap.parse_args()
    if args.descriptors_per_call:
        plans.Launch.described = lambda self: None
    fams = discover()
    ops.use_triton(True)  # the ops API's Triton path is opt-in (KPROF_USE_TRITON=1)
    rows = []
    for spec in args.shapes.split(","):
        m, k, n = (int(v) for v in spec.split("x"))
        inputs = fams["rmsnorm_linear"].make_inputs((m, k, n), "bf16", "cuda", seed=1)
        x, g, w, b = inputs["x"], inputs["g"], inputs["w"], inputs["b"]
        prepared = ops.PreparedRMSNormLinear(g, w)
        sw = fams["swiglu"].make_inputs((m, k, n), "bf16", "cuda", seed=1)
        swiglu = ops.PreparedSwiGLU(sw["w_gate"], sw["w_up"])
        swiglu_plan.PREPARED_PLANS.plans.clear()  # this shape's plan alone
        new_x = new_addresses(x)  # one set of copies, shared by both prepared objects
        cands = {
            "ops.PreparedRMSNormLinear": lambda: prepared(x, b),
            "ops.PreparedRMSNormLinear, x at new addresses": lambda: prepared(new_x(), b),
            "ops.rms_norm_linear": lambda: ops.rms_norm_linear(x, g, w, b),
            "F.rms_norm + addmm (eager)": lambda: torch.addmm(b, torch.nn.functional.rms_norm(x, (k,), g, 1e-6), w),
            "x @ W": lambda: x @ w,
            "ops.PreparedSwiGLU": lambda: swiglu(sw["x"]),
            "ops.PreparedSwiGLU, x at new addresses": lambda: swiglu(new_x()),
        }
        for name, fn in cands.items():
            for _ in range(5):  # compile, tune, plan
                fn()
            gpu_us = harness.rough_gpu_ms(fn, calls=20) * 1e3  # queued back to back: the host ahead after the first
            rows.append({"shape": spec, "op": name, "host_us": host_us(fn, args.calls), "gpu_us": gpu_us,
                         "descriptors": "per call" if args.descriptors_per_call else "kept",
                         "route": swiglu_route() if "SwiGLU" in name else ""})  # fmt: skip
        steps = folded_steps(x, g, w, b, prepared.wf, args.calls)
        rows += [
            {"shape": spec, "op": f"  step: {s}", "host_us": us, "gpu_us": float("nan"), "descriptors": "", "route": ""}
            for s, us in steps.items()
        ]
        write_csv(args.out / "op_host_time.csv", rows)
    print("| shape | op | host µs per call | GPU µs per call | route |\n|---|---|---:|---:|---|")
    for r in rows:
        gpu = "" if r["gpu_us"] != r["gpu_us"] else f"{r['gpu_us']:.1f}"
        print(f"| {r['shape']} | {r['op']} | {r['host_us']:.1f} | {gpu} | {r['route']} |")


if __name__ == "__main__":
    main()
