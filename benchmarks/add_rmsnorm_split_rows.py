"""add_rmsnorm at few rows: triton_tuned's choice (``[auto]``, the GPU's: an H200 has rules of its own) against the
candidates it chose among.

    python benchmarks/add_rmsnorm_split_rows.py --out DIR [--set few|many] [--dtypes bf16] [--rounds 3] [--budget-s 420]

``--set few`` (default), two groups of shapes, bf16 by default:
* few rows wider than one block (65536, 131072 columns): one program per row (``looped``, chunks x warps)
  against each row split over programs (``split``: splits x loop step x warps), torch.compile alongside;
* few rows of 2048-16384 columns: the whole row in one block (``rows``, triton_one_row's warps), the
  chunked kernel with 8 KB chunks x 8 warps (triton_looped's config) and with 16 KB chunks x 16 warps (the
  previous choice).
``--set many``: 64-8192 rows of 65536 and 131072 columns, the cooperative kernel over chunk sizes x warps and the
pipelined kernel over chunk sizes x warps x programs an SM, against the chunked loop. ``--rows 64`` keeps the set's shapes of those row counts.
Per shape every candidate is checked against the float64 oracle first (y and h; a wrong one is not timed),
then timed in ``--rounds`` rounds in a fresh random order each round, each a ``kprof.timing.cold_time_us``
of ``--rep-ms``; the median over rounds counts. Writes DIR/add_split_rows.csv and DIR/summary.csv and
prints, per shape, auto's time, the best candidate's and torch.compile's.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

import torch
import triton
from bench_common import add_race_args, race_shape, rel_err, write_csv

from kprof.kernels import discover
from kprof.kernels.add_rmsnorm.tuned import Config, choose_config, launch_with_config
from kprof.kernels.lib import launching

WIDE = [(r, n) for r in (1, 4, 8, 16, 32, 64) for n in (65536, 131072)]
NARROW = [(r, n) for r in (1, 8, 64, 128, 512, 1024, 2048) for n in (2048, 3072, 6144, 8192, 16384)]
MANY = [(r, n) for r in (64, 512, 2048, 8192) for n in (65536, 131072)]


def candidates(n_rows: int, n: int, es: int, sms: int) -> dict[str, Config]:
    block = triton.next_power_of_2(n)
    out = {f"looped c{c} w{w}": Config("looped", min(block, c), 1, w) for c, w in ((4096, 8), (8192, 16))}
    if block * es > 32 * 1024:
        for s, (blk, w) in itertools.product((2, 4, 8, 16, 32, 64, 128), ((1024, 4), (2048, 8), (4096, 8))):
            if n_rows * s <= 2 * sms and -(-n // s) >= 1024:
                out[f"split s{s} b{blk} w{w}"] = Config("split", blk, 1, w, splits=s)
    else:
        out.update({f"rows b{block} r1 w{w}": Config("rows", block, 1, w) for w in (4, 8, 16) if w * 32 <= block})
    return out


def candidates_many(n: int) -> dict[str, Config]:
    out = {"looped c8192 w16": Config("looped", 8192, 1, 16)}
    for chunk, w in ((4096, 4), (8192, 4), (8192, 8), (16384, 8), (16384, 16), (16384, 32), (32768, 16), (32768, 32)):
        out[f"coop c{chunk} w{w}"] = Config("cooperative", chunk, 1, w, triton.cdiv(n, chunk))
    # the pipelined layouts of the dispatch (fp16's, bf16's on an H100 and on an H200) and their neighbours
    for chunk, w, per_sm in ((8192, 8, 4), (8192, 16, 3), (4096, 4, 8), (4096, 8, 4), (2048, 4, 8)):
        out[f"pipe c{chunk} w{w} p{per_sm}"] = Config(
            "pipelined", chunk, 1, w, triton.cdiv(n, chunk), programs_per_sm=per_sm
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_race_args(ap)
    ap.add_argument("--set", choices=("few", "many"), default="few")
    ap.add_argument("--rows", help="only the set's shapes of these row counts, e.g. 64")
    args = ap.parse_args()
    fam = discover()["add_rmsnorm"]
    compiled = fam.providers["torch_compile"].fn
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, summary = [], []
    rng = random.Random(0)
    t0 = time.monotonic()
    shapes = WIDE + NARROW if args.set == "few" else MANY
    if args.rows:
        shapes = [(r, n) for r, n in shapes if r in {int(v) for v in args.rows.split(",")}]
    for dtype, (n_rows, n) in itertools.product(args.dtypes.split(","), shapes):
        if time.monotonic() - t0 > args.budget_s:
            print(f"budget of {args.budget_s:.0f} s spent: {dtype} {n_rows}x{n} and later shapes not raced")
            break
        inp = fam.make_inputs((n_rows, n), dtype, "cuda", 1234)
        x, r, w, eps = inp["x"], inp["residual"], inp["weight"], inp["eps"]
        y_ref, h_ref = fam.oracle(**inp)
        y, h = torch.empty_like(x), torch.empty_like(x)
        auto = choose_config(
            n, x.element_size(), n_rows, sms, fp16=x.dtype == torch.float16, fast_memory=launching.fast_memory(x)
        )
        cands = candidates(n_rows, n, x.element_size(), sms) if args.set == "few" else candidates_many(n)
        cfgs = {"[auto] " + _name(auto): auto, **cands}
        fns, notes = {}, {}
        for name, cfg in cfgs.items():
            fn = lambda c=cfg: launch_with_config(c, x, r, w, y, h, eps)  # noqa: E731
            try:
                y.fill_(float("nan"))
                h.fill_(float("nan"))
                fn()
                err = max(rel_err(y, y_ref), rel_err(h, h_ref))
            except Exception as exc:  # noqa: BLE001 - a config that cannot compile or launch is reported, not timed
                notes[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
                continue
            if err < fam.tolerances[dtype]:
                fns[name] = fn
            else:
                notes[name] = f"WRONG rel err {err:.3g}"
        fns["[torch_compile]"] = lambda: compiled(x, r, w, eps)
        raced, summed = race_shape(f"{n_rows}x{n}/{dtype}", fns, notes, args, rng, top=5)
        rows += raced
        summary.append(summed)
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
    if cfg.kernel == "cooperative":
        return f"coop c{cfg.block_n} w{cfg.num_warps}"
    if cfg.kernel == "pipelined":
        return f"pipe c{cfg.block_n} w{cfg.num_warps} p{cfg.programs_per_sm}"
    if cfg.kernel == "rows":
        return f"rows b{cfg.block_n} r{cfg.rows} w{cfg.num_warps}"
    return f"looped c{cfg.block_n} w{cfg.num_warps}"


if __name__ == "__main__":
    raise SystemExit(main())
