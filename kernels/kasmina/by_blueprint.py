"""kasmina's telemetry kernel with the seeds grouped by blueprint on the device, so that a blueprint is loaded once per
program rather than once per seed.

Where a seed has few rows its blueprint is as many bytes as its x or more (a 128 x 128 16-bit blueprint is 32 KB; 64
rows of the seed's 128 channels are 16 KB), and a program per seed reads them all from L2: at 1x4000x128, 128 MB of
blueprints for 1 MB of x. Here a program takes a run of ``SEEDS`` consecutive seeds and one group among them: the seeds
that blend with blueprint ``g`` (active or grafting, id ``g``), for each ``g`` of the registry, or (the last group)
the seeds that only copy x: dormant ones, bit for bit x, and those whose id is outside the registry, NaN (the flag
every kasmina kernel raises; no blueprint is read for them). It finds its seeds from the run's ids and states (one
vector load of each), loads its blueprint once, and walks each of its seeds' rows in turn:
``y = x + coef (x W + b - x)``, the statistics summed shifted by the seed's first row of y. The grid is (runs,
blueprints + 1); a program whose group is empty in its run returns at once. No state reaches the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kprof.kernels.kasmina import branch_free
from kprof.kernels.kasmina.family import check_inputs


@triton.jit
def _kasmina_by_blueprint_kernel(
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
    n_rows,
    n_seeds,
    C,
    NB,  # blueprints in the registry: the grid's second axis is NB + 1 groups
    x_row_stride,
    y_row_stride,
    # meta-parameters
    BLOCK_B: tl.constexpr,  # rows per tile (>= 16: tl.dot's minimum)
    BLOCK_C: tl.constexpr,  # power of two >= C (>= 16)
    SEEDS: tl.constexpr,  # consecutive seeds a program looks through for its group's (a power of two)
    PRECISION: tl.constexpr,  # branch_free.precision_of's
    EVEN: tl.constexpr,  # every row tile full and C == BLOCK_C: no masks
):
    group = tl.program_id(1)
    seeds = tl.program_id(0) * SEEDS + tl.arange(0, SEEDS)
    smask = seeds < n_seeds
    state = tl.load(lifecycle_ptr + seeds, mask=smask, other=0).to(tl.int32)
    bid = tl.load(blueprint_id_ptr + seeds, mask=smask, other=0)
    valid = (bid >= 0) & (bid < NB)
    blends = valid & ((state == 1) | (state == 2))
    mine = smask & (tl.where(blends, bid, NB) == group)
    rank = tl.cumsum(mine.to(tl.int32), axis=0) - 1  # each of the group's seeds' place among them
    count = tl.sum(mine.to(tl.int32), axis=0)
    cols = tl.arange(0, BLOCK_C)
    cmask = cols < C
    if EVEN:  # a constant mask, which the compiler drops from every load, store and select
        cmask = tl.full([BLOCK_C], True, tl.int1)
    if count > 0:
        if group < NB:  # blueprint `group`'s seeds: its weights and bias loaded once for all of them
            w = tl.load(
                w_ptr + group.to(tl.int64) * C * C + cols[:, None] * C + cols[None, :],
                mask=cmask[:, None] & cmask[None, :],
                other=0.0,
            )
            bias = tl.load(b_ptr + group * C + cols, mask=cmask, other=0.0).to(tl.float32)
            for i in range(count):
                pick = mine & (rank == i)
                seed = tl.sum(tl.where(pick, seeds, 0), axis=0)
                grafting = tl.sum(tl.where(pick & (state == 2), 1, 0), axis=0) > 0
                coef = tl.where(grafting, tl.load(alpha_ptr + seed), 1.0)
                _seed(
                    x_ptr, y_ptr, telemetry_ptr, seed, w, bias, coef, True, cols, cmask, C, n_rows,
                    x_row_stride, y_row_stride, BLOCK_B, PRECISION, EVEN, False,
                )  # fmt: skip
        else:  # the seeds that copy x: dormant, or flagged (an id outside the registry: NaN)
            for i in range(count):
                pick = mine & (rank == i)
                seed = tl.sum(tl.where(pick, seeds, 0), axis=0)
                ok = tl.sum(tl.where(pick & valid, 1, 0), axis=0) > 0
                _seed(
                    x_ptr, y_ptr, telemetry_ptr, seed, cols, cols, 0.0, ok, cols, cmask, C, n_rows,
                    x_row_stride, y_row_stride, BLOCK_B, PRECISION, EVEN, True,
                )  # fmt: skip


@triton.jit
def _seed(
    x_ptr,
    y_ptr,
    telemetry_ptr,
    seed,
    w,  # the blueprint [BLOCK_C, BLOCK_C] (not read where COPY)
    bias,  # [BLOCK_C] fp32 (not read where COPY)
    coef,
    valid,  # false: the seed's outputs are NaN (COPY)
    cols,
    cmask,
    C,
    n_rows,
    x_row_stride,
    y_row_stride,
    BLOCK_B: tl.constexpr,
    PRECISION: tl.constexpr,
    EVEN: tl.constexpr,
    COPY: tl.constexpr,  # y = x (dormant), else the blend with the blueprint
):
    """One seed's rows: y written, its (mean, variance) stored."""
    col0 = seed.to(tl.int64) * C
    x_tile = (tl.arange(0, BLOCK_B).to(tl.int64) * x_row_stride)[:, None] + cols[None, :]
    y_tile = (tl.arange(0, BLOCK_B).to(tl.int64) * y_row_stride)[:, None] + cols[None, :]
    shift = tl.zeros([cols.shape[0]], dtype=tl.float32)  # the seed's first row of y
    s1 = tl.zeros([cols.shape[0]], dtype=tl.float32)  # per column, the sum of y - shift
    s2 = tl.zeros([cols.shape[0]], dtype=tl.float32)  # and of its squares
    for start in range(0, n_rows, BLOCK_B):
        rows = start + tl.arange(0, BLOCK_B)
        rmask = rows < n_rows
        if EVEN:
            rmask = tl.full([BLOCK_B], True, tl.int1)
        mask = rmask[:, None] & cmask[None, :]
        x = tl.load(x_ptr + (tl.cast(start, tl.int64) * x_row_stride + col0) + x_tile, mask=mask, other=0.0)
        xf = x.to(tl.float32)
        if COPY:
            y = tl.where(valid, xf, float("nan"))
        else:
            bp = branch_free.product(x, w, tl.zeros([BLOCK_B, cols.shape[0]], dtype=tl.float32), PRECISION)
            y = xf + coef * (bp + bias[None, :] - xf)
        tl.store(
            y_ptr + (tl.cast(start, tl.int64) * y_row_stride + col0) + y_tile, y.to(y_ptr.dtype.element_ty), mask=mask
        )
        if start == 0:  # sums shifted by a value of the data keep fp32's precision where the mean is far from zero
            shift = tl.sum(tl.where(rows[:, None] == 0, y, 0.0), axis=0)
        d = tl.where(mask, y - shift[None, :], 0.0)
        s1 += tl.sum(d, axis=0)
        s2 += tl.sum(d * d, axis=0)
    n = n_rows.to(tl.float32)
    cnt = tl.zeros([cols.shape[0]], dtype=tl.float32) + n
    branch_free.store_telemetry(telemetry_ptr, seed, cnt, shift + s1 / n, tl.maximum(s2 - s1 * s1 / n, 0.0), cmask)


