"""Experiment: rmsnorm_linear's cuBLAS route with the norm off the product's critical path. At 2048-8192 rows
with K 2048 or N 11008 the route (kprof's norm kernel, then ``torch.addmm``) misses 1.03x ``x @ W`` because the
norm kernel (6-19.5 us) runs before the product (``grid/rmsnorm_linear-prefill-clock/``).

    python benchmarks/norm_overlap.py --out DIR [--shapes 2048x2048x11008,...] [--dtypes bf16,fp16]

Candidates, each checked against the float64 oracle first:
- ``norm+addmm``: the route as shipped;
- ``sideN`` (N equal row chunks) and ``headR`` (a first chunk of R rows, then the rest): the norm of every chunk
  runs on a second stream, and cuBLAS's product of a chunk (``addmm`` into its rows of y) waits only for that
  chunk's norm. The norms after the first then run beside the first products instead of before them;
- ``serialN``: the same chunked products with the norms on one stream (what splitting the product costs alone);
- ``[op]`` (``kprof.kernels.ops.rms_norm_linear``) and ``[tma]`` (``triton_rstd_epilogue_prepared``).
Timed beside them: ``[x@W]``, the grid target's yardstick. Cold, interleaved rounds in a random order (kprof's
cold time is the union of a call's kernel intervals, so kernels that overlap on two streams count once).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch
from bench_common import (
    add_race_args,
    checked_against,
    kernel_names,
    kernel_rows,
    print_notes,
    print_race,
    race_rounds,
    write_csv,
)

from kprof.kernels import discover, ops
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned

DEFAULT_SHAPES = (
    "2048x2048x5504,2048x2048x11008,2048x2048x14336,2048x4096x11008,2048x8192x11008,"
    "8192x2048x5504,8192x2048x11008,8192x2048x14336"
)
_SIDE: dict[int, torch.cuda.Stream] = {}


def equal_chunks(m: int, parts: int, align: int = 128) -> list[tuple[int, int]]:
    step = -(-m // parts // align) * align
    return [(lo, min(lo + step, m)) for lo in range(0, m, step)]


def head_chunks(m: int, head: int) -> list[tuple[int, int]]:
    return [(0, head), (head, m)] if 0 < head < m else [(0, m)]


def chunked(x, g, w, b, eps: float, bounds: list[tuple[int, int]], side_stream: bool) -> torch.Tensor:
    """``rmsnorm(x, g) @ w + b`` by row chunks: chunk i's product waits only for chunk i's norm."""
    m, n = x.shape[0], w.shape[1]
    xn = torch.empty_like(x)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    main = torch.cuda.current_stream()
    if not side_stream:
        for lo, hi in bounds:
            rmsnorm_tuned(x[lo:hi], g, eps, out=xn[lo:hi])
            torch.addmm(b, xn[lo:hi], w, out=y[lo:hi])
        return y
    side = _SIDE.setdefault(x.get_device(), torch.cuda.Stream(device=x.device))
    side.wait_stream(main)  # x, g and xn come from the main stream's past
    done = []
    with torch.cuda.stream(side):
        for lo, hi in bounds:
            rmsnorm_tuned(x[lo:hi], g, eps, out=xn[lo:hi])
            ev = torch.cuda.Event()
            ev.record(side)
            done.append(ev)
    for (lo, hi), ev in zip(bounds, done):
        main.wait_event(ev)
        torch.addmm(b, xn[lo:hi], w, out=y[lo:hi])
    return y  # every side-stream write precedes main's next work (the events), so xn may be freed on main


def race_point(fam, tma, dtype: str, spec: str, args, rng) -> tuple[dict, dict, dict]:
    """One point: {candidate: cold times}, {candidate: its kernels}, {candidate: why not timed}."""
    m, k, n = (int(v) for v in spec.split("x"))
    inputs = fam.make_inputs((m, k, n), dtype, "cuda", seed=1)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], 1e-6
    ref = fam.oracle(**inputs)
    plans = {
        "norm+addmm": ([(0, m)], False),
        "side2": (equal_chunks(m, 2), True),
        "side4": (equal_chunks(m, 4), True),
        "head256": (head_chunks(m, 256), True),
        "head512": (head_chunks(m, 512), True),
        "serial2": (equal_chunks(m, 2), False),
    }
    checked_fns = {
        name: (lambda bounds=bounds, side=side: chunked(x, g, w, b, eps, bounds, side))
        for name, (bounds, side) in plans.items()
    }
    checked_fns["[op]"] = lambda: ops.rms_norm_linear(x, g, w, b, eps)
    checked_fns["[tma]"] = lambda: tma(x, g, w, b, eps)
    fns, notes = checked_against(checked_fns, ref)
    fns["[x@W]"] = lambda: x @ w
    kernels = {name: kernel_names(fn, width=60) for name, fn in fns.items()}
    return race_rounds(fns, args.rounds, args.rep_ms, rng), kernels, notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_race_args(ap, dtypes="bf16,fp16", budget_s=400.0)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    args = ap.parse_args()
    ops.use_triton(True)  # the ops API's Triton path is off unless KPROF_USE_TRITON=1 at import
    fam = discover()["rmsnorm_linear"]
    tma = fam.get_provider("triton_rstd_epilogue_prepared").fn
    rng = random.Random(0)
    start = time.monotonic()
    rows, table = [], []
    for dtype in args.dtypes.split(","):
        for spec in args.shapes.split(","):
            if time.monotonic() - start > args.budget_s:
                print(f"budget spent: {dtype} {spec} not raced", flush=True)
                continue
            times, kernels, notes = race_point(fam, tma, dtype, spec, args, rng)
            torch.cuda.empty_cache()
            print_race(f"{dtype} {spec}", times, top=len(times))
            print_notes(notes)
            for name in times:
                print(f"    {name:<12} {kernels[name]}", flush=True)
            med = {name: statistics.median(v) for name, v in times.items()}
            table.append((dtype, spec, med))
            rows += kernel_rows(dtype, spec, times, kernels)
            write_csv(args.out / "norm_overlap.csv", rows)
    cols = ("norm+addmm", "side2", "side4", "head256", "head512", "serial2", "[op]", "[tma]", "[x@W]")
    print("\n| dtype | shape | " + " | ".join(cols) + " | best / x@W |")
    print("|---|---|" + "---:|" * (len(cols) + 1))
    for dtype, spec, med in table:
        cells = " | ".join(f"{med[c]:.1f}" if c in med else "-" for c in cols)
        best = min(v for c, v in med.items() if c != "[x@W]")
        print(f"| {dtype} | {spec} | {cells} | {best / med['[x@W]']:.3f} |")


if __name__ == "__main__":
    main()
