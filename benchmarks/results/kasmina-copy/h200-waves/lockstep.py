"""Seeds in lockstep: a persistent grid of G programs, program p walking seeds p, p + G, p + 2G, ... whole. At 4000
seeds a program per seed runs about four waves, and programs that start as others finish walk their rows out of step:
the tiles in flight at once are scattered over x. ``moves.txt`` beside: the TMA kernel's tiles moved alone took 1.037x
a copy at 512x1000x64 (one wave, every program in step) and 1.195x at 512x4000x64. With every program on the same
round of seeds at once, each round reads a contiguous band of G seeds' columns, as one wave does.

Raced cold in one CUPTI session per point (``decode_tiles.race``) beside a copy of x and the shipped kernel: the
movement alone (x loaded and stored by TMA) a program per seed and in lockstep, and the TMA kernel in lockstep (its
body as shipped, inside the loop over seeds), at G = k x the SMs. Each candidate is checked first: the movement bit
for bit, the kernel against the float64 oracle.

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-waves/lockstep.py SHAPES [ROUNDS] [KS]
    TRITON_INTERPRET=1 PYTHONPATH=benchmarks python benchmarks/results/kasmina-copy/h200-waves/lockstep.py check
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


@triton.jit
def _lockstep_kernel(
    x_desc, y_desc, lifecycle_ptr, blueprint_id_ptr, alpha_ptr, w_ptr, b_ptr, telemetry_ptr, n_rows, n_seeds, NB,
    BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr, STAGES: tl.constexpr, PRECISION: tl.constexpr,
    PER_TILE: tl.constexpr, MOVE_ONLY: tl.constexpr,
):  # fmt: skip
    cols = tl.arange(0, BLOCK_C)
    rows = tl.arange(0, BLOCK_B)
    for seed in range(tl.program_id(0), n_seeds, tl.num_programs(0)):
        col0 = seed * BLOCK_C
        if MOVE_ONLY:
            for start in tl.range(0, n_rows, BLOCK_B, num_stages=STAGES):
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
            y = tma._tile(x_desc, y_desc, 0, col0, folded, fb, PRECISION)
            shift = tl.sum(tl.where(rows[:, None] == 0, y, 0.0), axis=0)
            d = y - shift[None, :]
            if PER_TILE:
                s1 = tl.sum(d, axis=0)
                s2 = tl.sum(d * d, axis=0)
            else:
                s1 = d
                s2 = d * d
            for start in tl.range(BLOCK_B, n_rows, BLOCK_B, num_stages=STAGES):
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
            n = n_rows.to(tl.float32)
            mean = shift + s1 / n
            m2 = tl.maximum(s2 - s1 * s1 / n, 0.0)
            every = tl.full([BLOCK_C], True, tl.int1)
            branch_free.store_telemetry(telemetry_ptr, seed, tl.zeros([BLOCK_C], dtype=tl.float32) + n, mean, m2, every)


def lockstep(inp: dict, tile: tma.TmaTile, programs: int, move_only: bool = False) -> tuple:
    x = inp["x"]
    x2d = x.view(-1, x.shape[-1])
    seeds = inp["lifecycle"].shape[0]
    y = torch.empty_like(x)
    tele = torch.empty((seeds, 2), dtype=torch.float32, device=x.device)
    _lockstep_kernel[(min(programs, seeds),)](
        *tma.descriptors(x2d, y.view(-1, y.shape[-1]), tile), inp["lifecycle"], inp["blueprint_id"], inp["alpha"],
        inp["weights"], inp["bias"], tele, x2d.shape[0], seeds, inp["weights"].shape[0],
        **tile.constexprs(branch_free.precision_of(x.dtype)), MOVE_ONLY=move_only, **tile.options(),
    )  # fmt: skip
    return y, tele



def _checked(fam, inp: dict, out: tuple, what: str) -> None:
    y_ref, t_ref = fam.oracle(**inp)
    y, tele = out
    err = max(rel_err(y, y_ref), rel_err(tele, t_ref))
    var = ((tele[:, 1].double() - t_ref[:, 1]).abs() / t_ref[:, 1].abs()).max().item()
    if not (err < 2e-2 and var < 2e-2):
        raise AssertionError(f"{what}: rel err {err:.3g}, variance {var:.3g}")


def check() -> None:
    fam = discover()["kasmina"]
    for shape, tile in (((48, 7, 32), tma.TmaTile(32, 16, 2, 2)), ((32, 5, 64), tma.TmaTile(64, 16, 2, 2, True))):
        for dtype in ("bf16", "fp16"):
            inp = fam.make_inputs(shape, dtype, "cpu", seed=sum(shape))
            inp["x"] = inp["x"] + 3.0
            inp["lifecycle"] = torch.arange(shape[-2], dtype=torch.int8) % 3
            for g in (1, 2, 3, shape[-2]):
                _checked(fam, inp, lockstep(inp, tile, g), f"{shape} {dtype} G={g}")
                assert torch.equal(lockstep(inp, tile, g, move_only=True)[0], inp["x"])
            print(f"ok {shape} {dtype}")


def main() -> None:
    if sys.argv[1] == "check":
        check()
        return
    from decode_tiles import race

    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    ks = [int(k) for k in (sys.argv[3] if len(sys.argv) > 3 else "2,4,8,16").split(",")]
    fam = discover()["kasmina"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| point (bf16) | tile | candidate | programs | µs | / copy | / shipped |")
    print("|---|---|---|---:|---:|---:|---:|")
    for s in sys.argv[1].split(","):
        shape = tuple(int(v) for v in s.split("x"))
        inp = fam.make_inputs(shape, "bf16", "cuda", sum(shape))
        x, seeds = inp["x"], shape[1]
        tile = tma.table_tile(shape[0], seeds, shape[2], sms)
        if tile is None:
            print(f"| {s} | no table row | | | | | |")
            continue
        out = torch.empty_like(x)
        fns = {"copy of x": (0, lambda: out.copy_(x)), "shipped": (seeds, lambda: tma.launch(**inp, tile=tile))}
        assert torch.equal(lockstep(inp, tile, seeds, move_only=True)[0], x)
        fns["moves, a program per seed"] = (seeds, lambda: lockstep(inp, tile, seeds, move_only=True))
        for k in ks:
            g = k * sms
            if g >= seeds:
                continue
            assert torch.equal(lockstep(inp, tile, g, move_only=True)[0], x)
            fns[f"moves in lockstep, {k} an SM"] = (g, lambda g=g: lockstep(inp, tile, g, move_only=True))
            try:
                _checked(fam, inp, lockstep(inp, tile, g), f"{s} G={g}")
            except Exception as exc:  # noqa: BLE001 - reported, not timed
                print(f"| {s} | | kernel in lockstep, {k} an SM | {g} | {type(exc).__name__}: {str(exc)[:80]} | | |")
                continue
            fns[f"kernel in lockstep, {k} an SM"] = (g, lambda g=g: lockstep(inp, tile, g))
        times = race({k: v[1] for k, v in fns.items()}, rounds)
        med = {k: statistics.median(v) for k, v in times.items()}
        tname = f"{tile.block_b}x{tile.num_warps} st{tile.stages}" + (" pt" if tile.per_tile else "")
        for k, (g, _) in fns.items():
            print(
                f"| {s} | {tname} | {k} | {g} | {med[k]:.2f} | {med[k] / med['copy of x']:.3f} | "
                f"{med[k] / med['shipped']:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
