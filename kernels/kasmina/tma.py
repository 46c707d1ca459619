"""kasmina's telemetry kernel with its x and y tiles moved by the Tensor Memory Accelerator (Hopper's TMA), on an H200.

Each program walks one seed's rows, as ``branch_free``'s kernel does, but a tile of x arrives in shared memory by
one TMA copy, several tiles ahead (the loop's ``STAGES``), and y leaves the same way (the first tile of x comes by an
ordinary load, issued before the seed's state is read); the blend is folded into the
blueprint (``y = x @ (coef W + (1 - coef) I) + coef b``), so x is never needed outside the product's operand. What is
left for the threads is the product, the statistics and y's conversion: no address arithmetic, no masks, no copy
of x in the product's layout. Dormant seeds stay bit for bit x in 16-bit (a product by I in fp32).

It covers the shapes a descriptor can address with whole tiles (``fits``): 16-bit x, channels a power of two of
16 to 128, the rows a multiple of the tile. The ops API takes it on an H200 (``tile_for``) where it was raced faster
than ``branch_free``'s kernel, with a program per seed, and where x is large enough that the GPU time it saves is not
spent again on the host (``TMA_MIN_ELEMENTS``); elsewhere, and on other GPUs (not raced), ``branch_free`` runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kprof.kernels.kasmina import branch_free
from kprof.kernels.kasmina.family import check_inputs
from kprof.kernels.lib import launching

_ANY = 1 << 30


@triton.jit
def _kasmina_tma_kernel(
    # descriptors: x [rows, S*C] and y (the same shape), blocks [BLOCK_B, BLOCK_C]
    x_desc,
    y_desc,
    x_ptr,  # x itself, for the first tile (loaded before the seed's state, by address: see below)
    # the seeds' state and blueprints
    lifecycle_ptr,  # [S] int8: 0 dormant, 1 active, 2 grafting
    blueprint_id_ptr,  # [S] int32
    alpha_ptr,  # [S] float32
    w_ptr,  # [NB, C, C] blueprint weights, contiguous
    b_ptr,  # [NB, C] blueprint biases, contiguous
    telemetry_ptr,  # [S, 2] float32 (mean, variance)
    # sizes
    n_rows,  # a multiple of BLOCK_B
    NB,  # blueprints in the registry: ids outside [0, NB) are flagged, never read
    x_row_stride,  # elements between rows of x (S*C: the descriptors' rows)
    # meta-parameters
    BLOCK_B: tl.constexpr,  # rows per tile
    BLOCK_C: tl.constexpr,  # the channels C: a power of two, 16 to 128
    STAGES: tl.constexpr,  # x tiles in flight (the row loop's pipeline)
    PRECISION: tl.constexpr,  # branch_free.precision_of's: 0 on a GPU, 1 (IEEE fp32) under the interpreter
    PER_TILE: tl.constexpr,  # the statistics' sums per column, reduced each tile (else per element, reduced once)
):
    seed = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    rows = tl.arange(0, BLOCK_B)
    col0 = seed * BLOCK_C
    # The first tile by an ordinary load issued before the state's: its trip to memory overlaps the chain of dependent
    # loads below (lifecycle and id, then the blueprint), where a descriptor load here would wait for its copy before
    # the chain began. 0.963-0.996x the time at 17 of 18 16-bit points on an H200, 1.007x at 512x1000x128 fp16
    # (512x1000x64 bf16 33.04 against 33.73 µs: 1.100x a copy of x, 1.122x before; y bit for bit the same;
    # benchmarks/results/kasmina-copy/h200-waves/early/).
    x0 = tl.load(x_ptr + rows[:, None].to(tl.int64) * x_row_stride + col0 + cols[None, :])
    # the seed's state as branch_free's kernel reads it (clamp-and-flag included; written again here, where a shared
    # helper would have changed that kernel's compiled code)
    lifecycle = tl.load(lifecycle_ptr + seed).to(tl.int32)
    bid = tl.load(blueprint_id_ptr + seed).to(tl.int64)
    valid = (bid >= 0) & (bid < NB)
    bid = tl.where(valid, bid, 0)
    coef = tl.where(lifecycle == 1, 1.0, tl.where(lifecycle == 2, tl.load(alpha_ptr + seed), 0.0))
    coef = tl.where(valid, coef, float("nan"))
    w = tl.load(w_ptr + bid * BLOCK_C * BLOCK_C + cols[:, None] * BLOCK_C + cols[None, :])
    folded = branch_free.fold(w, cols, cols, coef)
    fb = coef * tl.load(b_ptr + bid * BLOCK_C + cols).to(tl.float32)
    # the first tile before the loop: its first row of y is the shift of the sums (see branch_free._walk)
    y = _y_of(x0, y_desc, 0, col0, folded, fb, PRECISION)
    shift = tl.sum(tl.where(rows[:, None] == 0, y, 0.0), axis=0)
    d = y - shift[None, :]
    if PER_TILE:  # sums per column, each tile's rows reduced as it comes
        s1 = tl.sum(d, axis=0)
        s2 = tl.sum(d * d, axis=0)
    else:  # sums per element of the tile, reduced over rows once, after the walk
        s1 = d
        s2 = d * d
    for start in tl.range(BLOCK_B, n_rows, BLOCK_B, num_stages=STAGES):
        d = _tile(x_desc, y_desc, start, col0, folded, fb, PRECISION) - shift[None, :]
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


@triton.jit
def _tile(x_desc, y_desc, start, col0, folded, fb, PRECISION: tl.constexpr):
    """One tile of y (stored), from x's tile at row ``start``, columns ``col0``: returned in fp32."""
    return _y_of(x_desc.load([start, col0]), y_desc, start, col0, folded, fb, PRECISION)


