"""kasmina at a few rows: a program takes a block of consecutive seeds and stacks their rows into one tile, so each
blueprint its seeds use is loaded once and applied to all of them in one product.

Why: ``branch_free``'s and ``kasmina.tma``'s kernels run a program per seed, which loads the seed's C x C blueprint
to multiply its rows. At one row that is a 32 KB blueprint (C = 128, 16-bit) read from L2 for 256 bytes of x, and a
16-row product of which one row is real: 1x4000x128 bf16 took 38.9 µs on an H200 where a copy of x took 1.8
(``benchmarks/results/kasmina-copy/h200-by-blueprint-28e6a82/race.txt``). Here a block of ``BLOCK_S`` seeds and its
``ROWS`` rows (the call's rows, padded to a power of two) are one tile of ``BLOCK_S * ROWS`` rows of C channels; the
program walks the distinct blueprint ids of its non-dormant seeds (lowest first), loads each blueprint once and
accumulates its product over the tile rows of the seeds that use it. With 8 blueprints a block loads at most 8
whatever its size, where a program per seed loads one a seed. With ``BY_BLUEPRINT`` the blueprints are a second grid
axis instead: program (j, k) takes block j's seeds of blueprint k and loads that blueprint alone (more programs, each
with one load, the others' tile rows masked off).

The state is read as ``branch_free``'s kernel reads it: dormant seeds stay bit for bit x (no product: their blend
coefficient is 0), an id outside the registry is clamped for every load and flags the seed (its y and telemetry NaN).
The telemetry is each seed's mean and population variance over its rows and channels, from the tile in registers
(two passes over it, no sums carried between tiles: a seed's rows are all in one tile)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kprof.kernels.kasmina import branch_free
from kprof.kernels.kasmina.family import check_inputs
from kprof.kernels.lib import launching


@triton.jit
def _kasmina_stacked_kernel(
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
    EARLY: tl.constexpr,  # x (and with BY_BLUEPRINT the program's blueprint) loaded before the seeds' state; off, the
    # kernel as it was before EARLY
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

    # With EARLY, x and (BY_BLUEPRINT) the program's blueprint are loaded before the seeds' state: neither address
    # depends on it, so their trips to memory overlap the state's, where a cold call's chain was the state, then x and
    # the blueprint (benchmarks/results/kasmina-copy/h200-stacked-early/; the tables say where it pays).
    x_rows = x_ptr + rows.to(tl.int64) * x_row_stride + seeds.to(tl.int64) * C
    k_mine = tl.program_id(1)
    if EARLY:
        x = tl.load(x_rows[:, None] + cols[None, :], mask=mask, other=0.0)
        if BY_BLUEPRINT:
            w_mine, bias_mine = _blueprint(w_ptr, b_ptr, k_mine, cols, cmask, C)
    lifecycle = tl.load(lifecycle_ptr + seeds, mask=smask, other=0).to(tl.int32)
    bid = tl.load(blueprint_id_ptr + seeds, mask=smask, other=0)
    valid = (bid >= 0) & (bid < NB)
    bid = tl.where(valid, bid, 0)
    alpha = tl.load(alpha_ptr + seeds, mask=smask & (lifecycle == 2), other=0.0)
    coef = tl.where(lifecycle == 1, 1.0, tl.where(lifecycle == 2, alpha, 0.0))
    coef = tl.where(valid, coef, float("nan"))  # NaN times anything: the flagged seed's y, no select per element
    bp = tl.zeros([BLOCK_S * ROWS, BLOCK_C], dtype=tl.float32)
    if BY_BLUEPRINT:  # this program's seeds: those of its blueprint (a flagged one: blueprint 0's program)
        tmask = tmask & (bid == k_mine)
        mask = tmask[:, None] & cmask[None, :]
    if not EARLY:  # after the state: with BY_BLUEPRINT, only this program's rows of x
        x = tl.load(x_rows[:, None] + cols[None, :], mask=mask, other=0.0)
    if EARLY and BY_BLUEPRINT:  # the one blueprint, loaded already
        mine = tmask & (lifecycle != 0) & valid
        bp = branch_free.product(tl.where(mine[:, None], x, 0.0), w_mine, bp, PRECISION)
        bp += tl.where(mine[:, None], bias_mine[None, :], 0.0)
    else:  # blueprint products of the tile rows that need one (not dormant, not flagged), one distinct blueprint at a
        # time (with BY_BLUEPRINT, EARLY off: this program's one, if any of its rows needs it)
        todo = tmask & (lifecycle != 0) & valid
        while tl.max(todo.to(tl.int32), axis=0) > 0:
            k = tl.min(tl.where(todo, bid, NB), axis=0)
            mine = todo & (bid == k)
            w, bias = _blueprint(w_ptr, b_ptr, k, cols, cmask, C)
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


@triton.jit
def _blueprint(w_ptr, b_ptr, k, cols, cmask, C):
    """Blueprint ``k``'s weights [BLOCK_C, BLOCK_C] (its dtype) and bias (fp32), zero past ``C``."""
    w = tl.load(
        w_ptr + k.to(tl.int64) * C * C + cols[:, None] * C + cols[None, :],
        mask=cmask[:, None] & cmask[None, :],
        other=0.0,
    )
    return w, tl.load(b_ptr + k.to(tl.int64) * C + cols, mask=cmask, other=0.0).to(tl.float32)


