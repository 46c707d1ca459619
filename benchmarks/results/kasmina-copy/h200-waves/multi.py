"""Several seeds a program, one TMA box: ``moves.txt`` beside found x's tiles moved fastest at 4000 seeds in boxes of
K adjacent seeds (512 bytes a row at 64 channels) by programs that each take a quarter of the rows: 1.072x a copy at
512x4000x64, where a program per seed, one seed a box, took 1.195x. Can the kernel compute in that pattern?

Each program takes K adjacent seeds and 1/P of the rows (grid: seed groups x P). x arrives as one [BLOCK_B, K, C] box
(a 3-D descriptor over x viewed as [rows, S, C]), is permuted to [K, BLOCK_B, C] and multiplied by the K seeds'
folded blueprints [K, C, C] in one batched product (``y = x (coef W + (1 - coef) I) + coef b``), and y leaves as one
box. Each program sums its seeds' statistics per column, shifted by its own first row of y, and stores (count, mean,
M2) per seed, part and column: the merge of the P parts (branch_free's at a last ticket) is left out of this probe
and done on the host to check them. So the time here is a floor for such a kernel: its merge is missing.

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-waves/multi.py SHAPES [ROUNDS]
    TRITON_INTERPRET=1 PYTHONPATH=benchmarks python benchmarks/results/kasmina-copy/h200-waves/multi.py check
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
from kprof.kernels.lib import launching


@triton.jit
def _dot3(x, w, acc, PRECISION: tl.constexpr):
    if PRECISION == 1:
        return tl.dot(x.to(tl.float32), w.to(tl.float32), acc, input_precision="ieee")
    else:
        return tl.dot(x, w, acc)


@triton.jit
def _multi_kernel(
    x_desc, y_desc, lifecycle_ptr, blueprint_id_ptr, alpha_ptr, w_ptr, b_ptr, part_ptr, n_rows, NB,
    BLOCK_B: tl.constexpr, C: tl.constexpr, K: tl.constexpr, STAGES: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    group = tl.program_id(0)
    part = tl.program_id(1)
    n_parts = tl.num_programs(1)
    seeds = group * K + tl.arange(0, K)
    cols = tl.arange(0, C)
    lifecycle = tl.load(lifecycle_ptr + seeds).to(tl.int32)
    bid = tl.load(blueprint_id_ptr + seeds).to(tl.int64)
    valid = (bid >= 0) & (bid < NB)
    bid = tl.where(valid, bid, 0)
    coef = tl.where(lifecycle == 1, 1.0, tl.where(lifecycle == 2, tl.load(alpha_ptr + seeds), 0.0))
    coef = tl.where(valid, coef, float("nan"))
    w = tl.load(w_ptr + bid[:, None, None] * C * C + cols[None, :, None] * C + cols[None, None, :])
    eye = tl.where(cols[:, None] == cols[None, :], 1.0, 0.0)
    folded = (coef[:, None, None] * w.to(tl.float32) + (1.0 - coef)[:, None, None] * eye[None, :, :]).to(w.dtype)
    fb = coef[:, None] * tl.load(b_ptr + bid[:, None] * C + cols[None, :]).to(tl.float32)
    per = n_rows // n_parts
    r0 = part * per
    x = tl.permute(x_desc.load([r0, group * K, 0]), (1, 0, 2))
    y = _dot3(x, folded, tl.zeros([K, BLOCK_B, C], dtype=tl.float32), PRECISION) + fb[:, None, :]
    y_desc.store([r0, group * K, 0], tl.permute(y, (1, 0, 2)).to(y_desc.dtype))
    rows = tl.arange(0, BLOCK_B)
    shift = tl.sum(tl.where(rows[None, :, None] == 0, y, 0.0), axis=1)
    d = y - shift[:, None, :]
    s1 = tl.sum(d, axis=1)
    s2 = tl.sum(d * d, axis=1)
    for start in tl.range(r0 + BLOCK_B, r0 + per, BLOCK_B, num_stages=STAGES):
        x = tl.permute(x_desc.load([start, group * K, 0]), (1, 0, 2))
        y = _dot3(x, folded, tl.zeros([K, BLOCK_B, C], dtype=tl.float32), PRECISION) + fb[:, None, :]
        y_desc.store([start, group * K, 0], tl.permute(y, (1, 0, 2)).to(y_desc.dtype))
        d = y - shift[:, None, :]
        s1 += tl.sum(d, axis=1)
        s2 += tl.sum(d * d, axis=1)
    n = per.to(tl.float32)
    slot = part_ptr + ((seeds[:, None] * n_parts + part) * 3) * C + cols[None, :]
    tl.store(slot, tl.zeros([K, C], dtype=tl.float32) + n)
    tl.store(slot + C, shift + s1 / n)
    tl.store(slot + 2 * C, tl.maximum(s2 - s1 * s1 / n, 0.0))


def multi(inp: dict, k: int, parts: int, block_b: int, warps: int, stages: int) -> tuple:
    x = inp["x"]
    seeds, c = inp["lifecycle"].shape[0], inp["weights"].shape[-1]
    n_rows = x.numel() // x.shape[-1]
    x3 = x.view(n_rows, seeds, c)
    y = torch.empty_like(x)
    parts_buf = torch.empty(seeds * parts * 3 * c, dtype=torch.float32, device=x.device)
    block = [block_b, k, c]
    xd = launching.TensorDescriptor.from_tensor(x3, block)
    yd = launching.TensorDescriptor.from_tensor(y.view(n_rows, seeds, c), block)
    _multi_kernel[(seeds // k, parts)](
        xd, yd, inp["lifecycle"], inp["blueprint_id"], inp["alpha"], inp["weights"], inp["bias"], parts_buf, n_rows,
        inp["weights"].shape[0], BLOCK_B=block_b, C=c, K=k, STAGES=stages,
        PRECISION=branch_free.precision_of(x.dtype), num_warps=warps,
    )  # fmt: skip
    return y, parts_buf.view(seeds, parts, 3, c)


def telemetry_of(parts: torch.Tensor) -> torch.Tensor:
    """Each seed's (mean, variance) from its parts' per-column (count, mean, M2), merged in float64 on the host."""
    p = parts.double()
    cnt, mean, m2 = p[:, :, 0], p[:, :, 1], p[:, :, 2]
    n = cnt.sum(dim=(1, 2))
    seed_mean = (cnt * mean).sum(dim=(1, 2)) / n
    seed_m2 = (m2 + cnt * (mean - seed_mean[:, None, None]) ** 2).sum(dim=(1, 2))
    return torch.stack([seed_mean, seed_m2 / n], dim=1)



def _checked(fam, inp: dict, out: tuple, what: str) -> None:
    y_ref, t_ref = fam.oracle(**inp)
    y, parts = out
    tele = telemetry_of(parts)
    err = max(rel_err(y, y_ref), rel_err(tele, t_ref))
    var = ((tele[:, 1] - t_ref[:, 1].double()).abs() / t_ref[:, 1].abs()).max().item()
    if not (err < 2e-2 and var < 2e-2):
        raise AssertionError(f"{what}: rel err {err:.3g}, variance {var:.3g}")


def candidates(rows: int, seeds: int, c: int) -> list[tuple[int, int, int, int, int]]:
    out = []
    for k in (2, 4, 8):
        for parts in (1, 2, 4):
            for block_b in (16, 32):
                for warps in (4, 8):
                    if seeds % k == 0 and k * c <= 256 and rows % (parts * block_b) == 0 and rows // parts > block_b:
                        out.append((k, parts, block_b, warps, 3))
    return out


def check() -> None:
    fam = discover()["kasmina"]
    for shape in ((64, 8, 32), (64, 4, 64)):
        for dtype in ("bf16", "fp16"):
            inp = fam.make_inputs(shape, dtype, "cpu", seed=sum(shape))
            inp["x"] = inp["x"] + 3.0
            inp["lifecycle"] = torch.arange(shape[-2], dtype=torch.int8) % 3
            for cand in candidates(*shape):
                if cand[3] == 4:
                    _checked(fam, inp, multi(inp, *cand), f"{shape} {dtype} {cand}")
            print(f"ok {shape} {dtype}")


def main() -> None:
    if sys.argv[1] == "check":
        check()
        return
    from decode_tiles import race

    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    fam = discover()["kasmina"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| point (bf16) | candidate | µs | / copy | / shipped |")
    print("|---|---|---:|---:|---:|")
    for s in sys.argv[1].split(","):
        shape = tuple(int(v) for v in s.split("x"))
        inp = fam.make_inputs(shape, "bf16", "cuda", sum(shape))
        x = inp["x"]
        tile = tma.table_tile(shape[0], shape[1], shape[2], sms)
        out = torch.empty_like(x)
        fns = {"copy of x": lambda: out.copy_(x)}
        if tile is not None:
            fns["shipped (TMA kernel)"] = lambda: tma.launch(**inp, tile=tile)
        for cand in candidates(*shape):
            name = f"{cand[0]} seeds, rows in {cand[1]}, {cand[2]} rows, {cand[3]} warps"
            try:
                _checked(fam, inp, multi(inp, *cand), f"{s} {name}")
            except Exception as exc:  # noqa: BLE001 - reported, not timed
                print(f"| {s} | {name} | {type(exc).__name__}: {str(exc)[:90]} | | |")
                continue
            fns[name] = lambda cand=cand: multi(inp, *cand)
        times = race(fns, rounds)
        med = {k: statistics.median(v) for k, v in times.items()}
        ref = med.get("shipped (TMA kernel)", float("nan"))
        for k in sorted(med, key=med.get):
            print(f"| {s} | {k} | {med[k]:.2f} | {med[k] / med['copy of x']:.3f} | {med[k] / ref:.3f} |", flush=True)


if __name__ == "__main__":
    main()
