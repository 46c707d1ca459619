"""Experiment: kprof's TMA products at K 2048, where both matrix families miss 1.03x cuBLAS at prefill sizes.
A tile's K loop is 32 steps of 64 there, so what a tile pays outside it (filling the pipeline, the epilogue)
weighs twice what it does at K 4096. swiglu's interleaved kernel was persistent only up to 8 waves of tiles (a
rule measured at K 4096); past that one program per tile ran, and nothing overlaps a tile's epilogue with the next
tile's loads (``swiglu.tuned.persistent_launch`` is the rule these races led to).

    python benchmarks/short_k_products.py --out DIR [--swiglu 2048x2048x11008,...] [--rmsnorm-linear ...]
        [--dtypes bf16] [--rounds 3] [--skip pers-g8,...]

swiglu candidates on the interleaved weights: ``plain`` (one program per tile, the shipped tiles), ``pers``
(persistent, the shipped persistent tiles: halves stored, 4 stages, the last wave in parts), ``pers-g8`` (the same
with GROUP_M 8), ``pers-whole`` (no parts in the last wave), and ``[shipped]`` (``triton_tuned_prepared``);
``[cublas]`` is ``x @ [Wg Wu]``. rmsnorm_linear candidates on prepared weights: the rstd kernel and the persistent
TMA product with each of ``TILES`` (tiles; output stored in halves or whole; ``[shipped]``: the shipped ones),
``no-tail`` (the shipped tiles, the last partial wave's tiles whole) and ``desc-between`` (the product's
descriptors made between the rstd kernel's launch and the product's, as before the shipped order), against
``[x@W]`` and ``[norm+addmm]``; ``rstd-*`` (``RSTD_GRIDS``): the rstd kernel in longer steps, or with another grid
from 2049 rows. Commit 15ac428's version of this script also raced the last wave in shares of K.
Every candidate is checked against the float64 oracle first; cold, interleaved rounds in a random order.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch
from bench_common import add_race_args, checked_against, print_notes, print_race, race_rounds, write_csv

from kprof.kernels import discover
from kprof.kernels.lib import launching
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear import rstd_epilogue
from kprof.kernels.rmsnorm_linear.fused import folded_weight
from kprof.kernels.swiglu import tuned as swiglu_tuned

SWIGLU = (
    "2048x2048x11008,2048x2048x14336,2048x2048x28672,8192x2048x5504,8192x2048x11008,2048x4096x14336,"
    "2048x2048x5504,2048x4096x11008"
)
RMSNORM_LINEAR = "2048x2048x5504,2048x2048x11008,8192x2048x5504,8192x2048x11008,2048x2048x14336"
# rmsnorm_linear's product: ((BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages), output tiles stored in halves)
TILES = {
    "whole-s3": ((128, 256, 64, 8, 8, 3), False),  # the tiles before halves, 4 stages, GROUP_M 16 (and LONG_K_)
    "g16": ((128, 256, 64, 16, 8, 3), False),
    "halves-s4": ((128, 256, 64, 8, 8, 4), True),
    "halves-s3-g16": ((128, 256, 64, 16, 8, 3), True),
    # narrower or taller tiles, for N 5504 (21.5 tiles of 256 columns; 2.7 waves at 2048x2048x5504)
    "t128x128-s4": ((128, 128, 64, 16, 8, 4), True),
    "t128x128-s5": ((128, 128, 64, 16, 8, 5), True),
    "t256x128-s3": ((256, 128, 64, 16, 8, 3), True),
    "t256x128-s4": ((256, 128, 64, 16, 8, 4), True),
    # 128-deep K steps: half the K loop's steps (16 at K 2048), 2-3 stages in the shared memory 4 of 64 take
    "k128-s2": ((128, 256, 128, 16, 8, 2), True),
    "t128x128-k128-s3": ((128, 128, 128, 16, 8, 3), True),
    "t256x128-k128-s2": ((256, 128, 128, 16, 8, 2), True),
}

# the rstd kernel's steps, and its grid from 2049 rows: (BLOCK_K, rows per block, programs per SM, warps)
RSTD_GRIDS = {
    "rstd-bk2048": (2048,),
    "rstd-bk4096": (4096,),
    "rstd-r4-bk2048": (2048, 4, 2, 8),
    "rstd-r4-1sm-bk2048": (2048, 4, 1, 8),
    "rstd-r2-1sm-bk4096": (4096, 2, 1, 8),
}


def swiglu_candidates(fam, spec: str, dtype: str) -> tuple[dict, dict]:
    m, k, n = (int(v) for v in spec.split("x"))
    inputs = fam.make_inputs((m, k, n), dtype, "cuda", seed=1)
    x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
    ref = fam.oracle(**inputs)
    w_int = swiglu_tuned.interleaved_weights(wg, wu)
    w_cat = torch.cat([wg, wu], dim=1)
    shipped = fam.get_provider("triton_tuned_prepared").fn
    pg, pn, pk, _, pw, ps = swiglu_tuned.PERSISTENT_CONFIG

    def kernel(**kw):
        def run() -> torch.Tensor:
            y = torch.empty((m, n), dtype=x.dtype, device=x.device)
            swiglu_tuned.launch_interleaved(x, w_int, y, **kw)
            return y

        return run

    checked = {
        "plain": kernel(persistent=False),
        "pers": kernel(persistent=True),
        "pers-g8": kernel(persistent=True, config=(pg, pn, pk, 8, pw, ps)),
        "pers-whole": kernel(persistent=True, tail=False),
        "[shipped]": lambda: shipped(x, wg, wu),
    }
    fns, notes = checked_against(checked, ref)
    fns["[cublas]"] = lambda: x @ w_cat
    return fns, notes


def rmsnorm_linear_candidates(fam, spec: str, dtype: str) -> tuple[dict, dict]:
    m, k, n = (int(v) for v in spec.split("x"))
    inputs = fam.make_inputs((m, k, n), dtype, "cuda", seed=1)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], 1e-6
    ref = fam.oracle(**inputs)
    wf = folded_weight(g, w)

    def with_tiles(tiles: tuple[tuple[int, ...], bool] | None):
        def run() -> torch.Tensor:
            if tiles is None:  # the shipped rule (tma_tiles)
                return rstd_epilogue.rmsnorm_linear_folded(x, g, w, b, eps, wf)
            saved = rstd_epilogue.tma_tiles
            rstd_epilogue.tma_tiles = lambda *_: tiles
            try:
                return rstd_epilogue.rmsnorm_linear_folded(x, g, w, b, eps, wf)
            finally:
                rstd_epilogue.tma_tiles = saved

        return run

    def setting(name: str, value: bool):
        def run() -> torch.Tensor:
            shipped = getattr(rstd_epilogue, name)
            setattr(rstd_epilogue, name, value)
            try:
                return rstd_epilogue.rmsnorm_linear_folded(x, g, w, b, eps, wf)
            finally:
                setattr(rstd_epilogue, name, shipped)

        return run

    def descriptors_between() -> torch.Tensor:
        # the order before 15ac428's race: the product's descriptors made between the rstd launch and the product's
        rstd = torch.empty(m, dtype=torch.float32, device=x.device)
        y = torch.empty((m, n), dtype=x.dtype, device=x.device)
        pdl = launching.pdl_ready(x)
        rstd_epilogue.launch_row_rstd(x, rstd, eps, pdl=pdl)
        rstd_epilogue.tma_product(x, wf, b, y, rstd, pdl=pdl)
        return y

    def rstd_grid(block_k: int, rows: int | None = None, per_sm: int = 2, warps: int = 8):
        # the rstd kernel's steps of block_k columns; from 2049 rows (rows given) per_sm programs of ``warps`` warps
        # per SM over blocks of ``rows`` rows
        def grid(m_: int, sms: int) -> tuple[int, int, int]:
            return (rows, per_sm * sms, warps) if rows and m_ > 2048 else shipped_grid(m_, sms)

        def run() -> torch.Tensor:
            saved = rstd_epilogue.overlapped_rstd_grid, rstd_epilogue.RSTD_BLOCK_K
            rstd_epilogue.overlapped_rstd_grid, rstd_epilogue.RSTD_BLOCK_K = grid, block_k
            try:
                return rstd_epilogue.rmsnorm_linear_folded(x, g, w, b, eps, wf)
            finally:
                rstd_epilogue.overlapped_rstd_grid, rstd_epilogue.RSTD_BLOCK_K = saved

        return run

    shipped_grid = rstd_epilogue.overlapped_rstd_grid
    checked = {name: with_tiles(t) for name, t in TILES.items()}
    checked.update({name: rstd_grid(*spec) for name, spec in RSTD_GRIDS.items()})
    checked["[shipped]"] = with_tiles(None)
    checked["no-tail"] = setting("TMA_TAIL_SPLITS", False)
    checked["desc-between"] = descriptors_between
    checked["[norm+addmm]"] = lambda: torch.addmm(b, rmsnorm_tuned(x, g, eps), w)
    fns, notes = checked_against(checked, ref)
    fns["[x@W]"] = lambda: x @ w
    return fns, notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_race_args(ap, dtypes="bf16", budget_s=400.0)
    ap.add_argument("--swiglu", default=SWIGLU)
    ap.add_argument("--rmsnorm-linear", default=RMSNORM_LINEAR)
    ap.add_argument("--skip", default="", help="comma-separated candidates not to time")
    args = ap.parse_args()
    fams = discover()
    rng = random.Random(0)
    start = time.monotonic()
    rows, table = [], []
    points = [("rmsnorm_linear", s) for s in args.rmsnorm_linear.split(",") if s] + [
        ("swiglu", s) for s in args.swiglu.split(",") if s
    ]
    build = {"swiglu": swiglu_candidates, "rmsnorm_linear": rmsnorm_linear_candidates}
    yardstick = {"swiglu": "[cublas]", "rmsnorm_linear": "[x@W]"}
    for dtype in args.dtypes.split(","):
        for family, spec in points:
            if time.monotonic() - start > args.budget_s:
                print(f"budget spent: {family} {dtype} {spec} not raced", flush=True)
                continue
            fns, notes = build[family](fams[family], spec, dtype)
            fns = {name: fn for name, fn in fns.items() if name not in args.skip.split(",")}
            times = race_rounds(fns, args.rounds, args.rep_ms, rng)
            del fns
            torch.cuda.empty_cache()
            print_race(f"{family} {dtype} {spec}", times, top=len(times))
            print_notes(notes)
            med = {name: statistics.median(v) for name, v in times.items()}
            table.append((family, dtype, spec, med))
            rows += [
                {
                    "family": family,
                    "dtype": dtype,
                    "shape": spec,
                    "candidate": name,
                    "median_us": med[name],
                    "rounds": " ".join(f"{u:.2f}" for u in v),
                }
                for name, v in times.items()
            ]
            write_csv(args.out / "short_k_products.csv", rows)
    print("\n| family | dtype | shape | yardstick µs | each candidate / yardstick |")
    print("|---|---|---|---:|---|")
    for family, dtype, spec, med in table:
        ys = med[yardstick[family]]
        cells = ", ".join(
            f"{c} {v / ys:.3f}" for c, v in sorted(med.items(), key=lambda kv: kv[1]) if c != yardstick[family]
        )
        print(f"| {family} | {dtype} | {spec} | {ys:.1f} | {cells} |")


if __name__ == "__main__":
    main()