@triton.jit
def _per_seed(v, BLOCK_S: tl.constexpr, ROWS: tl.constexpr):
    """A value per tile row summed over each seed's ROWS rows: [BLOCK_S * ROWS] -> [BLOCK_S]."""
    return tl.sum(tl.reshape(v, [BLOCK_S, ROWS]), axis=1)


@dataclass(frozen=True)
class StackedTile:
    """One launch of the stacked kernel: seeds per program, the rows' power of two, warps."""

    block_s: int
    rows: int
    num_warps: int
    by_blueprint: bool = False  # a program per block and blueprint (the kernel's BY_BLUEPRINT)
    early: bool = True  # x (and the program's blueprint) loaded before the seeds' state (the kernel's EARLY)

    def options(self) -> dict[str, int]:
        """The launch's compile options beside the constexprs."""
        return {"num_warps": self.num_warps}

    def constexprs(self, c: int, precision: int) -> dict[str, int]:
        """The kernel's compile-time arguments, in its signature's order (the ops API's plans pass them so)."""
        return {
            "BLOCK_S": self.block_s,
            "ROWS": self.rows,
            "BLOCK_C": branch_free.block_c(c),
            "PRECISION": precision,
            "BY_BLUEPRINT": self.by_blueprint,
            "EARLY": self.early,
        }

    def grid(self, n_seeds: int, n_blueprints: int) -> tuple[int, int]:
        """Programs: one a block of ``block_s`` seeds, times the blueprints where ``by_blueprint``."""
        return triton.cdiv(n_seeds, self.block_s), n_blueprints if self.by_blueprint else 1


# the most channels the kernel takes: a 128 x 128 blueprint beside a tile of x in one program (C > 128 not raced)
MAX_CHANNELS = 128


def rows_for(n_rows: int) -> int:
    """The kernel's ROWS for ``n_rows`` rows: the next power of two."""
    return triton.next_power_of_2(max(1, n_rows))


def tile(n_rows: int, block_s: int, num_warps: int, by_blueprint: bool = False, early: bool = True) -> StackedTile:
    """A tile of ``block_s`` seeds (raised to what makes 16 tile rows, tl.dot's minimum) for ``n_rows`` rows."""
    rows = rows_for(n_rows)
    return StackedTile(max(block_s, triton.cdiv(16, rows)), rows, num_warps, by_blueprint, early)


@dataclass(frozen=True)
class StackedRow:
    """One row of an H200 table (16-bit x, or fp32): the class of calls it covers and the launch it takes there."""

    rows: tuple[int, int]  # least and most rows
    seeds_per_sm: tuple[float, float]  # seeds per SM: at least the first, under the second
    channels: tuple[int, int]  # least and most channels, a multiple of 16 (100 channels lost: below)
    block_s: int  # seeds per program (raised by ``tile`` to make 16 tile rows)
    num_warps: int
    by_blueprint: bool = False
    early: bool = True  # the kernel's EARLY


