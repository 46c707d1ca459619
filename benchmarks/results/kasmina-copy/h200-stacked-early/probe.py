"""The stacked kernel with x and its blueprint loaded before the seeds' state against the kernel before that change
(the state first, then x, whose mask then depended on the ids with BY_BLUEPRINT, then each blueprint). Both at the
H200 tables' tiles (16-bit and fp32), raced cold in one CUPTI session per point (``decode_tiles.race``) beside a copy
of x, each checked against the float64 oracle first.

At this folder's commit (4fd72be) the kernel before was a copy in this file. Since bb0e1a4 it is ``kasmina.stacked``
with ``EARLY`` off (offline the same registers), so ``before`` launches that and the copy is gone; "early" is the
table's tile with ``EARLY`` on.

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-stacked-early/probe.py SHAPES DTYPES [ROUNDS]
"""

from __future__ import annotations

import dataclasses
import statistics
import sys

import torch
from bench_common import rel_err

from kprof.kernels import discover
from kprof.kernels.kasmina import stacked


def before(inp: dict, tile: stacked.StackedTile) -> tuple[torch.Tensor, torch.Tensor]:
    return stacked.launch(**inp, tile=dataclasses.replace(tile, early=False))


def early(inp: dict, tile: stacked.StackedTile) -> tuple[torch.Tensor, torch.Tensor]:
    return stacked.launch(**inp, tile=dataclasses.replace(tile, early=True))


def main() -> None:
    from decode_tiles import race

    shapes, dtypes = sys.argv[1].split(","), sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    fam = discover()["kasmina"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| dtype | point | tile | copy of x | before | x and blueprint early | early / before | y |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for dtype in dtypes:
        for s in shapes:
            shape = tuple(int(v) for v in s.split("x"))
            inp = fam.make_inputs(shape, dtype, "cuda", sum(shape))
            x = inp["x"]
            tile = stacked.table_tile(shape[0], shape[1], shape[2], sms, fp32=dtype == "fp32")
            if tile is None:
                print(f"| {dtype} | {s} | no table row | | | | | |")
                continue
            y_ref, t_ref = fam.oracle(**inp)
            tol = fam.tolerances[dtype]
            y0, t0 = before(inp, tile)
            y1, t1 = early(inp, tile)
            for name, (y, t) in (("before", (y0, t0)), ("early", (y1, t1))):
                assert rel_err(y, y_ref) < tol and rel_err(t, t_ref) < tol, f"{s} {dtype} {name}"
            same = "bit for bit" if torch.equal(y0, y1) and torch.equal(t0, t1) else "differs"
            out = torch.empty_like(x)
            times = race(
                {
                    "copy": lambda: out.copy_(x),
                    "before": lambda: before(inp, tile),
                    "early": lambda: early(inp, tile),
                },
                rounds,
            )
            m = {k: statistics.median(v) for k, v in times.items()}
            name = f"{tile.block_s} seeds x {tile.rows} rows, {tile.num_warps} warps" + (
                " bb" if tile.by_blueprint else ""
            )
            print(
                f"| {dtype} | {s} | {name} | {m['copy']:.2f} | {m['before']:.2f} | {m['early']:.2f} | "
                f"{m['early'] / m['before']:.3f} | {same} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
