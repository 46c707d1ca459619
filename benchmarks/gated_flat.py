"""Experiment: silu_mul / gelu_mul as one flat 1-D pointwise kernel (every program BLOCK consecutive
outputs across row ends, Inductor's layout for this pattern) against the tuned one-row-per-program kernel
(16384-wide blocks at H = 11008: a third of the lanes masked) and torch.compile.

    python benchmarks/gated_flat.py --out DIR [--shapes 16384x22016,4096x8192,64x22016] [--rounds 5]

Checked against the float64 oracle first, then timed in interleaved rounds (kprof.harness.race), bf16.
Writes DIR/gated_flat.csv.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
import triton
from bench_common import checked, print_notes, print_race, race_rows, write_csv

from kprof.harness import BenchSettings, race
from kprof.kernels import discover
from kprof.kernels.gelu_mul.kernels import KERNELS as GELU_MUL  # the experiment's flat kernel shipped as .flat
from kprof.kernels.silu_mul.kernels import KERNELS as SILU_MUL


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="16384x22016,4096x8192,64x22016")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    interp = os.environ.get("TRITON_INTERPRET") == "1"
    dev = "cpu" if interp else "cuda"
    rows = []
    for name, kernels in (("silu_mul", SILU_MUL), ("gelu_mul", GELU_MUL)):
        fam = discover()[name]
        for spec in args.shapes.split(","):
            shape = tuple(int(v) for v in spec.split("x"))
            inp = fam.make_inputs(shape, "bf16", dev, 3)
            x = inp["x"]
            n_rows, h = shape[0], shape[1] // 2
            y = torch.empty(n_rows, h, dtype=x.dtype, device=dev)
            ref = fam.oracle(**inp)
            total = n_rows * h
            i64 = n_rows * x.stride(0) >= 2**31
            candidates = {}
            for block, warps in ((1024, 4), (2048, 4), (2048, 8), (4096, 8), (8192, 8), (8192, 16)):

                def flat(block=block, warps=warps):
                    kernels.flat[(triton.cdiv(total, block),)](
                        x, y, x.stride(0), total, h, BLOCK=block, I64=i64, num_warps=warps
                    )
                    return y

                candidates[f"flat {block} w{warps}"] = (flat, ref)
            fns, notes = checked(candidates, y, tol=fam.tolerances["bf16"])
            if interp:
                print(name, spec, sorted(fns), notes)
                continue
            fns["[triton_tuned]"] = lambda: fam.providers["triton_tuned"].fn(**inp, out=y)
            fns["[torch_compile]"] = lambda: fam.providers["torch_compile"].fn(**inp)
            times = race(fns, BenchSettings(graph=False), rounds=args.rounds)
            print_race(f"{name} {spec}", times, top=10)
            print_notes(notes)
            rows += [dict(family=name, **r) for r in race_rows(spec, times)]
    if rows:
        write_csv(args.out / "gated_flat.csv", rows)


if __name__ == "__main__":
    main()
