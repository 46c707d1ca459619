"""How near a copy can tiles of seeds' columns come? ``probe.py`` found its movement-only kernel (x loaded and stored
by TMA in the TMA kernel's tiles: one seed's C columns x BLOCK_B rows, a program per seed) at 1.04-1.20x a copy of x.
Here the same movement-only kernel takes K adjacent seeds a program, either as one box of BLOCK_B x K*C elements or
as K boxes of one seed each issued together, its rows optionally split over SPLIT programs, so each DRAM row is read
in runs of K*C*2 bytes instead of C*2. Every candidate's y is checked to be x bit for bit before it is timed; all are
raced cold in one CUPTI session per point (``decode_tiles.race``) beside a copy of x.

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-waves/moves.py SHAPES [ROUNDS]
    TRITON_INTERPRET=1 PYTHONPATH=benchmarks python benchmarks/results/kasmina-copy/h200-waves/moves.py check
"""

from __future__ import annotations

import statistics
import sys

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching


@triton.jit
def _moves_kernel(
    x_desc, y_desc, n_rows,
    BLOCK_B: tl.constexpr, C: tl.constexpr, K: tl.constexpr, ONE_BOX: tl.constexpr, SPLIT: tl.constexpr,
    STAGES: tl.constexpr,
):  # fmt: skip
    col0 = tl.program_id(0) * K * C
    part = n_rows // SPLIT
    r0 = tl.program_id(1) * part
    for start in tl.range(r0, r0 + part, BLOCK_B, num_stages=STAGES):
        if ONE_BOX:
            y_desc.store([start, col0], x_desc.load([start, col0]))
        else:
            for j in tl.static_range(K):
                y_desc.store([start, col0 + j * C], x_desc.load([start, col0 + j * C]))


def moves(x2d: torch.Tensor, c: int, k: int, block_b: int, one_box: bool, split: int, warps: int) -> torch.Tensor:
    y = torch.empty_like(x2d)
    block = [block_b, k * c if one_box else c]
    xd = launching.TensorDescriptor.from_tensor(x2d, block)
    yd = launching.TensorDescriptor.from_tensor(y, block)
    seeds = x2d.shape[1] // c
    _moves_kernel[(seeds // k, split)](
        xd, yd, x2d.shape[0], BLOCK_B=block_b, C=c, K=k, ONE_BOX=one_box, SPLIT=split, STAGES=4, num_warps=warps
    )
    return y


def candidates(rows: int, seeds: int, c: int) -> list[tuple[int, int, bool, int]]:
    out = []
    for k in (1, 2, 4, 8):
        if seeds % k or k * c > 256:
            continue
        for block_b in (16, 64):
            for one_box in (True, False) if k > 1 else (True,):
                for split in (1, 4):
                    if rows % (split * block_b) == 0:
                        out.append((k, block_b, one_box, split))
    return out


def name(k: int, block_b: int, one_box: bool, split: int) -> str:
    return f"{k} seeds, {block_b} rows, {'one box' if one_box else f'{k} boxes'}, rows in {split}"


def check() -> None:
    for rows, seeds, c in ((64, 8, 32), (128, 4, 64)):
        x = torch.randn(rows, seeds * c).to(torch.bfloat16)
        for cand in candidates(rows, seeds, c):
            assert torch.equal(moves(x, c, *cand, warps=2), x), cand
        print(f"ok {rows}x{seeds}x{c}: {len(candidates(rows, seeds, c))} candidates")


def main() -> None:
    if sys.argv[1] == "check":
        check()
        return
    from decode_tiles import race

    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    print("| point (bf16) | candidate | warps | µs | / copy |")
    print("|---|---|---:|---:|---:|")
    for s in sys.argv[1].split(","):
        rows, seeds, c = (int(v) for v in s.split("x"))
        x = torch.randn(rows, seeds * c, device="cuda").to(torch.bfloat16)
        out = torch.empty_like(x)
        fns = {"copy of x": lambda: out.copy_(x)}
        for cand in candidates(rows, seeds, c):
            for warps in (2, 4):
                try:
                    ok = torch.equal(moves(x, c, *cand, warps=warps), x)
                except Exception as exc:  # noqa: BLE001 - reported, not timed
                    print(f"| {s} | {name(*cand)} | {warps} | {type(exc).__name__}: {str(exc)[:80]} | |")
                    continue
                if not ok:
                    print(f"| {s} | {name(*cand)} | {warps} | WRONG | |")
                    continue
                fns[f"{name(*cand)}|{warps}"] = lambda cand=cand, warps=warps: moves(x, c, *cand, warps=warps)
        times = race(fns, rounds)
        med = {k: statistics.median(v) for k, v in times.items()}
        for k in sorted(med, key=med.get):
            cand, _, warps = k.partition("|")
            print(f"| {s} | {cand} | {warps} | {med[k]:.2f} | {med[k] / med['copy of x']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
