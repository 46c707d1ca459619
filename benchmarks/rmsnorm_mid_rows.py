"""Rows of 2048-8192 columns at a few hundred to a few thousand rows: one block of whole rows per program
(``rows``: rows per program x warps x cache hints) and the two-pass kernel (chunks x warps) against
``choose_config``'s pick, triton_one_row, torch.compile and a device copy of the same bytes.

    python benchmarks/rmsnorm_mid_rows.py --out DIR [--shapes 512x4096,...] [--dtypes bf16,fp16] [--rounds 3]

These are the grid points where torch.compile was ahead by 4-20% (512 rows of 3072-8192 columns, bf16 and
fp16; 3-6 us a call). Per shape every candidate is checked against the float64 oracle first (a wrong one is
not timed), then timed, with the ``triton_tuned`` provider as users call it (``[triton_tuned]``: output
allocated per call, the plan's launch), in ``--rounds`` rounds in a fresh random order each round, each a
``kprof.timing.cold_time_us`` of ``--rep-ms``; the median over rounds counts. Writes DIR/mid_rows.csv and
DIR/summary.csv. Run with ``TORCHINDUCTOR_CACHE_DIR`` set to keep the configurations Inductor picked
(its ``*.best_config`` files) beside the kernels it generated.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

import torch
import triton
from bench_common import (
    add_race_args,
    checked,
    race_shape,
    rmsnorm_case,
    write_csv,
)

from kprof.kernels import discover
from kprof.kernels.rmsnorm.tuned import Config, config_for, launch_with_config

SHAPES = [(512, n) for n in (3072, 4096, 6144, 7168, 8192, 2048)] + [(2048, 6144), (8192, 5120), (2048, 4096)]


def candidates(n: int, es: int) -> dict[str, Config]:
    block = triton.next_power_of_2(n)
    out = {}
    for rows, warps, hints in itertools.product((1, 2, 4), (2, 4, 8, 16), (False, True)):
        if rows * block * es <= 64 * 1024 and warps * 32 <= rows * block:
            out[f"rows r{rows} w{warps}{' hints' if hints else ''}"] = Config("rows", block, rows, warps, hints)
    for chunk, warps in ((1024, 4), (2048, 4), (2048, 8)):
        if chunk < block:
            out[f"two_pass c{chunk} w{warps}"] = Config("two_pass", chunk, 1, warps)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_race_args(ap, dtypes="bf16,fp16")
    ap.add_argument("--shapes", default=",".join(f"{r}x{n}" for r, n in SHAPES))
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    fam = discover()["rmsnorm"]
    compiled = fam.providers["torch_compile"].fn
    one_row = fam.providers["triton_one_row"].fn
    tuned = fam.providers["triton_tuned"].fn
    rows, summary = [], []
    rng = random.Random(0)
    t0 = time.monotonic()
    for (n_rows, n), dtype in itertools.product(shapes, args.dtypes.split(",")):
        if time.monotonic() - t0 > args.budget_s:
            print(f"budget of {args.budget_s:.0f} s spent: {dtype} {n_rows}x{n} and later shapes not raced")
            break
        x, w, eps, ref, y = rmsnorm_case(fam, (n_rows, n), dtype, 1234)
        auto = config_for(n, x.element_size(), n_rows, 0)
        cfgs = {f"[auto] {auto.kernel} r{auto.rows} w{auto.num_warps}": auto, **candidates(n, x.element_size())}
        cands = {name: (lambda c=cfg: (launch_with_config(c, x, w, y, eps), y)[1], ref) for name, cfg in cfgs.items()}
        cands["[one_row]"] = (lambda: y.copy_(one_row(x, w, eps)), ref)
        cands["[triton_tuned]"] = (lambda: y.copy_(tuned(x, w, eps)), ref)
        cands["[torch_compile]"] = (lambda: y.copy_(compiled(x, w, eps)), ref)
        fns, notes = checked(cands, y)
        # checked through a copy into y; timed without it
        if "[torch_compile]" in fns:
            fns["[torch_compile]"] = lambda: compiled(x, w, eps)
        if "[one_row]" in fns:
            fns["[one_row]"] = lambda: one_row(x, w, eps)
        if "[triton_tuned]" in fns:
            fns["[triton_tuned]"] = lambda: tuned(x, w, eps)
        fns["[copy]"] = lambda: y.copy_(x)
        raced, summed = race_shape(f"{n_rows}x{n}/{dtype}", fns, notes, args, rng, top=6)
        rows += raced
        summary.append(summed)
    write_csv(args.out / "mid_rows.csv", rows)
    write_csv(args.out / "summary.csv", summary)
    print(f"{'shape':<16} {'auto us':>9} {'best us':>9} {'compile':>9}  best")
    for r in summary:
        print(
            f"{r['shape']:<16} {r['auto_us']:9.2f} {r['best_us']:9.2f} {r['torch_compile_us'] or 0:9.2f}  {r['best']}"
        )
    return 0


if __name__ == "__main__":
    torch.manual_seed(0)
    raise SystemExit(main())