# On an H200, 16-bit x with telemetry: the first row that covers a call is its launch, where the ops API ran
# branch_free's kernel before. Two races there, cold (µs; ratios are this tile's time over branch_free's at 32 / 64 /
# 128 channels, in bf16, fp16's within 0.04 of them): bf16 at 1-16 rows x 100, 1000, 4000 seeds x 32-128 channels
# over 17 tiles a point (by-blueprint-af89668/), then the table's route against branch_free's at its classes and their
# edges, bf16 and fp16 (rule-77fcc97/; both under benchmarks/results/kasmina-copy/h200-stacked-85bf7bc/):
# - one row from 1000 seeds (7.5 an SM): 64 seeds a program, 4 warps, a program per blueprint too: 1x1000 0.87 / 0.75 /
#   0.50 (1x1000x128 6.0 against 12.1), 1x2000 0.74 / 0.53 / 0.35, 1x4000 0.55 / 0.54 / 0.34 (1x4000x128 13.0 against
#   38.5), 1x4000x48 0.54;
# - one row under 1000 seeds: 16 seeds a program, 4 warps, a program per blueprint: 1x100 0.99 / 0.77 / 0.73, 1x250
#   0.92 / 0.76 / 0.70, 1x500 0.89 / 0.78 / 0.69;
# - 2-4 rows from 15 seeds an SM: 4 seeds a program (16 tile rows), 4 warps, a program a block: 4x2000 0.95 / 0.68 /
#   0.67, 4x2500 0.74 / 0.72 / 0.62, 4x4000 0.71 / 0.63 / 0.57 (4x4000x128 24.4 against 42.8), 2x4000x64 0.61; at
#   4x1000 only at 128 channels (0.72; 1.12 and 1.03 at 32 and 64);
# - 5-8 rows from 30 seeds an SM: 8 seeds a program (64 tile rows), 4 warps: 8x4000 0.84 / 0.92 / 0.66, 6x4000x64 0.90.
#   Not from 16 an SM: 8x2500 1.00 / 1.09 / 0.86.
# Those ratios are with the seeds' state loaded first. With x and the program's blueprint loaded before it (EARLY;
# h200-stacked-early/, µs, against the same tiles with the state first) the one-row classes took 0.65-0.96x in bf16
# and fp16: 1x4000x64 bf16 4.80 against 7.38, 1x4000x128 9.82 against 12.75, 1x1000x64 3.02 against 3.76, 1x100x32
# 2.22 against 2.82; the 4- and 8-row ones 0.998-1.023x (no state in their addresses either way), and raced again
# at 2-8 rows on another H200 (benchmarks/results/kasmina-copy/h200-branch-early/stacked/, 20 points in bf16 and fp16)
# 1.001-1.030x, 1.014x the median (8x4000x32 bf16 7.73 against 7.52): those rows keep the state first.
# Not taken: 4-8 rows at 100 seeds (0.94-1.16 at best: little or behind), 8 rows at 1000 (1.04-1.30), 16 rows (0.91
# at 16x4000x128 alone, 1.06-1.46 elsewhere); channels not a multiple of 16 (1x1000x100 1.04, 3x4000x100 0.98, where
# both kernels took 1.5-4.1x the time of 128 channels; 16 seeds a program per blueprint took 0.76 at 1x1000x100, one
# point) or beyond 128; other GPUs (not raced). fp32: its own table below.
_H200_ROWS: tuple[StackedRow, ...] = (
    StackedRow((1, 1), (7.5, float("inf")), (32, 128), 64, 4, by_blueprint=True),
    StackedRow((1, 1), (0.0, 7.5), (32, 128), 16, 4, by_blueprint=True),
    StackedRow((2, 4), (15.0, float("inf")), (32, 128), 4, 4, early=False),
    StackedRow((2, 4), (7.5, 15.0), (65, 128), 4, 4, early=False),
    StackedRow((5, 8), (30.0, float("inf")), (32, 128), 8, 4, early=False),
)


# On an H200, fp32 x with telemetry (tf32x3 products, three of each blueprint): one row only. Raced there at one row
# against branch_free's H200 row for it (benchmarks/results/kasmina-copy/h200-stacked-fp32/ and its grid/rule/, two
# H200s, 10 cold rounds, µs, this table's tile / branch_free's; the GPU test checks three of these points at the
# family's 1e-5):
# - 32 channels from 7.5 seeds an SM: 64 seeds a program per blueprint, 4 warps: 1x990x32 4.08 / 5.14, 1x2000x32 4.50
#   / 8.35, 1x4000x32 8.19 / 14.54, 1x8000x32 12.56 / 26.64 (16 seeds a block 10.29 there, one point: not a row);
# - 48-64 channels from 22.5 seeds an SM: 16 seeds a program a block, 4 warps: 1x2970x64 14.58 / 20.03, 1x3000x64
#   15.12 / 20.16, 1x4000x64 15.78 / 25.66, 1x8000x64 25.09 / 47.70, 1x4000x48 15.10 / 25.95;
# - 48-64 channels, 15-22.5 seeds an SM: 64 seeds a program per blueprint, 4 warps: 1x1980x64 10.10 / 14.32, 1x2000x64
#   9.98 / 14.32, 1x2500x64 16.69 / 17.26 (16 seeds a block 15.18 there), 1x2969x64 17.97 / 20.03;
# - 48-64 channels, 7.5-15 seeds an SM: the same with 8 warps: 1x1000x64 6.85 / 8.21 (4 warps 8.45 in the first
#   race), 1x1000x48 6.77 / 8.24, 1x1979x64 12.70 / 14.30 (4 warps 10.13 there: the edge between the two is not known).
# Not taken: 128 channels (1x1000x128 25.22 at best / 20.59), under 7.5 seeds an SM (1x250x64 4.29 / 4.66), 2-8 rows
# (8x1000x64 1.23x at best, h200-stacked-85bf7bc/race/). Those times are with the seeds' state loaded first. With x and
# the blueprint loaded before it (EARLY; h200-stacked-early/ and its fp32-again/, µs, early / state first): 1x4000x32
# 5.70 / 8.16, 1x2000x64 8.78 / 9.97, 1x1000x64 6.62 / 6.72; but at 32 channels from 990 to 1500 seeds the state first
# was faster (1x1000x32 4.43 / 4.08, 1x1500x32 4.99 / 4.38), so that class keeps it (its edge, under 30 seeds an SM,
# between 1500 and 4000 seeds, is not known). The 48-64-channel class by block (no blueprint to load early) was not
# raced so then; on another H200 (benchmarks/results/kasmina-copy/h200-branch-early/stacked/) EARLY took 1.017-1.032x
# there (1x4000x64 16.10 / 15.66, 1x8000x64 25.94 / 25.12), so it keeps the state first too.
_H200_FP32_ROWS: tuple[StackedRow, ...] = (
    StackedRow((1, 1), (30.0, float("inf")), (32, 32), 64, 4, by_blueprint=True),
    StackedRow((1, 1), (7.5, 30.0), (32, 32), 64, 4, by_blueprint=True, early=False),
    StackedRow((1, 1), (22.5, float("inf")), (48, 64), 16, 4, early=False),
    StackedRow((1, 1), (15.0, 22.5), (48, 64), 64, 4, by_blueprint=True),
    StackedRow((1, 1), (7.5, 15.0), (48, 64), 64, 8, by_blueprint=True),
)


