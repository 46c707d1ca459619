"""Rows wider than one block. ``--set few`` (default): one program per row (``looped``) against a row split
over several programs (``split``: splits x loop step x warps). ``--set many``: many such rows, the plain
chunked loop (``looped``) against the same loop with cache hints (``two_pass`` with one row per program: the
first pass keeps the row in L2, the second reads it from there) over chunk sizes and warps. torch.compile
alongside; ``cold`` times, interleaved rounds.

    python benchmarks/rmsnorm_split_rows.py --out DIR [--set few|many] [--dtypes bf16,fp32] [--rows 512,2048] [--rounds 5]

Per shape every candidate is checked against the float64 oracle first (a wrong one is not timed), then
timed in ``--rounds`` rounds in a fresh random order each round, each a ``kprof.timing.cold_time_us`` of
``--rep-ms``; the median over rounds is what counts. Prints, per shape, the fastest candidates, the one
``choose_config`` picks (``[auto]``) and torch.compile; writes DIR/split_rows.csv and DIR/summary.csv.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

import torch
from bench_common import (
    add_race_args,
    checked,
    race_shape,
    rmsnorm_case,
    write_csv,
)

from kprof.kernels import discover
from kprof.kernels.lib import split_rows as split
from kprof.kernels.rmsnorm.tuned import Config, config_for, launch_with_config

# (dtype, rows, columns): the grid's few-row wide points and the neighbours that decide the thresholds
SHAPES = [
    *(("bf16", r, n) for r in (1, 4, 8, 16, 32, 64) for n in (65536, 131072)),
    *(("bf16", r, 32768) for r in (1, 8)),
    *(("fp32", r, n) for r in (1, 8, 32) for n in (16384, 65536)),
]
# many rows of 128-256 KB: the grid's points at 65-69% of the copy ceiling, where ncu counted 1.41-1.48x the
# bytes model in DRAM (x read twice) for both triton_tuned's loop and torch.compile
MANY = [("bf16", r, n) for r in (512, 2048, 8192) for n in (65536, 131072)] + [("bf16", 32768, 65536)]
# where the cooperative kernel's thresholds lie: rows of 64 and 128 KB, fewer rows, rows of 4-byte elements
MANY += [("bf16", 2048, 32768), ("fp32", 2048, 32768), ("bf16", 384, 65536)]
MANY += [("bf16", r, n) for r in (64, 256) for n in (65536, 131072)]
MANY += [("fp32", r, n) for r in (512, 2048) for n in (16384, 65536)]
MANY += [("fp16", r, n) for r in (512, 2048, 8192) for n in (65536, 131072)]


def candidates(n_rows: int, n: int, sms: int) -> dict[str, Config]:
    out = {f"looped c{c} w{w}": Config("looped", c, 1, w) for c, w in ((8192, 16), (16384, 16))}
    for s, (blk, w) in itertools.product((2, 4, 8, 16, 32, 64, 128), ((1024, 4), (2048, 8), (4096, 8))):
        if n_rows * s <= 2 * sms and -(-n // s) >= 1024:
            out[f"split s{s} b{blk} w{w}"] = Config("split", blk, 1, w, splits=s)
    return out


def candidates_many(n_rows: int, n: int, sms: int) -> dict[str, Config]:
    out = {"looped c16384 w16": Config("looped", 16384, 1, 16)}
    for c, w in ((4096, 8), (8192, 8), (8192, 16), (16384, 16)):
        out[f"hinted c{c} w{w}"] = Config("two_pass", c, 1, w)
    for s, w in itertools.product((2, 4, 8, 16, 32), (4, 8, 16, 32)):
        chunk = -(-n // s)
        if 1024 <= chunk <= 16384 and 8 <= chunk // (32 * w) <= 64:  # 8-64 elements a thread in registers
            out[f"coop s{s} w{w}"] = Config("cooperative", chunk, 1, w, splits=s)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_race_args(ap, dtypes="bf16,fp32")
    ap.add_argument("--set", choices=("few", "many"), default="few")
    ap.add_argument("--rows", help="only the set's shapes of these row counts, e.g. 512,2048")
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    compiled = fam.providers["torch_compile"].fn
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, summary = [], []
    rng = random.Random(0)
    t0 = time.monotonic()
    shapes, make = (SHAPES, candidates) if args.set == "few" else (MANY, candidates_many)
    keep = {int(v) for v in args.rows.split(",")} if args.rows else None
    for dtype, n_rows, n in [s for s in shapes if s[0] in args.dtypes.split(",") and (keep is None or s[1] in keep)]:
        if time.monotonic() - t0 > args.budget_s:
            print(f"budget of {args.budget_s:.0f} s spent: {dtype} {n_rows}x{n} and later shapes not raced")
            break
        x, w, eps, ref, y = rmsnorm_case(fam, (n_rows, n), dtype, 1234)
        auto = config_for(n, x.element_size(), n_rows, 0)
        cands = {
            name: (lambda c=cfg: (launch_with_config(c, x, w, y, eps), y)[1], ref)
            for name, cfg in make(n_rows, n, sms).items()
        }
        cands["[auto] " + (f"{auto.kernel} s{auto.splits}" if auto.kernel == "split" else auto.kernel)] = (
            lambda: (launch_with_config(auto, x, w, y, eps), y)[1],
            ref,
        )
        cands["[torch_compile]"] = (lambda: y.copy_(compiled(x, w, eps)), ref)
        fns, notes = checked(cands, y)
        if "[torch_compile]" in fns:  # checked through a copy into y; timed without it
            fns["[torch_compile]"] = lambda: compiled(x, w, eps)
        if args.set == "many":  # the yardstick: a device copy of the same bytes (read x, write y)
            fns["[copy]"] = lambda: y.copy_(x)
        raced, summed = race_shape(f"{n_rows}x{n}/{dtype}", fns, notes, args, rng, top=6)
        rows += raced
        summary.append({**summed, "auto_splits": split.choose_splits(n_rows, n, sms)})
    write_csv(args.out / f"{'split' if args.set == 'few' else 'many'}_rows.csv", rows)
    write_csv(args.out / "summary.csv", summary)
    print(f"{'shape':<20} {'auto us':>9} {'best us':>9} {'compile':>9}  best")
    for r in summary:
        print(
            f"{r['shape']:<20} {r['auto_us']:9.2f} {r['best_us']:9.2f} {r['torch_compile_us'] or 0:9.2f}  {r['best']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