@dataclass(frozen=True)
class BlueprintTile:
    """One launch of the kernel: its tile, and the seeds a program looks through for its group's."""

    block_b: int  # rows per tile
    num_warps: int
    seeds: int  # consecutive seeds per program (a power of two)

    def options(self) -> dict[str, int]:
        return {"num_warps": self.num_warps}

    def constexprs(self, block_c: int, precision: int, even: bool) -> dict[str, int | bool]:
        """The kernel's compile-time arguments, in its signature's order (the ops API's plans pass them so)."""
        return {"BLOCK_B": self.block_b, "BLOCK_C": block_c, "SEEDS": self.seeds, "PRECISION": precision, "EVEN": even}


def launch(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    tile: BlueprintTile,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Check, allocate and launch ``tile``; returns ``(y, telemetry)``."""
    n_seeds, c = check_inputs(x, lifecycle, blueprint_id, alpha, weights, bias)
    if tile.seeds & (tile.seeds - 1) or tile.block_b < 16:
        raise ValueError(
            f"kasmina by blueprint: seeds per program must be a power of two and rows per tile at least 16 "
            f"(tl.dot's minimum); got {tile.seeds} and {tile.block_b}"
        )
    x2d = x.reshape(-1, x.shape[-1]) if x.stride(-1) == 1 else x.contiguous().view(-1, x.shape[-1])
    n_rows = x2d.shape[0]
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    tele = torch.empty((n_seeds, 2), dtype=torch.float32, device=x.device)
    bc = branch_free.block_c(c)
    even = n_rows % tile.block_b == 0 and c == bc
    _kasmina_by_blueprint_kernel[(triton.cdiv(n_seeds, tile.seeds), weights.shape[0] + 1)](
        x2d,
        y,
        lifecycle,
        blueprint_id,
        alpha,
        weights.contiguous(),
        bias.contiguous(),
        tele,
        n_rows,
        n_seeds,
        c,
        weights.shape[0],
        x2d.stride(0),
        x.shape[-1],
        **tile.constexprs(bc, branch_free.precision_of(x.dtype), even),
        **tile.options(),
    )
    return y, tele


# Public handle for op_plan (the ops API's launch plan): the kernel keeps its `_` name, which profilers record.
by_blueprint_kernel = _kasmina_by_blueprint_kernel