@triton.jit
def _y_of(x, y_desc, start, col0, folded, fb, PRECISION: tl.constexpr):
    """The tile of y from the tile ``x`` (however it was loaded), stored at row ``start``, columns ``col0``: returned in
    fp32."""
    y = branch_free.product(x, folded, tl.zeros([x.shape[0], x.shape[1]], dtype=tl.float32), PRECISION) + fb[None, :]
    y_desc.store([start, col0], y.to(y_desc.dtype))
    return y


@dataclass(frozen=True)
class TmaTile:
    """One launch of the TMA kernel, and the class of calls the H200's table gives it."""

    channels: int  # the seeds' channels C (the kernel's BLOCK_C)
    block_b: int  # rows per tile
    num_warps: int
    stages: int  # x tiles in flight
    per_tile: bool = False  # the statistics' sums per column (else per element)
    maxnreg: int = 0  # registers a thread at most; 0: the compiler's choice
    rows: tuple[int, int] = (1, _ANY)  # least and most rows (the table's class)
    seeds_per_sm: tuple[float, float] = (1.0, float("inf"))  # seeds per SM: at least the first, under the second

    def options(self) -> dict[str, int]:
        """The launch's compile options beside the constexprs: warps, and the register cap where there is one."""
        return {"num_warps": self.num_warps, **({"maxnreg": self.maxnreg} if self.maxnreg else {})}

    def constexprs(self, precision: int) -> dict[str, int | bool]:
        """The kernel's compile-time arguments, in its signature's order (the ops API's plans pass them so)."""
        return {
            "BLOCK_B": self.block_b,
            "BLOCK_C": self.channels,
            "STAGES": self.stages,
            "PRECISION": precision,
            "PER_TILE": self.per_tile,
        }


# On an H200 with telemetry, 16-bit, a program per seed: the first row that covers a call is its launch. Raced there
# against branch_free's kernel as the table before it launched it (benchmarks/results/kasmina-copy/h200-tma-0a44c2a/,
# one H200, two races, bf16 unless said, µs, this kernel / branch_free's):
# - 32 channels from 256 rows: 32-row tiles, 2 warps, 6 stages (512x1000x32 18.0 / 19.1-19.2, 512x4000x32 75.0 /
#   82.3, fp16 73.4 / 82.8); at 64-255 rows from 16 seeds an SM, 16 x 2, 4 stages, 128 registers at most (64x4000x32
#   12.6 / 15.5); not at 128x1000x32 (7.3-7.5 / 7.3).
# - 64 channels, the same 16 x 2 x 4 capped at 128: from 256 rows (256x1000x64 18.6 / 20.2, 512x1000x64 33.7-33.9 /
#   37.2-37.6, fp16 34.0 / 37.3, 512x4000x64 146.5 / 158.0), at 64-255 rows from 16 seeds an SM (64x4000x64 25.9 /
#   27.9, fp16 25.9 / 27.8); not at 64x1000x64 (8.7 / 8.5).
# - 128 channels from 512 rows: 32 x 4, 6 stages, sums per column (512x1000x128 76.6 / 87.8, 512x4000x128 283.7 /
#   331.4); not at 64x4000x128 (75.5 at best / 70.8).
# 128-255 rows and 256-511 rows at 128 channels were not raced. Elsewhere branch_free's kernel runs, and the ops API
# takes a row only from TMA_MIN_ELEMENTS (route_tile): the 64-255-row rows at 32 channels from 4096 seeds.
_ANY_SEEDS = (1.0, float("inf"))  # at least as many seeds as SMs
_MANY_SEEDS = (16.0, float("inf"))
_H200_TILES: tuple[TmaTile, ...] = (
    TmaTile(32, 32, 2, 6, rows=(256, _ANY), seeds_per_sm=_ANY_SEEDS),
    TmaTile(32, 16, 2, 4, maxnreg=128, rows=(64, 255), seeds_per_sm=_MANY_SEEDS),
    TmaTile(64, 16, 2, 4, maxnreg=128, rows=(256, _ANY), seeds_per_sm=_ANY_SEEDS),
    TmaTile(64, 16, 2, 4, maxnreg=128, rows=(64, 255), seeds_per_sm=_MANY_SEEDS),
    TmaTile(128, 32, 4, 6, per_tile=True, rows=(512, _ANY), seeds_per_sm=_ANY_SEEDS),
)


