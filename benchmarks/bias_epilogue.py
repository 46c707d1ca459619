"""Experiment: rmsnorm_linear's bias on the cuBLAS route, in the product's epilogue (``torch.addmm``) or added
after it. At 128x8192x5504 bf16 the op (kprof's norm, then ``addmm``) has lost to torch.compile in three
committed grids (1.07-1.12x) while both run one cuBLAS product after a norm kernel.

    python benchmarks/bias_epilogue.py --out DIR [--shapes 128x8192x5504,...] [--dtypes bf16,fp16] [--rounds 7]

Candidates, each checked against the float64 oracle first (the product-only ones on the same normalised rows,
so against the same oracle): ``[op]`` (``kprof.kernels.ops.rms_norm_linear``), ``[torch_compile]``, ``norm+addmm``
(the norm kernel, then cuBLAS with the bias in its epilogue), ``norm+mm+add`` (the norm kernel, cuBLAS's product,
then an in-place add of the bias), ``addmm`` and ``mm+add`` (the product on rows normalised beforehand). Timed
beside them, not checked: ``[x@W]`` (the grid target's yardstick, no bias) and ``mm`` (the normalised rows times
W, no bias). Cold, interleaved rounds in a random order. Each candidate's kernels (one call under the profiler)
are printed and written with its times to DIR/bias_epilogue.csv.
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

import torch
from bench_common import checked_against, kernel_names, kernel_rows, print_notes, print_race, race_rounds, write_csv

from kprof.kernels import discover, ops
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned

DEFAULT_SHAPES = (
    "128x8192x5504,128x4096x5504,128x2048x5504,128x8192x14336,16x8192x5504,512x8192x5504,"
    "2048x2048x5504,2048x8192x5504,128x4096x11008,128x8192x28672"
)
COLUMNS = ("[op]", "[torch_compile]", "norm+addmm", "norm+mm+add", "addmm", "mm+add", "mm", "[x@W]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--rep-ms", type=float, default=10.0)
    args = ap.parse_args()
    ops.use_triton(True)  # the ops API's Triton path is off unless KPROF_USE_TRITON=1 at import
    fam = discover()["rmsnorm_linear"]
    compiled = fam.get_provider("torch_compile").fn
    rng = random.Random(0)
    rows, table = [], []
    for dtype in args.dtypes.split(","):
        for spec in args.shapes.split(","):
            m, k, n = (int(v) for v in spec.split("x"))
            inputs = fam.make_inputs((m, k, n), dtype, "cuda", seed=1)
            x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], 1e-6
            ref = fam.oracle(**inputs)
            xn = rmsnorm_tuned(x, g, eps)

            def mm_add(rows_: torch.Tensor) -> torch.Tensor:
                return (rows_ @ w).add_(b)

            checked_fns = {
                "[op]": lambda: ops.rms_norm_linear(x, g, w, b, eps),
                "[torch_compile]": lambda: compiled(**inputs),
                "norm+addmm": lambda: torch.addmm(b, rmsnorm_tuned(x, g, eps), w),
                "norm+mm+add": lambda: mm_add(rmsnorm_tuned(x, g, eps)),
                "addmm": lambda: torch.addmm(b, xn, w),
                "mm+add": lambda: mm_add(xn),
            }
            fns, notes = checked_against(checked_fns, ref)
            fns["mm"] = lambda: xn @ w
            fns["[x@W]"] = lambda: x @ w
            kernels = {name: kernel_names(fn) for name, fn in fns.items()}
            times = race_rounds(fns, args.rounds, args.rep_ms, rng)
            print_race(f"{dtype} {spec}", times, top=len(times))
            print_notes(notes)
            for name in fns:
                print(f"    {name:<16} {kernels[name]}", flush=True)
            med = {name: statistics.median(v) for name, v in times.items()}
            table.append((dtype, spec, med))
            rows += kernel_rows(dtype, spec, times, kernels)
            write_csv(args.out / "bias_epilogue.csv", rows)
    print("\n| dtype | shape | " + " | ".join(COLUMNS) + " | op / compile |")
    print("|---|---|" + "---:|" * (len(COLUMNS) + 1))
    for dtype, spec, med in table:
        cells = " | ".join(f"{med[c]:.2f}" if c in med else "-" for c in COLUMNS)
        ratio = med["[op]"] / med["[torch_compile]"] if "[op]" in med and "[torch_compile]" in med else float("nan")
        print(f"| {dtype} | {spec} | {cells} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
