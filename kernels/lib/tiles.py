"""Building blocks of the tiled matrix-product kernels (swiglu, rmsnorm_linear): tile order, the
product step, the TMA store of an output tile, the alignment promise, autotune configs and the measured
tables of pinned tiles."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching


def tile_config(bm: int, bn: int, bk: int, warps: int, stages: int, group_m: int = 8) -> Any:
    """A ``triton.Config`` of a tiled matrix-product kernel (BLOCK_M/N/K, GROUP_M, warps, stages)."""
    return triton.Config(
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m}, num_warps=warps, num_stages=stages
    )


def nearest(classes: Iterable[int], n: int) -> int:
    """The class (a measured size) nearest to ``n``; of two equally near, the smaller."""
    return min(classes, key=lambda c: (abs(c - n), c))


@dataclass(frozen=True)
class PinnedTiles:
    """Tile configs chosen by measurement per shape class, launched without the autotuner.

    A class is (row class, column class): ``rows`` are the row classes' upper bounds (an M-row product
    takes the first bound >= M; beyond the last one nothing is pinned) and ``cols`` the column counts
    the table was measured at (a product takes the nearest). ``table`` maps (row bound, columns) to
    (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages).

    Why pin: Triton's autotuner times each config once per process, and at decode sizes its pick was not
    stable across processes and H100s. It chose 64- or 128-row tiles for 1-row products 13 times in the
    committed grid stores, 11 of them 1.42-2.96x slower than a 16- or 32-row tile of another run
    (``benchmarks/results/grid/``); in an exhaustive race of every config (``benchmarks/decode_tiles.py``)
    tiles of 64 rows or more were 1.03-6.2x slower than the best at every 1-row point on both H100s timed
    (the best had 16-row tiles at all 78), so the slow picks were the
    autotuner's timing, not the machine. A pinned table gives the same tiles in every process and costs no
    tuning on a model's first call."""

    rows: tuple[int, ...]
    cols: tuple[int, ...]
    table: Mapping[tuple[int, int], tuple[int, int, int, int, int]]
    # Element sizes (bytes) the table was measured for: 16-bit inputs. fp32 tiles need twice the shared memory
    # (swiglu's 16x128x128 tiles with 4 stages asked 418 KB of an H100's 227 KB in the GPU tests) and stay
    # autotuned; the autotuner drops configs that do not fit.
    element_sizes: tuple[int, ...] = (2,)

    def config(self, m: int, n: int, element_size: int = 2) -> triton.Config | None:
        """The pinned config of an M x N output from inputs of ``element_size`` bytes (None: more rows than
        the table covers, or a dtype it was not measured for; autotune)."""
        if m > self.rows[-1] or element_size not in self.element_sizes:
            return None
        row = next(r for r in self.rows if m <= r)
        col = nearest(self.cols, n)
        bm, bn, bk, warps, stages = self.table[(row, col)]
        return tile_config(bm, bn, bk, warps, stages)


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(row tile, column tile) of program ``pid`` in grouped order: GROUP_M row tiles per column tile,
    so programs running together share weight tiles in L2 (Triton's matmul tutorial ordering)."""
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * grid_n
    first_m = (pid // group) * GROUP_M
    group_m = min(grid_m - first_m, GROUP_M)
    return first_m + (pid % group) % group_m, (pid % group) // group_m


@triton.jit
def tail_part(
    unit, whole, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr, TAIL_SPLIT: tl.constexpr
):
    """(row offset, column offset) of part ``unit`` of the last wave's tiles (those from tile ``whole`` on), each
    tile done as TAIL_SPLIT parts (``tail_split``): halves are BLOCK_M / 2 rows by BLOCK_N columns, quarters
    BLOCK_M / 2 by BLOCK_N / 2, the part shapes ``tile_descriptors`` gives the part descriptors."""
    COLS: tl.constexpr = TAIL_SPLIT // 2  # parts across a tile's columns: 1 (halves) or 2 (quarters)
    pid_m, pid_n = grouped_tile(whole + unit // TAIL_SPLIT, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    part = unit % TAIL_SPLIT
    return pid_m * BLOCK_M + (part // COLS) * (BLOCK_M // 2), pid_n * BLOCK_N + (part % COLS) * (BLOCK_N // COLS)


@triton.jit
def dot_acc(a, b, acc, IEEE: tl.constexpr):
    """``acc + a @ b``: the tensor-core product of the inputs' dtype, or (IEEE) a full-fp32 product (fp32
    inputs must not silently become TF32, and the interpreter's bf16 dot is wrong)."""
    if IEEE:
        return acc + tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    return tl.dot(a, b, acc)


@triton.jit
def store_tile(y_desc, out, off_m, off_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SUBTILE: tl.constexpr):
    """Store an output tile through its TMA descriptor, whole or (SUBTILE) as two column halves: the
    staging buffer in shared memory is then half as big, which leaves room for a 4th pipeline stage of
    swiglu's 128x128 output tiles (256-wide weight tiles) on an H100. The descriptor's block is then
    [BLOCK_M, BLOCK_N // 2]."""
    if SUBTILE:
        left, right = tl.split(tl.permute(tl.reshape(out, [BLOCK_M, 2, BLOCK_N // 2]), (0, 2, 1)))
        y_desc.store([off_m, off_n], left.to(y_desc.dtype))
        y_desc.store([off_m, off_n + BLOCK_N // 2], right.to(y_desc.dtype))
    else:
        y_desc.store([off_m, off_n], out.to(y_desc.dtype))


def tail_split(tiles: int, programs: int) -> int:
    """Parts per tile for the last, partial wave of a persistent launch: 4 (quarters) where that wave holds
    at most a quarter of the programs, 2 (halves) where at most half, else 0 (whole tiles). The parts are
    half as tall, and (quarters) half as wide: the last wave then keeps 2-4 times as many SMs busy for about
    1 / parts of a tile's time."""
    last_wave = tiles % programs if programs else 0
    for split in (4, 2):
        if 0 < last_wave * split <= programs:
            return split
    return 0


def stream_k_parts(tiles: int, programs: int, k_steps: int, min_steps: int, min_saved: float = 0.0) -> int:
    """Slots a tile needs when the last, partial wave's tiles are shared out along K over all ``programs`` (each
    program a run of about (last wave's tiles x ``k_steps``) / ``programs`` BLOCK_K steps): the most programs whose
    runs can meet in one tile, 2 + (k_steps - 2) // the shortest run. 0 (keep whole tiles) where there is no partial
    wave, where ``tail_split`` cuts it in parts, where a run would be shorter than ``min_steps`` steps, or where
    sharing saves an SM fewer than ``min_saved`` steps (a whole tile's ``k_steps`` less its run)."""
    last = tiles % programs if programs else 0
    if not last or tail_split(tiles, programs):
        return 0
    run = last * k_steps // programs
    if run < min_steps or k_steps - run < min_saved:
        return 0
    return 2 + max(k_steps - 2, 0) // run


def tile_count(m: int, n: int, rows: int, cols: int) -> int:
    """Tiles of ``rows`` x ``cols`` that cover an [m, n] output."""
    return triton.cdiv(m, rows) * triton.cdiv(n, cols)


@dataclass(frozen=True)
class TilePlan:
    """A TMA product's launch at one shape: ``tiles`` (BLOCK_M, BLOCK_N, BLOCK_K), GROUP_M, warps, stages, output
    stored in halves (``subtile``), the last wave's ``split`` (``tail_split``), ``programs`` (0: one program per
    tile; else persistent, that many) and, where the last wave is shared out along K, its tiles' slots ``parts``
    (``stream_k_parts``; 0: not); ``lower``: 0, or rows of a second block under each tile's BLOCK_M (tiles
    BLOCK_M + ``lower`` rows tall, where the kernel takes them)."""

    tiles: tuple[int, int, int]
    group_m: int
    warps: int
    stages: int
    subtile: bool
    split: int
    programs: int
    parts: int = 0
    lower: int = 0

    def tile_count(self, m: int, n: int) -> int:
        """Output tiles of an [m, n] output."""
        return tile_count(m, n, self.tiles[0] + self.lower, self.tiles[1])

    def grid(self, m: int, n: int) -> int:
        """Programs launched for an [m, n] output."""
        return self.programs or self.tile_count(m, n)

    def meta(self, **extra: Any) -> dict[str, Any]:
        """The kernel's constexprs (its family's own in ``extra``) and launch options."""
        bm, bn, bk = self.tiles
        return dict(
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=self.group_m,
            PROGRAMS=self.programs,
            SUBTILE=self.subtile,
            TAIL_SPLIT=self.split,
            IEEE=launching.interpreting(),
            num_warps=self.warps,
            num_stages=self.stages,
            **extra,
        )


def persistent_sms(t: torch.Tensor) -> int:
    """The SMs a persistent TMA product on ``t``'s device spreads its tiles over: the GPU's, or 4 for CPU tensors
    under the interpreter (few programs, each walking several tiles, so the tests reach the last wave's parts)."""
    return launching.sm_count(t) if t.is_cuda else 4


def tile_descriptors(
    x2d: torch.Tensor,
    w: torch.Tensor,
    y: torch.Tensor,
    tiles: tuple[int, int, int],
    subtile: bool,
    split: int,
    w_cols: int = 1,
    lower: int = 0,
) -> tuple:
    """The TMA descriptors of a persistent product's whole tiles and of its last wave's parts (``tail_split``):
    x [M, K], w [K, w_cols * N] and y [M, N] with (BLOCK_M, BLOCK_N, BLOCK_K) ``tiles``, y's block half as wide
    with ``subtile``; then the same three for parts of BLOCK_M / 2 rows and BLOCK_N (halves) or BLOCK_N / 2
    (quarters) columns, for the ``lower`` rows under each tile's BLOCK_M (``TilePlan.lower``; w's block as the
    whole tiles'), or the whole tiles' again where neither is used. ``w_cols``: weight columns per output column
    (2 for swiglu's interleaved gate/up pairs)."""
    bm, bn, bk = tiles
    desc = launching.TensorDescriptor.from_tensor
    full = (desc(x2d, [bm, bk]), desc(w, [bk, w_cols * bn]), desc(y, [bm, bn // 2 if subtile else bn]))
    if lower:
        return full + (desc(x2d, [lower, bk]), full[1], desc(y, [lower, bn // 2 if subtile else bn]))
    if not split:
        return full + full
    tn = bn // (split // 2)
    return full + (desc(x2d, [bm // 2, bk]), desc(w, [bk, w_cols * tn]), desc(y, [bm // 2, tn]))


def aligned8(*values: int) -> bool:
    """All multiples of 8 (elements) but not all of 16: a tiled product should then promise the compiler
    16-byte aligned rows, which it cannot infer by itself.

    Triton only specialises integer arguments on divisibility by 16, and the wrap-around ``% N`` of a
    tile's column offsets hides their contiguity: at 1000x1000x3000 every tile of the swiglu and
    rmsnorm_linear products was loaded one element at a time (``ld.global.b16`` in the sm_90 PTX, 5-10x
    slower than cuBLAS on the H100). With ``tl.multiple_of`` / ``tl.max_contiguous`` / ``tl.max_constancy``
    written in the kernel body (the same calls inside a ``@triton.jit`` helper were lost) the tiles move
    with ``cp.async`` 16-byte copies, as for sizes divisible by 16 (checked by compiling both for sm_90).
    The row offsets, shaped [rows, 1], are promised ``[8, 8]``: every element is a multiple of 8. Written
    ``[8, 1]``, Triton 3.6 (the GPU machine's) carried the 1 of the size-1 axis into the tile's addresses and
    loaded every tile one element at a time again, where the newer Triton CI installs did not; the CPU test
    of the promises fails there with ``[8, 1]``. The split-K kernels also promise their K masks constant over
    runs of 8, without which their x tiles stayed scalar.
    Where everything is a multiple of 16 the promise must not be made: it replaces what the compiler
    knows (divisible by 16, contiguous over the whole tile) by weaker facts, and on the H100 that made
    2048x2048x5504 and 8192x4096x11008 3.6-3.8x slower (run 20261122-162348-ec8a)."""
    return all(v % 8 == 0 for v in values) and not all(v % 16 == 0 for v in values)


def promise_aligned(x2d: torch.Tensor, w: torch.Tensor) -> bool:
    """The ``ALIGNED`` argument of a tiled product of ``x2d`` [M, K] by ``w`` [K, N]: :func:`aligned8` of K,
    N and both row strides, with unit column strides (the promise is about contiguous rows)."""
    return aligned8(x2d.shape[1], w.shape[1], x2d.stride(0), w.stride(0)) and x2d.stride(1) == 1 and w.stride(1) == 1
