"""add_rmsnorm at few rows: triton_tuned's choice (``[auto]``) against the candidates it chose among, on an H100.

    python benchmarks/add_rmsnorm_split_rows.py --out DIR [--dtypes bf16] [--rounds 3] [--budget-s 420]

Two groups of shapes, bf16 by default:
* few rows wider than one block (65536, 131072 columns): one program per row (``looped``, chunks x warps)
  against each row split over programs (``split``: splits x loop step x warps), torch.compile alongside;
* few rows of 2048-16384 columns: the whole row in one block (``rows``, triton_one_row's warps), the
  chunked kernel with 8 KB chunks x 8 warps (triton_looped's config) and with 16 KB chunks x 16 warps (the
  previous choice).
Per shape every candidate is checked against the float64 oracle first (y and h; a wrong one is not timed),
then timed in ``--rounds`` rounds in a fresh random order each round, each a ``kprof.timing.cold_time_us``
of ``--rep-ms``; the median over rounds counts. Writes DIR/add_split_rows.csv and DIR/summary.csv and
prints, per shape, auto's time, the best candidate's and torch.compile's.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import time
from pathlib import Path

import torch
from bench_common import print_notes, print_race, race_rows, write_csv

from kprof import timing
from kprof.kernels import discover
from kprof.kernels.add_rmsnorm.tuned import Config, choose_config, launch_with_config

WIDE = [(r, n) for r in (1, 4, 8, 16, 32, 64) for n in (65536, 131072)]
NARROW = [(r, n) for r in (1, 8, 64, 128, 512, 1024, 2048) for n in (2048, 3072, 6144, 8192, 16384)]


def candidates(n_rows: int, n: int, es: int, sms: int) -> dict[str, Config]:
    block = triton_pow2(n)
    out = {f"looped c{c} w{w}": Config("looped", min(block, c), 1, w) for c, w in ((4096, 8), (8192, 16))}
    if block * es > 32 * 1024:
        for s, (blk, w) in itertools.product((2, 4, 8, 16, 32, 64, 128), ((1024, 4), (2048, 8), (4096, 8))):
            if n_rows * s <= 2 * sms and -(-n // s) >= 1024:
                out[f"split s{s} b{blk} w{w}"] = Config("split", blk, 1, w, splits=s)
    else:
        out.update({f"rows b{block} r1 w{w}": Config("rows", block, 1, w) for w in (4, 8, 16) if w * 32 <= block})
    return out


def triton_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=5.0)
    ap.add_argument("--budget-s", type=float, default=420.0, help="stop starting new shapes after this long")
    args = ap.parse_args()
    fam = discover()["add_rmsnorm"]
    compiled = fam.providers["torch_compile"].fn
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, summary = [], []
    rng = random.Random(0)
    t0 = time.monotonic()
    for dtype, (n_rows, n) in itertools.product(args.dtypes.split(","), WIDE + NARROW):
        if time.monotonic() - t0 > args.budget_s:
            print(f"budget of {args.budget_s:.0f} s spent: {dtype} {n_rows}x{n} and later shapes not raced")
            break
        inp = fam.make_inputs((n_rows, n), dtype, "cuda", 1234)
        x, r, w, eps = inp["x"], inp["residual"], inp["weight"], inp["eps"]
        y_ref, h_ref = fam.oracle(**inp)
        y, h = torch.empty_like(x), torch.empty_like(x)
        auto = choose_config(n, x.element_size(), n_rows, sms)
        cfgs = {"[auto] " + _name(auto): auto, **candidates(n_rows, n, x.element_size(), sms)}
        fns, notes = {}, {}
        for name, cfg in cfgs.items():
            fn = lambda c=cfg: launch_with_config(c, x, r, w, y, h, eps)  # noqa: E731
            try:
                y.fill_(float("nan"))
                h.fill_(float("nan"))
                fn()
                err = max(_rel(y, y_ref), _rel(h, h_ref))
            except Exception as exc:  # noqa: BLE001 - a config that cannot compile or launch is reported, not timed
                notes[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
                continue
            if err < fam.tolerances[dtype]:
                fns[name] = fn
            else:
                notes[name] = f"WRONG rel err {err:.3g}"
        fns["[torch_compile]"] = lambda: compiled(x, r, w, eps)
        times: dict[str, list[float]] = {k: [] for k in fns}
        for _ in range(args.rounds):
            order = list(fns)
            rng.shuffle(order)
            for k in order:
                times[k].append(timing.cold_time_us(fns[k], rep_ms=args.rep_ms)[0])
        shape = f"{n_rows}x{n}/{dtype}"
        print_race(shape, times, top=5)
        print_notes(notes)
        rows += race_rows(shape, times)
        med = {k: statistics.median(v) for k, v in times.items()}
        best = min((v, k) for k, v in med.items() if not k.startswith("["))
        auto_name = next(k for k in med if k.startswith("[auto]"))
        summary.append(
            {
                "shape": shape,
                "auto": auto_name,
                "auto_us": med[auto_name],
                "best": best[1],
                "best_us": best[0],
                "torch_compile_us": med["[torch_compile]"],
            }
        )
    write_csv(args.out / "add_split_rows.csv", rows)
    write_csv(args.out / "summary.csv", summary)
    print(f"{'shape':<20} {'auto us':>9} {'best us':>9} {'auto/best':>9} {'compile':>9}  auto / best")
    for s in summary:
        print(
            f"{s['shape']:<20} {s['auto_us']:9.2f} {s['best_us']:9.2f} {s['auto_us'] / s['best_us']:9.3f} "
            f"{s['torch_compile_us']:9.2f}  {s['auto']} / {s['best']}"
        )
    return 0


def _name(cfg: Config) -> str:
    if cfg.kernel == "split":
        return f"split s{cfg.splits} b{cfg.block_n} w{cfg.num_warps}"
    if cfg.kernel == "rows":
        return f"rows b{cfg.block_n} r{cfg.rows} w{cfg.num_warps}"
    return f"looped c{cfg.block_n} w{cfg.num_warps}"


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


if __name__ == "__main__":
    raise SystemExit(main())