def table_tile(n_rows: int, n_seeds: int, c: int, sms: int) -> TmaTile | None:
    """The H200 table's row for ``n_rows`` rows of ``n_seeds`` seeds of ``c`` channels on ``sms`` SMs, or None."""
    for t in _H200_TILES:
        if (
            t.channels == c
            and t.rows[0] <= n_rows <= t.rows[1]
            and t.seeds_per_sm[0] * sms <= n_seeds < t.seeds_per_sm[1] * sms
            and n_rows % t.block_b == 0
        ):
            return t
    return None


# The smallest x (elements) the ops API takes the TMA kernel for. Its plan keeps what Triton encodes from the two
# descriptors by x's and y's addresses (kprof.launch.DescribedLaunch): where they repeat, as a loop's buffers do, a
# call cost 14.5-14.9 µs of host time at six bf16 points, where making the descriptors on each call had cost 25.2-26.9
# (200 calls back to back; benchmarks/results/kasmina-copy/h200-tma-kept-a76c282/; branch_free's plan 15.2-22.4 on
# another H200, h200-tma-host-0bdee08/). Under 2^23 elements the kernel takes less GPU time than that (64x4000x32:
# 12.6 µs against branch_free's 15.5), so a caller launching it without a CUDA graph waits on the host either way,
# and one whose buffers never repeat would pay the encoding (28.7-29.8 µs a call). From 2^23 (512x1000x32,
# 256x1000x64, 64x4000x64: 18-26 µs on the GPU, and up) the kernel's saving is the call's where the addresses repeat.
TMA_MIN_ELEMENTS = 1 << 23


def route_tile(n_rows: int, n_seeds: int, c: int, sms: int) -> TmaTile | None:
    """:func:`table_tile`, where x has at least ``TMA_MIN_ELEMENTS`` elements; else None."""
    return table_tile(n_rows, n_seeds, c, sms) if n_rows * n_seeds * c >= TMA_MIN_ELEMENTS else None


def tile_for(x: torch.Tensor, n_seeds: int, c: int) -> TmaTile | None:
    """The TMA launch for a call with telemetry on ``x`` (rows of ``n_seeds`` x ``c`` channels): :func:`route_tile`'s,
    where x is on an H200 and a descriptor can address it (``fits``); None where ``branch_free``'s kernel runs."""
    if not launching.fast_memory(x):
        return None
    tile = route_tile(x.numel() // x.shape[-1], n_seeds, c, launching.sm_count(x))
    return tile if tile is not None and fits(x, c, tile.block_b) else None


def fits(x: torch.Tensor, c: int, block_b: int) -> bool:
    """Whether the TMA kernel covers ``x`` (rows of ``c``-channel seeds) in tiles of ``block_b`` rows: 16-bit x whose
    rows a view and a descriptor can address (``launching.tma_ready``), channels a power of two of 16 to 128, whole
    tiles."""
    if x.dim() == 0 or x.stride(-1) != 1:
        return False
    n_rows = x.numel() // x.shape[-1]
    try:  # rows a view can address (a copy would cost more than the kernel saves: branch_free reads strided rows)
        x2d = x.view(n_rows, x.shape[-1])
    except RuntimeError:
        return False
    return launching.tma_ready(x2d) and c in (16, 32, 64, 128) and n_rows >= block_b and n_rows % block_b == 0


def descriptors(x2d: torch.Tensor, y2d: torch.Tensor, tile: TmaTile) -> tuple:
    """The kernel's x and y descriptors: blocks of ``tile.block_b`` rows of one seed's channels."""
    block = [tile.block_b, tile.channels]
    return launching.TensorDescriptor.from_tensor(x2d, block), launching.TensorDescriptor.from_tensor(y2d, block)


def launch(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    tile: TmaTile,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Check, allocate and launch ``tile``; returns ``(y, telemetry)``. Raises where :func:`fits` does not hold."""
    n_seeds, c = check_inputs(x, lifecycle, blueprint_id, alpha, weights, bias)
    if c != tile.channels or not fits(x, c, tile.block_b):
        raise ValueError(
            f"kasmina TMA kernel: needs 16-bit x with 16-byte aligned rows, channels in 16, 32, 64 or 128 (got {c}, "
            f"the tile's {tile.channels}) and rows a multiple of the tile's {tile.block_b} (got "
            f"{x.numel() // x.shape[-1]}); branch_free.launch runs every other call"
        )
    x2d = x.view(-1, x.shape[-1])
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    tele = torch.empty((n_seeds, 2), dtype=torch.float32, device=x.device)
    _kasmina_tma_kernel[(n_seeds,)](
        *descriptors(x2d, y.view(-1, y.shape[-1]), tile),
        x2d,
        lifecycle,
        blueprint_id,
        alpha,
        weights.contiguous(),
        bias.contiguous(),
        tele,
        x2d.shape[0],
        weights.shape[0],
        x2d.stride(0),
        **tile.constexprs(branch_free.precision_of(x.dtype)),
        **tile.options(),
    )
    return y, tele


# Public handle for op_plan (the ops API's launch plan): the kernel keeps its `_` name, which profilers record.
tma_kernel = _kasmina_tma_kernel