def table_tile(n_rows: int, n_seeds: int, c: int, sms: int, fp32: bool = False) -> StackedTile | None:
    """The H200 table's launch for ``n_rows`` rows of ``n_seeds`` seeds of ``c`` channels on ``sms`` SMs (16-bit x, or
    fp32's table where ``fp32``), or None where ``branch_free``'s kernel stays."""
    for r in _H200_FP32_ROWS if fp32 else _H200_ROWS:
        if (
            r.rows[0] <= n_rows <= r.rows[1]
            and r.seeds_per_sm[0] * sms <= n_seeds < r.seeds_per_sm[1] * sms
            and r.channels[0] <= c <= r.channels[1]
            and c % 16 == 0
        ):
            return tile(n_rows, r.block_s, r.num_warps, r.by_blueprint, r.early)
    return None


def tile_for(x: torch.Tensor, n_seeds: int, c: int) -> StackedTile | None:
    """The stacked launch for a call with telemetry on ``x`` (rows of ``n_seeds`` x ``c`` channels): the table of x's
    dtype, where x is on an H200; None where another kernel runs."""
    if x.dtype not in (torch.bfloat16, torch.float16, torch.float32) or not launching.fast_memory(x):
        return None
    n_rows = x.numel() // max(x.shape[-1], 1)
    return table_tile(n_rows, n_seeds, c, launching.sm_count(x), fp32=x.dtype == torch.float32)


def fits(n_rows: int, c: int, block_s: int) -> bool:
    """Whether the kernel covers ``n_rows`` rows of ``c``-channel seeds in blocks of ``block_s`` (tiles of at most 256
    rows, blueprints of at most ``MAX_CHANNELS``)."""
    return c <= MAX_CHANNELS and block_s * rows_for(n_rows) <= 256


def launch(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    tile: StackedTile,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Check, allocate and launch ``tile``; returns ``(y, telemetry)``. Raises where :func:`fits` does not hold."""
    n_seeds, c = check_inputs(x, lifecycle, blueprint_id, alpha, weights, bias)
    x2d = x.reshape(-1, x.shape[-1]) if x.stride(-1) == 1 else x.contiguous().view(-1, x.shape[-1])
    n_rows = x2d.shape[0]
    if not fits(n_rows, c, tile.block_s) or tile.rows < n_rows:
        raise ValueError(
            f"kasmina stacked kernel: needs at most {MAX_CHANNELS} channels (got {c}) and a tile of at most 256 rows "
            f"covering every row (got {tile.block_s} seeds x {tile.rows} rows for {n_rows} rows); "
            f"branch_free.launch runs every other call"
        )
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    tele = torch.empty((n_seeds, 2), dtype=torch.float32, device=x.device)
    _kasmina_stacked_kernel[tile.grid(n_seeds, weights.shape[0])](
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
        **tile.constexprs(c, branch_free.precision_of(x.dtype)),
        **tile.options(),
    )
    return y, tele


# Public handle for op_plan (the ops API's launch plan): the kernel keeps its `_` name, which profilers record.
stacked_kernel = _kasmina_stacked_kernel
