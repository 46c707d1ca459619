"""Does the TMA kernel lose to the copy by its waves? A program per seed gives each SM whole seeds: at 512x1000x64
(16 x 2 tiles capped at 128 registers: 8 programs an SM, 1056 on an H200's 132 SMs) one wave holds all 1000 seeds, 76
SMs running 8 and 56 running 7. If an SM's rate is what its resident programs make it (the kernel is bound by
registers, not DRAM: ncu in ``../../grid/h200-kasmina-tma-ncu-f9436d2/``), the SMs with 8 set the time and a grid
whose every program takes the same number of row tiles would take about 7.58/8 of it.

Three parts, all raced cold in one CUPTI session per point (``decode_tiles.race``) beside a copy of x:

- ``waves``: the shipped TMA kernel at 512 rows x seeds around whole waves (924, 1000, 1056, 1188 at 64 channels),
  its time per seed: flat if SMs share DRAM evenly, a step at each wave if the SM's programs set it.
- ``flat``: this file's copy of the kernel on a grid of G programs, each taking an equal run of the call's row tiles
  (seed-major), crossing seeds where its run does; a seed walked by several programs merges their (count, mean, M2)
  per column with Chan's formula at the last ticket (``branch_free``'s parts, ``launching.ticket_counters``). G =
  the seeds (the shipped grid), twice the seeds, and k x 132 for k around the programs an SM.
- ``moves``: the same flat grid moving tiles only (x loaded and stored by TMA, no product, no statistics): how near
  a copy this access pattern can come at all.

Every candidate's y and telemetry are checked against the float64 oracle before it is timed.

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-waves/probe.py waves|flat [SHAPES] [DTYPES]
    TRITON_INTERPRET=1 PYTHONPATH=benchmarks python benchmarks/results/kasmina-copy/h200-waves/probe.py check
"""

from __future__ import annotations

import statistics
import sys

import torch
import triton
import triton.language as tl
from bench_common import rel_err

from kprof.kernels import discover
from kprof.kernels.kasmina import branch_free, tma
from kprof.kernels.lib import launching, split_k


