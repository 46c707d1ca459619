"""silu_mul / gelu_mul where H is a multiple of 8 but not of 16: the op's own launch with its kernels told what H and
the row stride are multiples of (``ALIGN``, ``launching.vector_align``) and without, beside ``triton_tuned`` and
torch.compile.

    python benchmarks/gated_align.py --out DIR [--shapes 16x11024,512x11024,4096x11024] [--dtypes bf16,fp16]

Shapes are rows x 2H. Each candidate is run once into a NaN-filled output and checked against the float64 oracle,
then all are timed cold (``kprof.timing``) in interleaved rounds of a fresh random order. Writes DIR/gated_align.csv.
"""

from __future__ import annotations

import argparse
import itertools
import random
from pathlib import Path

import torch
from bench_common import checked, print_notes, print_race, race_rounds, race_rows, write_csv

from kprof.kernels import discover
from kprof.kernels.gelu_mul.kernels import KERNELS as GELU_MUL
from kprof.kernels.lib import gated, launching
from kprof.kernels.silu_mul.kernels import KERNELS as SILU_MUL


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="16x11024,512x11024,4096x11024,64x4112,4096x4112")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rep-ms", type=float, default=4.0)
    args = ap.parse_args()
    rng = random.Random(0)
    rows = []
    families = (("silu_mul", SILU_MUL), ("gelu_mul", GELU_MUL))
    for (name, kernels), spec, dtype in itertools.product(families, args.shapes.split(","), args.dtypes.split(",")):
        fam = discover()[name]
        shape = tuple(int(v) for v in spec.split("x"))
        inp = fam.make_inputs(shape, dtype, "cuda", 3)
        x = inp["x"]
        n_rows, h = shape[0], shape[1] // 2
        y = torch.empty(n_rows, h, dtype=x.dtype, device="cuda")
        cfg = gated.choose_config(h, x.element_size(), n_rows, launching.sm_count(x), launching.fast_memory(x))
        ref = fam.oracle(**inp)
        candidates = {
            f"op{' unaligned' if not align else ''}": (
                lambda align=align: gated.launch_tile(kernels, cfg, x, y, align=align) or y,
                ref,
            )
            for align in (True, False)
        }
        fns, notes = checked(candidates, y, tol=fam.tolerances[dtype])
        fns["[triton_tuned]"] = lambda fam=fam, inp=inp: fam.providers["triton_tuned"].fn(**inp, out=y)
        fns["[torch_compile]"] = lambda fam=fam, inp=inp: fam.providers["torch_compile"].fn(**inp)
        times = race_rounds(fns, args.rounds, args.rep_ms, rng)
        title = f"{name} {spec} {dtype} (op: {cfg}, ALIGN {launching.vector_align(x.element_size(), h, x.stride(0))})"
        print_race(title, times, top=10)
        print_notes(notes)
        rows += [dict(family=name, dtype=dtype, **r) for r in race_rows(spec, times)]
        write_csv(args.out / "gated_align.csv", rows)


if __name__ == "__main__":
    main()
