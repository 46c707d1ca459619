"""The stacked kernel with x and its blueprint loaded before the seeds' state (``kasmina.stacked`` as of this folder's
commit) against the kernel before that change (a copy of it here, ``_stacked_before_kernel``: the state first, then
x, whose mask then depended on the ids with BY_BLUEPRINT, then each blueprint). Both at the H200 tables' tiles (16-bit
and fp32), raced cold in one CUPTI session per point (``decode_tiles.race``) beside a copy of x, each checked against
the float64 oracle first.

    cd benchmarks && PYTHONPATH=. python results/kasmina-copy/h200-stacked-early/probe.py SHAPES DTYPES [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys

import torch
import triton
import triton.language as tl
from bench_common import rel_err

from kprof.kernels import discover
from kprof.kernels.kasmina import branch_free, stacked

_per_seed = stacked._per_seed


@triton.jit
def _stacked_before_kernel(
    # pointers
    x_ptr,  # [rows, S*C] activations, rows `x_row_stride` apart
    y_ptr,  # [rows, S*C] output, contiguous
    lifecycle_ptr,  # [S] int8: 0 dormant, 1 active, 2 grafting
    blueprint_id_ptr,  # [S] int32
    alpha_ptr,  # [S] float32
    w_ptr,  # [NB, C, C] blueprint weights, contiguous
    b_ptr,  # [NB, C] blueprint biases, contiguous
    telemetry_ptr,  # [S, 2] float32 (mean, variance)
    # sizes and strides
    n_rows,  # at most ROWS
    n_seeds,
    C,
    NB,  # blueprints in the registry: ids outside [0, NB) are flagged, never read
    x_row_stride,
    y_row_stride,
    # meta-parameters
    BLOCK_S: tl.constexpr,  # seeds per program
    ROWS: tl.constexpr,  # a power of two >= n_rows; BLOCK_S * ROWS >= 16 (tl.dot's minimum)
    BLOCK_C: tl.constexpr,  # power of two >= C (>= 16)
    PRECISION: tl.constexpr,  # branch_free.precision_of's
    BY_BLUEPRINT: tl.constexpr,  # the grid's second axis is the blueprint: program (j, k) takes block j's seeds of
    # (clamped) id k, so it loads one blueprint; else program j takes all of block j's seeds, each distinct id in turn
):
    # tile row m is row (m % ROWS) of seed (first + m // ROWS): a seed's rows are adjacent, so its statistics are a
    # reshape and two sums away
    m = tl.arange(0, BLOCK_S * ROWS)
    seeds = tl.program_id(0) * BLOCK_S + m // ROWS
    rows = m % ROWS
    smask = seeds < n_seeds
    tmask = smask & (rows < n_rows)
    cols = tl.arange(0, BLOCK_C)
    cmask = cols < C
    mask = tmask[:, None] & cmask[None, :]

    lifecycle = tl.load(lifecycle_ptr + seeds, mask=smask, other=0).to(tl.int32)
    bid = tl.load(blueprint_id_ptr + seeds, mask=smask, other=0)
    valid = (bid >= 0) & (bid < NB)
    bid = tl.where(valid, bid, 0)
    alpha = tl.load(alpha_ptr + seeds, mask=smask & (lifecycle == 2), other=0.0)
    coef = tl.where(lifecycle == 1, 1.0, tl.where(lifecycle == 2, alpha, 0.0))
    coef = tl.where(valid, coef, float("nan"))  # NaN times anything: the flagged seed's y, no select per element
    if BY_BLUEPRINT:  # this program's seeds: those of its blueprint (a flagged one: blueprint 0's program)
        tmask = tmask & (bid == tl.program_id(1))
        mask = tmask[:, None] & cmask[None, :]

    x_rows = x_ptr + rows.to(tl.int64) * x_row_stride + seeds.to(tl.int64) * C
    x = tl.load(x_rows[:, None] + cols[None, :], mask=mask, other=0.0)
    # blueprint products of the tile rows that need one (not dormant, not flagged), one distinct blueprint at a time
    bp = tl.zeros([BLOCK_S * ROWS, BLOCK_C], dtype=tl.float32)
    todo = tmask & (lifecycle != 0) & valid
    while tl.max(todo.to(tl.int32), axis=0) > 0:
        k = tl.min(tl.where(todo, bid, NB), axis=0)
        mine = todo & (bid == k)
        w = tl.load(
            w_ptr + k.to(tl.int64) * C * C + cols[:, None] * C + cols[None, :],
            mask=cmask[:, None] & cmask[None, :],
            other=0.0,
        )
        bias = tl.load(b_ptr + k.to(tl.int64) * C + cols, mask=cmask, other=0.0).to(tl.float32)
        bp = branch_free.product(tl.where(mine[:, None], x, 0.0), w, bp, PRECISION)
        bp += tl.where(mine[:, None], bias[None, :], 0.0)
        todo = todo & (bid != k)
    xf = x.to(tl.float32)
    y = xf + coef[:, None] * (bp - xf)
    y_rows = y_ptr + rows.to(tl.int64) * y_row_stride + seeds.to(tl.int64) * C
    tl.store(y_rows[:, None] + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)

    # telemetry: per seed, the mean of its n_rows * C values, then the mean square of their distance from it
    n = (n_rows * C).to(tl.float32)
    mean = _per_seed(tl.sum(tl.where(mask, y, 0.0), axis=1), BLOCK_S, ROWS) / n
    mean_m = tl.reshape(tl.broadcast_to(mean[:, None], [BLOCK_S, ROWS]), [BLOCK_S * ROWS])
    d = tl.where(mask, y - mean_m[:, None], 0.0)
    var = _per_seed(tl.sum(d * d, axis=1), BLOCK_S, ROWS) / n
    first = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    mine = first < n_seeds
    if BY_BLUEPRINT:
        mine = mine & (tl.max(tl.reshape(tmask.to(tl.int32), [BLOCK_S, ROWS]), axis=1) > 0)
    tl.store(telemetry_ptr + first * 2, mean, mask=mine)
    tl.store(telemetry_ptr + first * 2 + 1, var, mask=mine)


def before(inp: dict, tile: stacked.StackedTile) -> tuple[torch.Tensor, torch.Tensor]:
    x = inp["x"]
    x2d = x.view(-1, x.shape[-1])
    n_rows, seeds, c = x2d.shape[0], inp["lifecycle"].shape[0], inp["weights"].shape[-1]
    y = torch.empty_like(x)
    tele = torch.empty((seeds, 2), dtype=torch.float32, device=x.device)
    _stacked_before_kernel[tile.grid(seeds, inp["weights"].shape[0])](
        x2d, y, inp["lifecycle"], inp["blueprint_id"], inp["alpha"], inp["weights"], inp["bias"], tele, n_rows, seeds,
        c, inp["weights"].shape[0], x2d.stride(0), x.shape[-1],
        **tile.constexprs(c, branch_free.precision_of(x.dtype)), **tile.options(),
    )  # fmt: skip
    return y, tele



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
            y1, t1 = stacked.launch(**inp, tile=tile)
            for name, (y, t) in (("before", (y0, t0)), ("early", (y1, t1))):
                assert rel_err(y, y_ref) < tol and rel_err(t, t_ref) < tol, f"{s} {dtype} {name}"
            same = "bit for bit" if torch.equal(y0, y1) and torch.equal(t0, t1) else "differs"
            out = torch.empty_like(x)
            times = race(
                {
                    "copy": lambda: out.copy_(x),
                    "before": lambda: before(inp, tile),
                    "early": lambda: stacked.launch(**inp, tile=tile),
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