@triton.jit
def _tma_flat_kernel(
    x_desc, y_desc, lifecycle_ptr, blueprint_id_ptr, alpha_ptr, w_ptr, b_ptr, telemetry_ptr, part_ptr, count_ptr,
    n_rows, n_seeds, NB, MAX_PARTS,
    BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr, STAGES: tl.constexpr, PRECISION: tl.constexpr,
    PER_TILE: tl.constexpr, MOVE_ONLY: tl.constexpr,
):  # fmt: skip
    p = tl.program_id(0)
    g = tl.num_programs(0)
    per_seed = n_rows // BLOCK_B
    total = n_seeds * per_seed
    t0 = (p * total) // g
    t1 = ((p + 1) * total) // g
    cols = tl.arange(0, BLOCK_C)
    rows = tl.arange(0, BLOCK_B)
    for seed in range(t0 // per_seed, (t1 - 1) // per_seed + 1):
        r0 = (tl.maximum(t0, seed * per_seed) - seed * per_seed) * BLOCK_B
        r1 = (tl.minimum(t1, (seed + 1) * per_seed) - seed * per_seed) * BLOCK_B
        col0 = seed * BLOCK_C
        if MOVE_ONLY:
            for start in tl.range(r0, r1, BLOCK_B, num_stages=STAGES):
                y_desc.store([start, col0], x_desc.load([start, col0]))
        else:
            lifecycle = tl.load(lifecycle_ptr + seed).to(tl.int32)
            bid = tl.load(blueprint_id_ptr + seed).to(tl.int64)
            valid = (bid >= 0) & (bid < NB)
            bid = tl.where(valid, bid, 0)
            coef = tl.where(lifecycle == 1, 1.0, tl.where(lifecycle == 2, tl.load(alpha_ptr + seed), 0.0))
            coef = tl.where(valid, coef, float("nan"))
            w = tl.load(w_ptr + bid * BLOCK_C * BLOCK_C + cols[:, None] * BLOCK_C + cols[None, :])
            folded = branch_free.fold(w, cols, cols, coef)
            fb = coef * tl.load(b_ptr + bid * BLOCK_C + cols).to(tl.float32)
            y = tma._tile(x_desc, y_desc, r0, col0, folded, fb, PRECISION)
            shift = tl.sum(tl.where(rows[:, None] == 0, y, 0.0), axis=0)
            d = y - shift[None, :]
            if PER_TILE:
                s1 = tl.sum(d, axis=0)
                s2 = tl.sum(d * d, axis=0)
            else:
                s1 = d
                s2 = d * d
            for start in tl.range(r0 + BLOCK_B, r1, BLOCK_B, num_stages=STAGES):
                d = tma._tile(x_desc, y_desc, start, col0, folded, fb, PRECISION) - shift[None, :]
                if PER_TILE:
                    s1 += tl.sum(d, axis=0)
                    s2 += tl.sum(d * d, axis=0)
                else:
                    s1 += d
                    s2 += d * d
            if not PER_TILE:
                s1 = tl.sum(s1, axis=0)
                s2 = tl.sum(s2, axis=0)
            n = (r1 - r0).to(tl.float32)
            cnt = tl.zeros([BLOCK_C], dtype=tl.float32) + n
            mean = shift + s1 / n
            m2 = tl.maximum(s2 - s1 * s1 / n, 0.0)
            every = tl.full([BLOCK_C], True, tl.int1)
            first = ((seed * per_seed + 1) * g - 1) // total  # the program whose run holds the seed's first tile
            n_parts = (((seed + 1) * per_seed) * g - 1) // total - first + 1
            if n_parts == 1:
                branch_free.store_telemetry(telemetry_ptr, seed, cnt, mean, m2, every)
            else:
                slot = part_ptr + ((p - first) + seed * MAX_PARTS) * 3 * BLOCK_C + cols  # int32: under 2^31 here
                tl.store(slot, cnt)
                tl.store(slot + BLOCK_C, mean)
                tl.store(slot + 2 * BLOCK_C, m2)
                if split_k.take_ticket(count_ptr, seed) == n_parts - 1:
                    base = part_ptr + (p - p + seed * MAX_PARTS) * 3 * BLOCK_C + cols
                    cnt, mean, m2 = branch_free._merge_parts(base, n_parts, BLOCK_C)
                    branch_free.store_telemetry(telemetry_ptr, seed, cnt, mean, m2, every)
                    split_k.release(count_ptr, seed)


def flat(inp: dict, tile: tma.TmaTile, programs: int, move_only: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    x = inp["x"]
    x2d = x.view(-1, x.shape[-1])
    n_rows, seeds = x2d.shape[0], inp["lifecycle"].shape[0]
    total = seeds * (n_rows // tile.block_b)
    if programs > total:
        raise ValueError(f"{programs} programs for {total} tiles")
    max_parts = (n_rows // tile.block_b) // max(1, total // programs) + 2
    y = torch.empty_like(x)
    tele = torch.empty((seeds, 2), dtype=torch.float32, device=x.device)
    parts = torch.empty(seeds * max_parts * 3 * tile.channels, dtype=torch.float32, device=x.device)
    _tma_flat_kernel[(programs,)](
        *tma.descriptors(x2d, y.view(-1, y.shape[-1]), tile), inp["lifecycle"], inp["blueprint_id"], inp["alpha"],
        inp["weights"], inp["bias"], tele, parts, launching.ticket_counters(x, seeds), n_rows, seeds,
        inp["weights"].shape[0], max_parts, **tile.constexprs(branch_free.precision_of(x.dtype)),
        MOVE_ONLY=move_only, **tile.options(),
    )  # fmt: skip
    return y, tele



def _checked(fam, inp: dict, out: tuple[torch.Tensor, torch.Tensor], what: str) -> None:
    y_ref, t_ref = fam.oracle(**inp)
    y, tele = out
    err = max(rel_err(y, y_ref), rel_err(tele, t_ref))
    var = ((tele[:, 1].double() - t_ref[:, 1]).abs() / t_ref[:, 1].abs()).max().item()
    if not (err < 2e-2 and var < 2e-2):
        raise AssertionError(f"{what}: rel err {err:.3g}, variance {var:.3g}")


def check() -> None:
    """The flat kernel in the interpreter: seeds split over programs at odd places, against the oracle."""
    fam = discover()["kasmina"]
    for shape, tile, grids in (
        ((96, 5, 32), tma.TmaTile(32, 16, 2, 2), (5, 7, 11, 13, 30)),
        ((64, 3, 64), tma.TmaTile(64, 16, 2, 2, per_tile=True), (1, 2, 5, 12)),
    ):
        for dtype in ("bf16", "fp16"):
            inp = fam.make_inputs(shape, dtype, "cpu", seed=sum(shape))
            inp["x"] = inp["x"] + 3.0
            inp["lifecycle"] = torch.arange(shape[-2], dtype=torch.int8) % 3
            for g in grids:
                _checked(fam, inp, flat(inp, tile, g), f"{shape} {dtype} G={g}")
                y, _ = flat(inp, tile, g, move_only=True)
                assert torch.equal(y, inp["x"])
            print(f"ok {shape} {dtype} grids {grids}")


def waves(shapes: list[str], dtypes: list[str], rounds: int) -> None:
    from decode_tiles import race

    fam = discover()["kasmina"]
    print("| dtype | point | tile | copy of x | TMA kernel | kernel / copy | kernel µs per 1000 seeds |")
    print("|---|---|---|---:|---:|---:|---:|")
    for dtype in dtypes:
        for s in shapes:
            shape = tuple(int(v) for v in s.split("x"))
            inp = fam.make_inputs(shape, dtype, "cuda", sum(shape))
            x = inp["x"]
            tile = tma.table_tile(shape[0], shape[1], shape[2], launching.sm_count(x))
            if tile is None:
                print(f"| {dtype} | {s} | no table row | | | | |")
                continue
            _checked(fam, inp, tma.launch(**inp, tile=tile), s)
            out = torch.empty_like(x)
            times = race({"copy": lambda: out.copy_(x), "tma": lambda: tma.launch(**inp, tile=tile)}, rounds)
            med = {k: statistics.median(v) for k, v in times.items()}
            name = f"{tile.block_b}x{tile.num_warps} st{tile.stages}" + (" pt" if tile.per_tile else "")
            print(
                f"| {dtype} | {s} | {name} | {med['copy']:.2f} | {med['tma']:.2f} | {med['tma'] / med['copy']:.3f} | "
                f"{med['tma'] / shape[1] * 1000:.2f} |",
                flush=True,
            )


def flats(shapes: list[str], dtypes: list[str], rounds: int, ks: list[int]) -> None:
    from decode_tiles import race

    fam = discover()["kasmina"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| dtype | point | tile | candidate | programs | µs | / copy | / shipped |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for dtype in dtypes:
        for s in shapes:
            shape = tuple(int(v) for v in s.split("x"))
            inp = fam.make_inputs(shape, dtype, "cuda", sum(shape))
            x, seeds = inp["x"], shape[1]
            tile = tma.table_tile(shape[0], seeds, shape[2], sms)
            if tile is None:
                print(f"| {dtype} | {s} | no table row | | | | | |")
                continue
            out = torch.empty_like(x)
            fns = {"copy of x": (0, lambda: out.copy_(x)), "shipped": (seeds, lambda: tma.launch(**inp, tile=tile))}
            grids = {"flat G=S": seeds, "flat G=2S": 2 * seeds, **{f"flat G={k}x{sms}": k * sms for k in ks}}
            for name, g in grids.items():
                try:
                    _checked(fam, inp, flat(inp, tile, g), f"{s} {name}")
                except Exception as exc:  # noqa: BLE001 - reported, not timed
                    print(f"| {dtype} | {s} | | {name} | {g} | {type(exc).__name__}: {str(exc)[:80]} | | |")
                    continue
                fns[name] = (g, lambda g=g: flat(inp, tile, g))
            for k in ks[-1:]:
                g = k * sms
                y, _ = flat(inp, tile, g, move_only=True)
                assert torch.equal(y, x)
                fns[f"moves only G={k}x{sms}"] = (g, lambda g=g: flat(inp, tile, g, move_only=True))
            y, _ = flat(inp, tile, seeds, move_only=True)
            fns["moves only G=S"] = (seeds, lambda: flat(inp, tile, seeds, move_only=True))
            times = race({k: v[1] for k, v in fns.items()}, rounds)
            med = {k: statistics.median(v) for k, v in times.items()}
            tname = f"{tile.block_b}x{tile.num_warps} st{tile.stages}" + (" pt" if tile.per_tile else "")
            for k, (g, _) in fns.items():
                print(
                    f"| {dtype} | {s} | {tname} | {k} | {g} | {med[k]:.2f} | {med[k] / med['copy of x']:.3f} | "
                    f"{med[k] / med['shipped']:.3f} |",
                    flush=True,
                )


def main() -> None:
    mode = sys.argv[1]
    if mode == "check":
        check()
        return
    shapes = sys.argv[2].split(",")
    dtypes = (sys.argv[3] if len(sys.argv) > 3 else "bf16").split(",")
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 10
    if mode == "waves":
        waves(shapes, dtypes, rounds)
    else:
        flats(shapes, dtypes, rounds, [int(k) for k in (sys.argv[5] if len(sys.argv) > 5 else "6,7,8").split(",")])


if __name__ == "__main__":
    main()
