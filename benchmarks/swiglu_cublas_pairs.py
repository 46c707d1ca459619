"""Experiment: where does cuBLAS's one product on swiglu's interleaved weights, then one pass over the gate/up
pairs (``cublas_silu.interleaved_product_then_silu``), beat the interleaved TMA kernel on the same prepared
weights? At 1000x1000x3000, where no dimension divides a tile, that kernel ran 1.41x cuBLAS's ``x @ [Wg Wu]``
at best over 14 tile configs (``results/matmul-last-gap/untiled-58c8d3d/``); cuBLAS's own tile fits 6000 columns.

    python benchmarks/swiglu_cublas_pairs.py --out DIR [--shapes 1000x1000x3000,...] [--dtypes bf16,fp16] [--rounds 5]

Candidates, each checked against the float64 oracle first: ``[interleaved TMA]`` (what the prepared op runs from
1000 rows), ``[cublas pairs]``, ``[cublas two + silu_mul]`` (cuBLAS's two products on the weights as given, then
kprof's silu_mul: ``triton_cublas_silu``), ``[torch_compile]`` with ``--compile``; timed beside them, ``[cublas x@[Wg Wu]]`` (the
target's yardstick) and ``[pairs pass]`` (the pass alone, on a product made beforehand: cold, so from DRAM, where
after cuBLAS's product it reads from L2). Cold, interleaved rounds in a random order. Writes DIR/cublas_pairs.csv.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch
from bench_common import checked, print_notes, print_race, race_rounds, race_rows, write_csv

from kprof.kernels import discover
from kprof.kernels.swiglu import cublas_silu, tuned

DEFAULT_SHAPES = (
    "1000x1000x3000,1500x1000x3000,2000x1000x3000,4000x1000x3000,1024x1024x3072,1000x2048x5504,"
    "1000x4096x11008,2048x2048x5504,2048x4096x11008"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rep-ms", type=float, default=10.0)
    ap.add_argument("--compile", action="store_true", help="race torch.compile too (its compile per point)")
    args = ap.parse_args()
    fam = discover()["swiglu"]
    compiled = fam.get_provider("torch_compile").fn
    rng = random.Random(0)
    rows = []
    for dtype in args.dtypes.split(","):
        for spec in args.shapes.split(","):
            m, k, n = (int(v) for v in spec.split("x"))
            inputs = fam.make_inputs((m, k, n), dtype, "cuda", seed=1)
            x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
            ref = fam.oracle(**inputs)
            y = torch.empty(m, n, dtype=x.dtype, device="cuda")
            w_int = tuned.interleaved_weights(wg, wu)
            candidates = {
                "[interleaved TMA]": (lambda: (tuned.launch_interleaved(x, w_int, y), y)[1], ref),
                "[cublas pairs]": (lambda: cublas_silu.interleaved_product_then_silu(x, w_int), ref),
                "[cublas two + silu_mul]": (lambda: cublas_silu.products_then_silu_mul(x, wg, wu), ref),
            }
            if args.compile:
                candidates["[torch_compile]"] = (lambda: compiled(**inputs), ref)
            fns, notes = checked(candidates, y)
            w_cat = torch.cat([wg, wu], dim=1)
            fns["[cublas x@[Wg Wu]]"] = lambda: x @ w_cat
            h = x @ w_int
            fns["[pairs pass]"] = lambda: cublas_silu.silu_pairs(h)
            times = race_rounds(fns, args.rounds, args.rep_ms, rng)
            print_race(f"{dtype} {spec}", times, top=10)
            print_notes(notes)
            rows += [{"dtype": dtype, **r} for r in race_rows(spec, times)]
            write_csv(args.out / "cublas_pairs.csv", rows)


if __name__ == "__main__":
    main()
