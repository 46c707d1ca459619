"""kasmina's TMA kernel over two or four adjacent seeds a program (``SEEDS``: tiles SEEDS x C columns wide, one product
by a block-diagonal matrix of the seeds' folded blueprints) against the tile the H200's table launches (one seed a
program), at points where the ops API runs the TMA kernel. At 32 channels a seed's row is 64 bytes, half a 128-byte
line; moved with nothing else, two seeds a box took 1.000x a copy of x at 512x1000x32 where a seed a box took 1.104x
(``../h200-waves/``). Every launch is checked against the float64 oracle first (and y against the table's tile, bit
for bit), then raced cold beside a copy of x in one CUPTI session per point (``decode_tiles.race``).

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-pairs/probe.py SHAPES DTYPES [ROUNDS]

It runs on the tree at 5f379ca, whose ``kasmina.tma`` has ``SEEDS`` (``TmaTile.seeds``); the kernel was raced slower
and taken out again after it (``README.md`` beside this file).
"""

from __future__ import annotations

import statistics
import sys

import torch
from bench_common import rel_err

from kprof.kernels import discover
from kprof.kernels.kasmina import tma
from kprof.kernels.lib import launching

# (seeds a program, rows a tile, warps, stages, sums per column) by channels
CANDIDATES = {
    32: [(2, 32, 4, 6, True), (2, 32, 2, 6, True), (2, 16, 2, 6, True), (2, 32, 4, 6, False), (2, 64, 4, 4, True),
         (2, 32, 8, 6, True), (2, 32, 4, 4, True), (4, 32, 4, 6, True), (4, 32, 8, 6, True)],
    64: [(2, 16, 4, 4, True), (2, 32, 4, 4, True), (2, 16, 8, 4, True), (2, 32, 8, 4, True), (2, 16, 4, 6, False)],
}  # fmt: skip


def name(t: tma.TmaTile) -> str:
    return (f"{t.seeds} x {t.block_b} x {t.num_warps}w x {t.stages}st" + (" per col" if t.per_tile else "")
            + (f" r{t.maxnreg}" if t.maxnreg else ""))  # fmt: skip


def main() -> None:
    from decode_tiles import race

    shapes, dtypes = sys.argv[1].split(","), sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    fam = discover()["kasmina"]
    sms = launching.sm_count(torch.empty(1, device="cuda"))
    for dtype in dtypes:
        for s in shapes:
            rows, seeds, c = (int(v) for v in s.split("x"))
            inp = fam.make_inputs((rows, seeds, c), dtype, "cuda", rows + seeds + c)
            x = inp["x"]
            shipped = tma.table_tile(rows, seeds, c, sms)
            if shipped is None:
                print(f"== {dtype} {s}: no TMA tile in the table", flush=True)
                continue
            tiles = {"shipped " + name(shipped): shipped}
            for k, b, w, st, pt in CANDIDATES[c]:
                if rows % b == 0 and seeds % k == 0:
                    t = tma.TmaTile(c, b, w, st, per_tile=pt, seeds=k)
                    tiles[name(t)] = t
            y_ref, t_ref = fam.oracle(**inp)
            tol = fam.tolerances[dtype]
            y0, _ = tma.launch(**inp, tile=shipped)
            fns, notes = {}, {}
            out = torch.empty_like(x)
            fns["copy of x"] = lambda: out.copy_(x)
            for n, t in tiles.items():
                try:
                    y, tele = tma.launch(**inp, tile=t)
                    torch.cuda.synchronize()
                except Exception as exc:  # noqa: BLE001 - a tile that does not compile or launch is reported
                    notes[n] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
                    continue
                if not (rel_err(y, y_ref) < tol and rel_err(tele, t_ref) < tol):
                    notes[n] = "wrong output"
                    continue
                notes[n] = "y bit for bit the table's" if torch.equal(y, y0) else "y differs from the table's"
                fns[n] = lambda t=t: tma.launch(**inp, tile=t)
            m = {k: statistics.median(v) for k, v in race(fns, rounds).items()}
            copy = m.pop("copy of x")
            base = m["shipped " + name(shipped)]
            print(f"== {dtype} {s}: copy of x {copy:.2f} us", flush=True)
            print("| tile (seeds x rows x warps x stages) | us | over the copy | over the table's | |")
            print("|---|---:|---:|---:|---|")
            for n, v in sorted(m.items(), key=lambda kv: kv[1]):
                print(f"| {n} | {v:.2f} | {v / copy:.3f} | {v / base:.3f} | {notes.get(n, '')} |", flush=True)
            for n, why in notes.items():
                if n not in m:
                    print(f"  left out {n}: {why}", flush=True)


if __name__ == "__main__":
    main()
