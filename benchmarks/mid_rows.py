"""Does the route race at 129-999 rows pick the faster route? Each point's race as the op ran it, then an
independent cold race of both routes and the op.

Per (dtype, shape), in one process: the op's first call (``ops.swiglu``, Triton on) races its routes
(:mod:`kprof.kernels.lib.routes`) and its decision is kept with the times it measured; then kprof's cold
timing (CUPTI, L2 flushed, ``--rounds`` rounds in a random order) times the op as planned, each route forced
(the autotuned tiled kernel; cuBLAS's two products then silu_mul) and torch.compile's eager code. Outputs are
checked against a float64 product first.

    python benchmarks/mid_rows.py --out DIR --shapes 160x4096x11008,320x2048x11008 --dtypes bf16,fp16

Writes DIR/mid_rows.csv (one row per point: the race's times and pick, the cold medians, the pick's time over
the faster forced route) and prints the table.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import torch
from bench_common import checked, race_rounds, write_csv

from kprof.kernels import discover, ops
from kprof.kernels.lib import routes
from kprof.kernels.swiglu import tuned
from kprof.kernels.swiglu.cublas_silu import products_then_silu_mul


def forced(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, out: torch.Tensor) -> dict:
    """The two routes the race chooses between, each writing ``out``."""

    def tiled() -> torch.Tensor:
        tuned.launch_tuned(x, wg, wu, out)
        return out

    def cublas() -> torch.Tensor:
        return out.copy_(products_then_silu_mul(x, wg, wu))

    return {"tiled": tiled, "cublas": cublas}


def point(shape: str, dtype: str, args: argparse.Namespace, rng: random.Random) -> dict:
    m, k, n = (int(v) for v in shape.split("x"))
    fam = discover()["swiglu"]
    inputs = fam.make_inputs((m, k, n), dtype, "cuda", 1234)
    x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
    ref = fam.oracle(**inputs)
    seen = len(routes.decisions())
    t0 = time.perf_counter()
    ops.swiglu(x, wg, wu)
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    new = routes.decisions()[seen:]
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    compile_fn = fam.get_provider("torch_compile").fn
    candidates = {
        "[auto] ops": (lambda: out.copy_(ops.swiglu(x, wg, wu)), ref),
        **{name: (fn, ref) for name, fn in forced(x, wg, wu, out).items()},
        "[torch_compile]": (lambda: out.copy_(compile_fn(x, wg, wu)), ref),
    }
    fns, notes = checked(candidates, out)
    times = race_rounds(fns, args.rounds, args.rep_ms, rng)
    med = {name: statistics.median(v) for name, v in times.items()}
    best = min(med.get("tiled", float("inf")), med.get("cublas", float("inf")))
    d = new[-1] if new else None
    return {
        "dtype": dtype,
        "shape": shape,
        "raced": ";".join(f"{r}={t:.1f}" for r, t in d.times_us) if d else "",
        "rule": d.default if d else "",
        "pick": d.chosen if d else "(not raced)",
        "first_call_s": round(first_s, 2),
        "ops_us": med.get("[auto] ops"),
        "tiled_us": med.get("tiled"),
        "cublas_us": med.get("cublas"),
        "compile_us": med.get("[torch_compile]"),
        "ops_vs_best": med["[auto] ops"] / best if "[auto] ops" in med else None,
        "notes": "; ".join(f"{k}: {v}" for k, v in notes.items()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
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
            rows.append(point(shape, dtype, args, rng))
            write_csv(args.out / "mid_rows.csv", rows)
            r = rows[-1]
            print(
                f"{dtype} {shape:<16} raced {r['raced']:<28} rule {r['rule']:<7} pick {r['pick']:<7} "
                f"ops {r['ops_us']:.1f} tiled {r['tiled_us']:.1f} cublas {r['cublas_us']:.1f} "
                f"compile {r['compile_us']:.1f} ops/best {r['ops_vs_best']:.3f} first {r['first_call_s']} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
