"""The stacked kernel's EARLY (x, and with BY_BLUEPRINT the program's blueprint, loaded before the seeds' state) on
and off at the H200 tables' tiles (``stacked.table_tile``), where the kasmina grid raced with this folder's commits
read slower than the table's earlier grid. EARLY off is the kernel before that change. Each launch is checked against
the float64 oracle, then raced cold beside a copy of x in one CUPTI session per point (``decode_tiles.race``).

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-branch-early/stacked_early.py SHAPES DTYPES [ROUNDS]
"""

from __future__ import annotations

import dataclasses
import statistics
import sys

import torch
from bench_common import rel_err

from kprof.kernels import discover
from kprof.kernels.kasmina import stacked



def main() -> None:
    from decode_tiles import race

    shapes, dtypes = sys.argv[1].split(","), sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    fam = discover()["kasmina"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| dtype | point | tile | copy of x | EARLY off | EARLY on | on / off |")
    print("|---|---|---|---:|---:|---:|---:|")
    for dtype in dtypes:
        for s in shapes:
            shape = tuple(int(v) for v in s.split("x"))
            inp = fam.make_inputs(shape, dtype, "cuda", sum(shape))
            x = inp["x"]
            tile = stacked.table_tile(shape[0], shape[1], shape[2], sms, fp32=dtype == "fp32")
            if tile is None:
                print(f"| {dtype} | {s} | no table row | | | | |")
                continue
            on, off = dataclasses.replace(tile, early=True), dataclasses.replace(tile, early=False)
            y_ref, t_ref = fam.oracle(**inp)
            tol = fam.tolerances[dtype]
            for t in (on, off):
                y, tele = stacked.launch(**inp, tile=t)
                assert rel_err(y, y_ref) < tol and rel_err(tele, t_ref) < tol, f"{s} {dtype} early={t.early}"
            out = torch.empty_like(x)
            times = race(
                {
                    "copy": lambda: out.copy_(x),
                    "off": lambda: stacked.launch(**inp, tile=off),
                    "on": lambda: stacked.launch(**inp, tile=on),
                },
                rounds,
            )
            m = {k: statistics.median(v) for k, v in times.items()}
            name = f"{tile.block_s} seeds x {tile.rows} rows, {tile.num_warps} warps" + (
                " bb" if tile.by_blueprint else ""
            )
            print(
                f"| {dtype} | {s} | {name}{'' if tile.early else ' (table: off)'} | {m['copy']:.2f} | "
                f"{m['off']:.2f} | {m['on']:.2f} | {m['on'] / m['off']:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
