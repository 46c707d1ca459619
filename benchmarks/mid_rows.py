"""Does the route race at 129-999 rows pick the faster route? Each point's race as the op ran it, then an
independent cold race of both routes and the op.

Per (family, dtype, shape), in one process: the op's first call (``ops.swiglu`` or ``ops.rms_norm_linear``,
Triton on) races its routes (:mod:`kprof.kernels.lib.routes`) and its decision is kept with the times it
measured; then kprof's cold timing (CUPTI, L2 flushed, ``--rounds`` rounds in a random order) times the op as
planned, each route forced and torch.compile's code, and ``triton.testing.do_bench`` times the forced routes
once more (median) beside it. Every output is checked against the float64 oracle first.

    python benchmarks/mid_rows.py --out DIR --family swiglu --shapes 160x4096x11008,320x2048x11008 --dtypes bf16,fp16

Writes DIR/mid_rows.csv (one row per point: the race's times and pick, the cold medians, do_bench's, the op's
time over the faster forced route) and prints the table.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import triton.testing
from bench_common import race_rounds, write_csv

from kprof.kernels import discover, ops
from kprof.kernels.lib import routes
from kprof.kernels.rmsnorm_linear.norm_cublas import norm_then_cublas
from kprof.kernels.rmsnorm_linear.two_kernels import norm_then_triton
from kprof.kernels.swiglu import tuned
from kprof.kernels.swiglu.cublas_silu import products_then_silu_mul


def swiglu_calls(inputs: dict) -> tuple[Callable, dict[str, Callable]]:
    """The op, and the two routes its race chooses between (the autotuned tiled kernel; cuBLAS's products)."""
    x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]

    def tiled() -> torch.Tensor:
        y = torch.empty((x.shape[0], wg.shape[1]), dtype=x.dtype, device=x.device)
        tuned.launch_tuned(x, wg, wu, y)
        return y

    return (lambda: ops.swiglu(x, wg, wu)), {"tiled": tiled, "cublas": lambda: products_then_silu_mul(x, wg, wu)}


def rmsnorm_linear_calls(inputs: dict) -> tuple[Callable, dict[str, Callable]]:
    """The op, and its two routes after the norm kernel (the autotuned Triton product; cuBLAS's)."""
    x, g, w, b, eps = (inputs[k] for k in ("x", "g", "w", "b", "eps"))
    return (lambda: ops.rms_norm_linear(x, g, w, b, eps)), {
        "triton": lambda: norm_then_triton(x, g, w, b, eps),
        "cublas": lambda: norm_then_cublas(x, g, w, b, eps),
    }


CALLS = {"swiglu": swiglu_calls, "rmsnorm_linear": rmsnorm_linear_calls}


def point(family: str, shape: str, dtype: str, args: argparse.Namespace, rng: random.Random) -> dict:
    m, k, n = (int(v) for v in shape.split("x"))
    fam = discover()[family]
    inputs = fam.make_inputs((m, k, n), dtype, "cuda", 1234)
    ref = fam.oracle(**inputs)
    op, forced = CALLS[family](inputs)
    seen = len(routes.decisions())
    t0 = time.perf_counter()
    op()
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    new = routes.decisions()[seen:]
    compile_fn = fam.get_provider("torch_compile").fn
    fns = {"[auto] ops": op, **forced, "[torch_compile]": lambda: compile_fn(**inputs)}
    tol = fam.tolerances[dtype]
    for name, fn in fns.items():
        err = float((fn().double() - ref).norm() / ref.norm())
        assert err <= tol, f"{family} {shape} {dtype} {name}: rel err {err:.2e} over {tol}"
    times = race_rounds(fns, args.rounds, args.rep_ms, rng)
    med = {name: statistics.median(v) for name, v in times.items()}
    bench = {name: 1e3 * triton.testing.do_bench(fn, rep=50, return_mode="median") for name, fn in forced.items()}
    best = min(med[name] for name in forced)
    d = new[-1] if new else None
    return {
        "family": family,
        "dtype": dtype,
        "shape": shape,
        "raced": ";".join(f"{r}={t:.1f}" for r, t in d.times_us) if d else "",
        "rule": d.default if d else "",
        "pick": d.chosen if d else "(not raced)",
        "first_call_s": round(first_s, 2),
        "ops_us": med["[auto] ops"],
        **{f"{name}_us": med[name] for name in forced},
        "compile_us": med["[torch_compile]"],
        **{f"{name}_do_bench_us": t for name, t in bench.items()},
        "ops_vs_best": med["[auto] ops"] / best,
        "pick_vs_best": med[d.chosen] / best if d else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--family", choices=list(CALLS), default="swiglu")
    ap.add_argument("--shapes", required=True, help="comma-separated MxKxN")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rep-ms", type=float, default=20.0)
    ap.add_argument("--budget-s", type=float, default=480.0, help="stop starting new points after this long")
    args = ap.parse_args()
    ops.use_triton(True)
    rng = random.Random(0)
    rows, start = [], time.monotonic()
    for dtype in args.dtypes.split(","):
        for shape in args.shapes.split(","):
            if time.monotonic() - start > args.budget_s:
                print(f"budget spent: {dtype} {shape} and later points not timed", flush=True)
                break
            rows.append(point(args.family, shape, dtype, args, rng))
            write_csv(args.out / f"mid_rows_{args.family}.csv", rows)
            r = rows[-1]
            cells = " ".join(f"{c[:-3]} {r[c]:.1f}" for c in r if c.endswith("_us"))
            print(
                f"{r['family']} {dtype} {shape:<16} raced {r['raced']:<30} rule {r['rule']:<6} pick {r['pick']:<6} "
                f"{cells} ops/best {r['ops_vs_best']:.3f} pick/best {r['pick_vs_best'] or float('nan'):.3f} "
                f"first {r['first_call_s']} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
