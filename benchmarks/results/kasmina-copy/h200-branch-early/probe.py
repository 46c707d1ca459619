"""branch_free's kernel with the program's first row tile of x loaded before the seed's state (the kernel's EARLY),
against the kernel as the ops API launches it (EARLY 0, the code before this change, the same PTX offline), at the
points where the ops API takes branch_free's kernel on an H200 (neither the TMA nor the stacked table covers them).
EARLY 1: the first tile early, then the loop over the rest as before; EARLY 2: the first tile early and each next
tile loaded one step ahead, carried through the loop. Each launch keeps every other setting of the H200's table
(``branch_free.config_for``), is checked against the float64 oracle first, and is raced cold beside a copy of x in
one CUPTI session per point (``decode_tiles.race``).

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-branch-early/probe.py SHAPES DTYPES [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys

import torch
from bench_common import rel_err

from kprof.kernels import discover
from kprof.kernels.kasmina import branch_free, op_plan

EARLY = (0, 1, 2)



def main() -> None:
    from decode_tiles import race

    shapes, dtypes = sys.argv[1].split(","), sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    fam = discover()["kasmina"]
    print("| dtype | point | launch | copy of x | EARLY 0 | EARLY 1 | EARLY 2 | 1 / 0 | 2 / 0 | y and telemetry |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for dtype in dtypes:
        for s in shapes:
            shape = tuple(int(v) for v in s.split("x"))
            inp = fam.make_inputs(shape, dtype, "cuda", sum(shape))
            x = inp["x"]
            if op_plan._route(x, shape[1], shape[2]) is not None:
                print(f"| {dtype} | {s} | not branch_free's: the ops API takes another kernel | | | | | | | |")
                continue
            cfg = branch_free.config_for(x, shape[1], shape[2], True)
            y_ref, t_ref = fam.oracle(**inp)
            tol = fam.tolerances[dtype]
            outs = {e: branch_free.launch(**inp, telemetry=True, early=e) for e in EARLY}
            for e, (y, t) in outs.items():
                assert rel_err(y, y_ref) < tol and rel_err(t, t_ref) < tol, f"{s} {dtype} EARLY {e}"
            same = all(torch.equal(outs[0][0], outs[e][0]) and torch.equal(outs[0][1], outs[e][1]) for e in EARLY)
            out = torch.empty_like(x)
            fns = {"copy": lambda: out.copy_(x)}
            for e in EARLY:
                fns[f"e{e}"] = lambda e=e: branch_free.launch(**inp, telemetry=True, early=e)
            m = {k: statistics.median(v) for k, v in race(fns, rounds).items()}
            name = (
                f"{cfg.block_b} x {cfg.num_warps}, STATS {cfg.stats}, {cfg.row_programs} a seed"
                + (", by state" if cfg.by_state else "")
                + (f", {cfg.maxnreg} registers" if cfg.maxnreg else "")
                + (", even" if cfg.even else "")
            )
            print(
                f"| {dtype} | {s} | {name} | {m['copy']:.2f} | {m['e0']:.2f} | {m['e1']:.2f} | {m['e2']:.2f} | "
                f"{m['e1'] / m['e0']:.3f} | {m['e2'] / m['e0']:.3f} | "
                f"{'bit for bit' if same else 'differs'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
