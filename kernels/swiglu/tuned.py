"""swiglu's dispatch (``triton_tuned`` and ``kprof.kernels.ops``), by rows M and output columns N:

=========  ========  ==========================================================  ====================================
rows       columns   runs                                                        measured in benchmarks/results/
=========  ========  ==========================================================  ====================================
1-16       >= 8192   the split-K kernel, tiles per column class (bf16, fp16;     split-k/swiglu-4bba1af/
                     ``split_k.DECODE_TILES``: unsplit, the fastest there)
1-2        >= 5000   the same, the tile's rows past M masked                     split-k/swiglu-rows-9f89fd2/
                     (``split_k.MASKED_MAX_ROWS``)
1-128      any       the tiled kernel with pinned tiles (``DECODE_TILES``; bf16,  decode-tiles/ (sections 1-2)
                     fp16; fp32 autotuned), where the row above does not apply
65-999     any       16-bit on a GPU: raced on each shape's first call, the      mid-rows/, grid/h200-swiglu-
                     tiled kernel (pinned tiles up to 128 rows, autotuned        decode-rows-a305221/
                     above) or cuBLAS's two products then silu_mul
                     (``raced_route``; on the weights as given, ``ops.swiglu``,
                     at every row count from 65); the rows above and the next
                     four apply where no race runs
129-511    any       the tiled kernel, autotuned                                 grid/
512-999    <= 5504   cuBLAS's two products, then kprof's silu_mul kernel         decode-tiles/ (section 5)
512-999    > 5504    the tiled kernel, autotuned                                 decode-tiles/ (section 5)
512+       any       ragged-8 shapes (``tiles.aligned8``) where the tiled kernel   alignment-promises/
                     would run: cuBLAS's two products, then silu_mul
1000+      any       interleaved weights, one TMA product (``ops.PreparedSwiGLU``  matmul-tma/, matmul-last-gap/
                     and ``triton_tuned``; ``ops.swiglu`` on the weights as
                     given: the tiled kernel, autotuned)
1000+      any       on interleaved weights, where 128x128 output tiles make   swiglu-wave-tiles/
                     at most about 1.5 waves: tiles of 128 + 64 rows where
                     they fit in one (``one_wave_config``); where the tiles
                     make one wave under 90% full, raced on the first call:
                     the kernel or cuBLAS's one product on those weights,
                     then a pass over the gate/up pairs (``underfilled_wave``)
1000+      N%16>0    on interleaved weights, raced on the first call: the TMA  swiglu-cublas-pairs/
                     kernel or cuBLAS's one product on those weights, then a
                     pass over the gate/up pairs (``interleaved_route``)
=========  ========  ==========================================================  ====================================

The tiled kernel, autotuned per (M, N, K) over tile shapes, warps and pipeline stages, programs in
grouped order (GROUP_M row tiles per column tile: a wave of programs shares weight tiles in L2), and the
weight layout chosen by measurement.

Which weight layout wins? ``"kn"`` reads the weights as given ([d, ff], ff contiguous);
``"nk"`` a transposed copy ([ff, d] stored, d contiguous, as nn.Linear keeps them). Measured on an H100 in bf16, each
autotuned, three interleaved rounds
(benchmarks/results/catalog/matrix_races.csv): "kn" wins at every shape - 158.9 us
against 171.6 us at 2048x2048x5504, 2442.7 against 2461.8 us at 8192x4096x11008, 73.0 against 76.7 us
at 16x4096x11008 - so the tuned version reads the weights as given.

From 1000 rows, where x, y and the weights can be addressed by TMA descriptors (16-bit, 16-byte aligned
rows, Hopper), a third layout wins: the two weights interleaved column by column (``W_int[:, 2j]`` =
``Wg[:, j]``, ``W_int[:, 2j+1]`` = ``Wu[:, j]``, a copy of both weights), so one product of
twice the width gives gate and up side by side, split in the epilogue; its tiles move through TMA. On an
H100 (bf16, five interleaved rounds, ``benchmarks/results/matmul-tma/``):
152.2 us against 154.4 for the autotuned pointer kernel at 2048x2048x5504 (cuBLAS's ``x @ [Wg Wu]``
136.5), 2186.5 against 2325.3 at 8192x4096x11008 (cuBLAS 2219.0 in that noisy run), and 34.2 against
39.5 (a two-accumulator TMA kernel) and 124.1 (the pointer kernel, whose alignment promise Triton 3.6 then
dropped: 44.3 with it kept, ``benchmarks/results/alignment-promises/``) at 1000x1000x3000 (cuBLAS 24.8).
The interleaved kernel is persistent (one program per SM walking the tiles), with output tiles stored in
halves so a 4th pipeline stage fits: 145.0 against 153.5 us at 2048x2048x5504 (1.041x cuBLAS's 139.3,
``benchmarks/results/matmul-last-gap/``). Only where K is 8192 or more and the tiles make over 32 waves of SMs
does one tile per program run (``persistent_launch``): a program's K loop is long enough there that nothing is
lost between tiles, and the hardware's scheduling of the many programs balances them better
(``benchmarks/results/short-k/``).
When the last wave of tiles would keep at most a quarter (half) of the SMs busy, its tiles are done as
quarter (half) tiles by all of them: 137.0 us at 2048x2048x5504, level with cuBLAS (136.7).

Nothing derived from the weights is kept between calls: ``triton_tuned`` builds ``W_int`` on every call
that takes the interleaved kernel (its time includes that copy), ``triton_tuned_prepared`` measures the
kernels alone on weights interleaved before the timed calls, and model code holds its interleaved weights
in :class:`kprof.kernels.ops.PreparedSwiGLU`, refreshed explicitly after the weights change.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching, routes, tiles
from kprof.kernels.lib.tiles import dot_acc, grouped_tile, store_tile, tail_part, tail_split, tile_descriptors
from kprof.kernels.swiglu import split_k
from kprof.kernels.swiglu.cublas_silu import interleaved_product_then_silu, products_then_silu_mul
from kprof.kernels.swiglu.family import FAMILY, check_inputs
from kprof.kernels.swiglu.tiled import _swiglu_tiled_kernel, ieee


@triton.jit
def _interleaved_tile(
    x_desc,
    w_desc,
    y_desc,
    x_lower,
    y_lower,
    off_m,
    off_n,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    LOWER_M: tl.constexpr,
    SUBTILE: tl.constexpr,
    IEEE: tl.constexpr,
):
    """One output tile at (off_m, off_n): the product with both weights' columns, then silu(gate) * up. With
    LOWER_M, LOWER_M more rows under the BLOCK_M (x_lower's and y_lower's blocks) share each weight tile loaded."""
    acc = tl.zeros([BLOCK_M, 2 * BLOCK_N], dtype=tl.float32)  # gate and up, column by column
    if LOWER_M:
        low = tl.zeros([LOWER_M, 2 * BLOCK_N], dtype=tl.float32)
    for ks in range(tl.cdiv(K, BLOCK_K)):  # out-of-range rows/columns of the edge tiles load as zeros
        # Each branch is the load order measured (benchmarks/results/swiglu-wave-tiles/ for the taller tiles): the
        # compiler issues the loads in this order, and the PTX of one order is not the other's.
        if LOWER_M:
            b = w_desc.load([ks * BLOCK_K, 2 * off_n])
            acc = dot_acc(x_desc.load([off_m, ks * BLOCK_K]), b, acc, IEEE)
            low = dot_acc(x_lower.load([off_m + BLOCK_M, ks * BLOCK_K]), b, low, IEEE)
        else:
            a = x_desc.load([off_m, ks * BLOCK_K])
            b = w_desc.load([ks * BLOCK_K, 2 * off_n])
            acc = dot_acc(a, b, acc, IEEE)
    gate, up = tl.split(tl.reshape(acc, [BLOCK_M, BLOCK_N, 2]))
    store_tile(y_desc, gate * tl.sigmoid(gate) * up, off_m, off_n, BLOCK_M, BLOCK_N, SUBTILE)  # clipped
    if LOWER_M:
        gate, up = tl.split(tl.reshape(low, [LOWER_M, BLOCK_N, 2]))
        store_tile(y_lower, gate * tl.sigmoid(gate) * up, off_m + BLOCK_M, off_n, LOWER_M, BLOCK_N, SUBTILE)


@triton.jit
def _interleaved_tile_at(
    tile, x_desc, w_desc, y_desc, x_lower, y_lower, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    LOWER_M: tl.constexpr, SUBTILE: tl.constexpr, IEEE: tl.constexpr,
):  # fmt: skip
    """Output tile number ``tile`` in grouped order (``grouped_tile``), tiles BLOCK_M + LOWER_M rows tall."""
    pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M + LOWER_M, BLOCK_N, GROUP_M)
    off_m = pid_m * (BLOCK_M + LOWER_M)
    _interleaved_tile(
        x_desc, w_desc, y_desc, x_lower, y_lower, off_m, pid_n * BLOCK_N, K, BLOCK_M, BLOCK_N, BLOCK_K, LOWER_M,
        SUBTILE, IEEE,
    )  # fmt: skip


@triton.jit
def _swiglu_interleaved_kernel(
    # TMA descriptors (block shapes set by the launcher)
    x_desc,  # x [M, K], blocks [BLOCK_M, BLOCK_K]
    w_desc,  # W_int [K, 2N]: column 2j = Wg[:, j], 2j + 1 = Wu[:, j]; blocks [BLOCK_K, 2 * BLOCK_N]
    y_desc,  # y [M, N], blocks [BLOCK_M, BLOCK_N] (half as wide with SUBTILE)
    x_tail,  # the same three for the tail's part tiles (TAIL_SPLIT): x blocks [BLOCK_M / 2, BLOCK_K],
    w_tail,  # W_int blocks [BLOCK_K, 2 * TN], y blocks [BLOCK_M / 2, TN], with TN = BLOCK_N for halves,
    y_tail,  # BLOCK_N / 2 for quarters; with LOWER_M, x's and y's for the rows under a tile's BLOCK_M: [LOWER_M, ...]
    # sizes
    M,
    N,
    K,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,  # output columns per tile; the weight tile is twice as wide
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # row tiles per column tile in tile order (weight tiles reused from L2)
    PROGRAMS: tl.constexpr,  # 0: one program per tile; else persistent, each program every PROGRAMS-th tile
    SUBTILE: tl.constexpr,  # store output tiles in two halves (room for a 4th stage)
    TAIL_SPLIT: tl.constexpr,  # persistent: 0, or the tiles of the last, partial wave done as 2 halves / 4 quarters
    LOWER_M: tl.constexpr,  # 0, or tiles BLOCK_M + LOWER_M rows tall (a second block under each; TAIL_SPLIT 0)
    IEEE: tl.constexpr,  # the interpreter, whose bf16 dot is wrong: fp32 products there
):
    tl.static_assert(LOWER_M == 0 or TAIL_SPLIT == 0)
    if PROGRAMS == 0:
        _interleaved_tile_at(
            tl.program_id(0), x_desc, w_desc, y_desc, x_tail, y_tail, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
            LOWER_M, SUBTILE, IEEE,
        )  # fmt: skip
    else:
        tiles = tl.cdiv(M, BLOCK_M + LOWER_M) * tl.cdiv(N, BLOCK_N)
        whole = (tiles // PROGRAMS) * PROGRAMS if TAIL_SPLIT else tiles
        # flatten: the compiler pipelines the next tile's first loads under this tile's epilogue
        for tile in tl.range(tl.program_id(0), whole, PROGRAMS, flatten=True):
            _interleaved_tile_at(
                tile, x_desc, w_desc, y_desc, x_tail, y_tail, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, LOWER_M,
                SUBTILE, IEEE,
            )  # fmt: skip
        if TAIL_SPLIT:
            # The last wave would keep only (tiles - whole) SMs busy for a whole tile's time; split into
            # TAIL_SPLIT parts per tile (the launcher checks there are at most PROGRAMS parts) it keeps
            # that many times as many busy for about 1 / TAIL_SPLIT of it, at a lower rate per tile.
            for unit in tl.range(tl.program_id(0), (tiles - whole) * TAIL_SPLIT, PROGRAMS):
                off_m, off_n = tail_part(unit, whole, M, N, BLOCK_M, BLOCK_N, GROUP_M, TAIL_SPLIT)
                _interleaved_tile(
                    x_tail,
                    w_tail,
                    y_tail,
                    x_tail,
                    y_tail,
                    off_m,
                    off_n,
                    K,
                    BLOCK_M // 2,
                    BLOCK_N // (TAIL_SPLIT // 2),
                    BLOCK_K,
                    0,
                    False,
                    IEEE,
                )


# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages): the fastest of 6 at 2048, 8192 and 1000 rows (H100)
TMA_CONFIG = (128, 128, 64, 8, 8, 3)
# Persistent (one program per SM), output tiles stored in halves so a 4th stage fits, whole columns of
# row tiles in a group (``persistent_launch`` says where). On an H100 (benchmarks/results/matmul-last-gap/)
# 145.0 us against 153.5 one tile per program at 2048x2048x5504 (688 tiles, 5.2 waves; cuBLAS x @ [Wg Wu]
# 139.3), a tie at 1000x1000x3000 (1.5 waves). That race also had it slower at 4096x4096x11008 (20.8 waves:
# 1096 against 1055) and 8192x4096x11008, so it ran only up to 8 waves. Timed again with cold calls at full SM
# clock (benchmarks/results/short-k/, bf16, the 24 prefill points of 2048 and 8192 rows, one H100), it took
# 0.90-0.99x the time of one tile per program at every point with K under 8192 (8192x4096x11008, 41.7 waves:
# 0.979x; 2048x2048x11008: 1.093x cuBLAS one tile per program, 0.994x persistent), and at K 8192 up to
# 27 waves (0.93-0.99x), but 1.003-1.030x at 41.7-108.6 waves of K 8192 (8192x8192x28672: 1.018x cuBLAS
# against 0.989x).
PERSISTENT_CONFIG = (128, 128, 64, 16, 8, 4)
PLAIN_MIN_K = 8192  # from this K ...
PLAIN_MIN_WAVES = 32  # ... and over this many waves of tiles: one tile per program
# The last, partial wave of tiles in parts (``tail_split``). At 2048x2048x5504 688 tiles on 132 SMs leave 28
# for a sixth wave; as 112 quarter tiles it took the op from 143.4 to 137.0 us (cuBLAS x @ [Wg Wu] 136.7),
# at 2048x4096x5504 from 266.5 to 251.8 (cuBLAS 265.2) on an H100
# (benchmarks/results/matmul-last-gap/quarter_tail.log). Halves: 1000x1000x3000 leaves 60 of 192
# tiles; as 120 halves, 34.2 -> 33.0 us (tail_halves.log, where 2048x2048x5504 read 137.7 against cuBLAS 138.8).
TAIL_SPLITS = True
# One wave of taller tiles, where 128x128 output tiles make at most about one and a half waves of SMs. Tiles of
# 128 + 64 rows (``LOWER_M``: a second block of rows under each, as cuBLAS's 192-row tiles), one a program, run
# instead where they fit in one wave: 64 output columns wherever those fit (a wave of 192x64 tiles took 0.81x a
# wave of 128x128 ones: 9.4 against 11.6 ns a step of K, medians of 15 shapes), else 128 where the 128x128 tiles
# spill past one wave (a wave of 192x128 took 1.43x, where the persistent kernel's 128x128 tiles took 1.41-1.65x: a
# wave, then the rest in halves or quarters). On an H200 (benchmarks/results/swiglu-wave-tiles/, cold µs, bf16 /
# fp16; the persistent 128x128 tiles, then cuBLAS's x @ [Wg Wu] in brackets):
# - 2048x2048x768 (Qwen3-30B-A3B's experts; 96 tiles of 128 rows, 0.73 of a wave; 132 of 192x64): 19.97 / 20.32
#   against 24.37 / 24.54 (18.85 / 19.23);
# - 4096x2048x768 and 2048x4096x1536 (192 tiles of 128 rows, 1.45 waves, the last in halves; 132 of 192x128): 35.79 /
#   36.86 against 38.27 / 39.01 (34.75 / 35.81), and 66.75 / 68.48 against 70.69 / 72.73 (67.42 / 68.56).
# Where the 128x128 tiles fill one wave the taller ones lost: at 1024x7168x2048 (128 tiles) 108.3 / 109.4 against
# 77.9 / 79.2 for 96 tiles of 192x128. Persistent programs walking the taller tiles were slower at every point.
ONE_WAVE_CONFIGS = ((128, 64, 64, 8, 4, 4, 64), (128, 128, 64, 8, 8, 3, 64))  # ..., stages, LOWER_M
# Where the kernel's tiles (the taller ones included) make one wave that keeps fewer than PAIRS_MAX_FILL of the SMs
# busy, cuBLAS's one product on the interleaved weights, then the pass over its gate/up pairs (``cublas_silu``), was
# faster at most shapes: cuBLAS's tiles are not bound to powers of two (192x128 at 2048x2048x768) and fill the wave.
# On an H200 (benchmarks/results/swiglu-wave-tiles/, bf16 and fp16): the pairs took 0.675-0.954x the kernel's time at
# all 7 shapes of 1000-2560 rows whose wave was 55-85% full in the races the rule was drawn from (1000x2048x768: 13.12
# against 19.38 µs), and 1.002-1.130x at all 16 whose wave was 91-100% full (1900x2048x768: 21.84 against 20.00);
# out of sample, 0.75-0.90x at 6 of 7 underfilled shapes, but 1.12x at 1280x2048x1408 (27.5 against 24.6, 83%
# full), where cuBLAS's product alone was only 0.96x the kernel. So an underfilled wave races the two on the
# shape's first call (``interleaved_route``, ``_underfilled``), the pairs where no race runs.
PAIRS_MAX_FILL = 0.9
TMA_INTERPRETER_CONFIG = (16, 16, 32, 2, 4, 2)
TMA_MIN_ROWS = 1000  # fewer rows keep the pointer kernel (pinned tiles at decode sizes): TMA there not measured
# From CUBLAS_MIN_ROWS rows to under TMA_MIN_ROWS, weights of up to CUBLAS_MAX_COLS columns: cuBLAS's two
# products, then kprof's silu_mul kernel (``cublas_silu.py``). At 512 rows and 5504 columns the tiled kernel
# lost to torch.compile by 5-22% in one H100 race of both dtypes, where that route took 0.82-0.94x the
# tiled kernel's time at all 6 points (K 2048-8192) and tied torch.compile (0.91-1.03x;
# benchmarks/results/decode-tiles/cublas-silu/). At 11008-28672 columns it was 0.89-1.11x the tiled kernel,
# no consistent side; 128 rows (the pinned tiles, 0.83x torch.compile at 128x4096x5504) stay Triton, and
# rows between 129 and 511 were not timed.
CUBLAS_MIN_ROWS = 512
CUBLAS_MAX_COLS = 5504
# Where the tiled kernel would run on a ragged-8 shape (K, N and row strides multiples of 8, not all of 16:
# ``tiles.aligned8``) from RAGGED_CUBLAS_MIN_ROWS rows, any width: cuBLAS's products then silu_mul. On an
# H100 (bf16 at 512-4000 rows of 1000x3000 and 4104x11000, fp16 of 1000x3000) that route took 0.67-0.86x the
# tiled kernel's time from 1000 rows and at 512x4104x11000, and tied it at 512x1000x3000 (0.996-1.008x); at
# 256 rows it was 1.19-1.23x at 1000x3000 but 0.57x at 4104x11000, so fewer rows keep the kernel
# (benchmarks/results/alignment-promises/ragged-rows-50e0a76/). The interleaved TMA kernel on prepared weights
# stays ahead of it from 1000 rows (0.75-0.99x) and keeps those.
RAGGED_CUBLAS_MIN_ROWS = 512
# From RACE_MIN_ROWS rows to under TMA_MIN_ROWS (16-bit, on a GPU) the two rules above give way to a race of
# the tiled kernel and cuBLAS's products then silu_mul, on the first call of each shape class
# (``raced_route``, :mod:`kprof.kernels.lib.routes`; the rules' route kept unless the other is over 2% faster).
# At 160-480 rows on three H100s (bf16, fp16; benchmarks/results/mid-rows/) cuBLAS's route was faster at 20 of 28
# points (the autotuned tiled kernel up to 1.81x its time, at 256x4104x11000) and slower at 8, by up to 1.97x where
# cuBLAS itself ran at about half its rate (320x4096x5504, 320x2048x11008); no rule of rows and columns held.
# From 65 rows the pinned tiles race too. At 96 and 128 rows of 3584x18944 (Qwen2.5-7B's FFN) their 128 x 128 tiles
# (148 programs, one an SM at 147 KB of shared memory: 1.12 waves of an H200's 132 SMs) took 101.7-104.5 us against
# cuBLAS's route's 74.7-75.6 (bf16 and fp16; the pinned 64-row tiles 75.1-75.9 at 32 and 64 rows). At 96 rows of
# 5120x27648 and 8192x28672 cuBLAS's route was 0.962-0.979x the tiled kernel; at 128 rows of 4096x14336, 5120x27648
# and 8192x28672-29568 cuBLAS's route took 1.10-1.73x the tiled kernel's time (cuBLAS's one product of [Wg Wu] at 128
# rows 1.7-1.8x its time at 96), the cliff the race is for. At 32 and 64 rows the tiled kernel was ahead of cuBLAS's
# route at 20 of 24 points and behind it by 1.2-2.2% at the other 4 (3584x18944), within the race's keep band
# (benchmarks/results/grid/h200-swiglu-decode-rows-a305221/, one H200, cold, 2 places in memory). 64 rows and fewer
# keep the pinned tiles unraced (raced in decode-tiles/).
RACE_MIN_ROWS = 65
_mid_rows = routes.RouteRace("swiglu: the tiled kernel or cuBLAS's products then silu_mul")
# On the interleaved weights, where the output width N is not a multiple of 16, the interleaved TMA kernel lost to
# cuBLAS's one product on the same weights, then one pass over the gate/up pairs (``cublas_silu``), at some shapes
# and won at others, with nothing in the shape to tell them apart. On an H100 (bf16 and fp16,
# benchmarks/results/swiglu-cublas-pairs/) the pairs route took 0.87x the kernel's time at 1000x1000x3000 (26.0
# against 30.0 us; cuBLAS's x @ [Wg Wu] alone 20.9, so 1.24x it against 1.43x), 0.88x at 2056x2056x5512 and 0.92x
# at 1000x4104x11000, but 1.06-1.25x at 2000-4000 rows of 1000x3000, 1000x2056x5512 and 1000x1000x11000. Where N
# is a multiple of 16 the kernel was faster at all 7 shapes timed, 12 points in bf16 and fp16 (the pairs route
# 1.08-1.15x its time). So a ragged N races the two on its first call; the kernel is the static rule's route.
_interleaved_ragged = routes.RouteRace(
    "swiglu: the interleaved TMA kernel or cuBLAS's product on the interleaved weights, then the pairs pass"
)
# An underfilled wave (``underfilled_wave``) races the same two routes, keeping the pairs unless the kernel is more
# than UNDERFILLED_KEEP_PAIRS faster: on an H200 the race had the kernel 2.4-3.2% ahead at 1700x2048x1024 bf16 and
# 1600x2048x1408 fp16, where the harness's cold timing had the pairs 3-5% ahead; where the kernel did win, the race had
# it 9.7-15.2% ahead (1280x2048x1408, 1280x4096x1408, both dtypes; benchmarks/results/swiglu-wave-tiles/confirm-4/).
UNDERFILLED_KEEP_PAIRS = 0.05
_underfilled = routes.RouteRace(
    "swiglu: the interleaved TMA kernel, whose tiles leave a wave underfilled, or cuBLAS's product on the interleaved "
    "weights, then the pairs pass",
    keep_default_within=UNDERFILLED_KEEP_PAIRS,
)


def interleaved_weights(w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``W_int`` [K, 2N] with column 2j = ``w_gate[:, j]`` and 2j + 1 = ``w_up[:, j]``: a new copy on every
    call (nothing is cached; a caller that reuses it owns keeping it current, as
    :class:`kprof.kernels.ops.PreparedSwiGLU` does)."""
    return torch.stack([w_gate, w_up], dim=2).reshape(w_gate.shape[0], 2 * w_gate.shape[1])


def persistent_launch(m: int, n: int, k: int, sms: int) -> bool:
    """Whether the interleaved kernel at [m, k] x [k, n] runs persistent on ``sms`` SMs (``PLAIN_MIN_K``)."""
    waves = triton.cdiv(m, TMA_CONFIG[0]) * triton.cdiv(n, TMA_CONFIG[1]) / sms
    return k < PLAIN_MIN_K or waves <= PLAIN_MIN_WAVES


def config_lower(config: tuple[int, ...]) -> int:
    """A tile config's LOWER_M: its 7th entry where it has one (``ONE_WAVE_CONFIGS``), else 0."""
    return config[6] if len(config) > 6 else 0


def config_tile_count(m: int, n: int, config: tuple[int, ...]) -> int:
    """Tiles of a config (BLOCK_M, BLOCK_N, ...[, LOWER_M]) covering an [m, n] output."""
    return tiles.tile_count(m, n, config[0] + config_lower(config), config[1])


def one_wave_config(m: int, n: int, sms: int) -> tuple[int, ...] | None:
    """The taller tiles (``ONE_WAVE_CONFIGS``) for an [m, n] output on ``sms`` SMs: 192x64 where they fit in one wave,
    else 192x128 where they do and the 128x128 tiles do not; else None (the persistent 128x128 tiles)."""
    narrow, wide = ONE_WAVE_CONFIGS
    if config_tile_count(m, n, narrow) <= sms:
        return narrow
    return wide if config_tile_count(m, n, wide) <= sms < config_tile_count(m, n, PERSISTENT_CONFIG) else None


def underfilled_wave(m: int, k: int, n: int, sms: int) -> bool:
    """Whether the interleaved kernel's tiles for [m, k] x [k, 2n] make one wave that keeps fewer than PAIRS_MAX_FILL
    of the ``sms`` SMs busy (``interleaved_plan`` on a GPU)."""
    return interleaved_plan(m, k, n, sms).tile_count(m, n) < PAIRS_MAX_FILL * sms


def underfilled_on(x2d: torch.Tensor, n: int) -> bool:
    """:func:`underfilled_wave` for rows ``x2d`` and ``n`` output columns on their GPU (never off one, nor under the
    interpreter)."""
    on_gpu = x2d.is_cuda and not launching.interpreting()
    return on_gpu and underfilled_wave(x2d.shape[0], x2d.shape[1], n, tiles.persistent_sms(x2d))


def launch_interleaved(
    x2d: torch.Tensor,
    w_int: torch.Tensor,
    y: torch.Tensor,
    persistent: bool | None = None,
    tail: bool | None = None,
    config: tuple[int, ...] | None = None,
) -> None:
    """``y = silu(x2d @ Wg) * (x2d @ Wu)`` from the interleaved weights (``tma_ready`` operands); persistent
    where ``persistent_launch`` says so, unless ``persistent`` says otherwise. ``tail``
    (persistent only; default ``TAIL_SPLITS``) does the last partial wave's tiles in parts (``tail_split``).
    ``config`` (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages[, lower rows]) replaces the shipped tiles (an
    experiment's)."""
    (m, k), n = x2d.shape, y.shape[1]
    plan = interleaved_plan(m, k, n, tiles.persistent_sms(x2d), persistent, tail, config)
    _swiglu_interleaved_kernel[(plan.grid(m, n),)](
        *tile_descriptors(x2d, w_int, y, plan.tiles, plan.subtile, plan.split, w_cols=2, lower=plan.lower),
        m,
        n,
        k,
        **plan.meta(LOWER_M=plan.lower),
    )


def interleaved_plan(
    m: int,
    k: int,
    n: int,
    sms: int,
    persistent: bool | None = None,
    tail: bool | None = None,
    config: tuple[int, ...] | None = None,
) -> tiles.TilePlan:
    """The interleaved kernel's tiles, tail and grid for an [m, k] x [k, 2n] product on ``sms`` SMs (arguments as
    :func:`launch_interleaved`): on a GPU, unless told the tiles or persistence, the taller tiles of
    :func:`one_wave_config` where they fill one wave."""
    if config is None and persistent is None and not launching.interpreting():
        config = one_wave_config(m, n, sms)
        persistent = False if config else None
    if persistent is None:
        persistent = persistent_launch(m, n, k, sms)
    if launching.interpreting() and config is None:
        config = TMA_INTERPRETER_CONFIG
    config = config or (PERSISTENT_CONFIG if persistent else TMA_CONFIG)
    bm, bn, bk, gm, warps, stages = config[:6]
    lower = config_lower(config)
    count = config_tile_count(m, n, config)
    programs = min(sms, count) if persistent else 0
    split = tail_split(count, programs) if (TAIL_SPLITS if tail is None else tail) and not lower else 0
    subtile = persistent and not launching.interpreting()
    return tiles.TilePlan((bm, bn, bk), gm, warps, stages, subtile, split, programs, lower=lower)


_config = tiles.tile_config
CONFIGS = [
    _config(128, 128, 64, 8, 3),
    _config(128, 128, 64, 8, 4),
    _config(128, 64, 64, 4, 4),
    _config(128, 64, 64, 8, 4),
    _config(64, 128, 64, 4, 4),
    _config(256, 64, 64, 8, 3),
    _config(128, 128, 32, 8, 4),
    # the sweep's winner at 2048x2048x5504 (H100): 5 stages fit once BLOCK_K is 32, 1.7% ahead of 4 stages
    # (benchmarks/results/sweeps/swiglu_tiled_guide.md)
    _config(128, 128, 32, 8, 5),
    _config(64, 64, 64, 4, 4),
    _config(16, 128, 128, 4, 4),  # decode: few tokens, the weights are what moves
    _config(32, 64, 128, 4, 5),
]
# Decode (few rows): the weights are what moves and column tiles are the only parallelism. At 1x2048x11008
# bf16 on an H100 the tiles above give 86 (16x128) or 172 (32x64, 1.3 waves of 132 SMs) programs: 63.3 us
# against torch.compile's 37.0; 1x2048x5504, 26.2 against 22.1 (benchmarks/results/grid/catalog-bf16/).
# Narrow column tiles give 2-4x the programs; the autotuner tries them only for few rows (DECODE_MAX_ROWS),
# where a weight tile is read by one row block anyway.
DECODE_CONFIGS = [_config(16, 32, 128, 4, 4), _config(16, 64, 128, 4, 4), _config(16, 32, 256, 4, 3)]
DECODE_MAX_ROWS = 128
INTERPRETER_CONFIG = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8}


def _is_decode_config(config: triton.Config) -> bool:
    return config.kwargs["BLOCK_M"] == 16 and config.kwargs["BLOCK_N"] < 128


def prune_configs(configs: list, named_args: dict, **kwargs: object) -> list:
    """The configs the autotuner times for these arguments: the narrow decode tiles only up to
    DECODE_MAX_ROWS rows (beyond, they re-read each weight tile once per 16 rows)."""
    if named_args["M"] <= DECODE_MAX_ROWS:
        return list(configs)
    return [c for c in configs if not _is_decode_config(c)]


# Up to 128 rows the tiles are pinned per class, not autotuned (see tiles.PinnedTiles for why). Chosen from
# a cold race of all 14 configs at 1, 4, 16, 32, 64 and 128 rows x K 2048/4096/8192 x N 5504-28672 on two
# H100s (bf16 and fp16 on one, bf16 on the other; benchmarks/results/decode-tiles/): each entry is within
# 1.3% of that point's fastest config at every point of its class; the autotuner's own picks on the second
# H100 were up to 4.4% off (7 of 90 points over 2%), and 1.2-3x off in earlier grid races.
DECODE_TILES = tiles.PinnedTiles(
    rows=(1, 4, 16, 32, 64, 128),
    cols=(5504, 8192, 11008, 14336, 28672),
    table={
        (1, 5504): (16, 64, 128, 4, 4), (1, 8192): (16, 64, 128, 4, 4), (1, 11008): (16, 128, 128, 4, 4),
        (1, 14336): (16, 128, 128, 4, 4), (1, 28672): (16, 128, 128, 4, 4),
        (4, 5504): (16, 64, 128, 4, 4), (4, 8192): (16, 64, 128, 4, 4), (4, 11008): (64, 128, 64, 4, 4),
        (4, 14336): (16, 128, 128, 4, 4), (4, 28672): (64, 128, 64, 4, 4),
        (16, 5504): (16, 64, 128, 4, 4), (16, 8192): (16, 64, 128, 4, 4), (16, 11008): (64, 128, 64, 4, 4),
        (16, 14336): (64, 128, 64, 4, 4), (16, 28672): (64, 128, 64, 4, 4),
        (32, 5504): (16, 128, 128, 4, 4), (32, 8192): (64, 64, 64, 4, 4), (32, 11008): (64, 128, 64, 4, 4),
        (32, 14336): (64, 128, 64, 4, 4), (32, 28672): (64, 128, 64, 4, 4),
        (64, 5504): (64, 64, 64, 4, 4), (64, 8192): (64, 64, 64, 4, 4), (64, 11008): (64, 128, 64, 4, 4),
        (64, 14336): (64, 128, 64, 4, 4), (64, 28672): (64, 128, 64, 4, 4),
        (128, 5504): (64, 128, 64, 4, 4), (128, 8192): (128, 64, 64, 8, 4), (128, 11008): (128, 128, 32, 8, 5),
        (128, 14336): (128, 128, 64, 8, 3), (128, 28672): (128, 128, 64, 8, 3),
    },
)  # fmt: skip


_swiglu_autotuned = triton.autotune(
    configs=CONFIGS + DECODE_CONFIGS,
    key=["M", "N", "K", "stride_wk"],
    prune_configs_by={"early_config_prune": prune_configs},
)(_swiglu_tiled_kernel)

WEIGHT_LAYOUT = "kn"


def weights_in_layout(w_gate: torch.Tensor, w_up: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Wg, Wu)`` as [K, N] views whose storage is ``layout``: "kn" as given (made contiguous), "nk" a
    transposed copy (stored [N, K]) made on this call."""
    if layout == "kn":
        return w_gate.contiguous(), w_up.contiguous()
    return w_gate.t().contiguous().t(), w_up.t().contiguous().t()


def launch_tuned(
    x2d: torch.Tensor,
    wg: torch.Tensor,
    wu: torch.Tensor,
    y: torch.Tensor,
    config: triton.Config | None = None,
    autotune: bool = False,
) -> tuple[dict, dict]:
    """``y = silu(x2d @ wg) * (x2d @ wu)`` by the tiled kernel with ``config``; without one, with the
    pinned tiles of this shape's class (``DECODE_TILES``: up to 128 rows, 16-bit inputs), else (or with
    ``autotune``) the autotuner's pick. Returns the (meta-parameters, launch options) it ran with."""
    m, k = x2d.shape
    n = wg.shape[1]
    if config is None and not autotune:
        config = DECODE_TILES.config(m, n, x2d.element_size())
    return launching.launch_autotuned(
        _swiglu_autotuned,
        lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),),
        x2d,
        wg,
        wu,
        y,
        m,
        n,
        k,
        x2d.stride(0),
        x2d.stride(1),
        wg.stride(0),
        wg.stride(1),
        IEEE=ieee(x2d),
        ALIGNED=tiles.promise_aligned(x2d, wg),
        interpreter_config=INTERPRETER_CONFIG,
        config=config,
    )


def best_config() -> triton.Config | None:
    """The config the autotuner chose for the last shape it tuned (None before the first call)."""
    return getattr(_swiglu_autotuned, "best_config", None)


def use_interleaved(x2d: torch.Tensor, y: torch.Tensor) -> bool:
    """The interleaved TMA kernel serves these rows: 1000+ rows (any under the interpreter) of TMA-ready x, y."""
    return (x2d.shape[0] >= TMA_MIN_ROWS or launching.interpreting()) and launching.tma_ready(x2d, y)


def cublas_products(m: int, n: int) -> bool:
    """Whether ``m`` rows with ``n`` output columns take cuBLAS's products then silu_mul (see CUBLAS_MIN_ROWS)."""
    return CUBLAS_MIN_ROWS <= m < TMA_MIN_ROWS and n <= CUBLAS_MAX_COLS


def ragged_products(x2d: torch.Tensor, wg: torch.Tensor) -> bool:
    """Whether the rows of ``x2d`` times ``wg`` (as the tiled kernel reads it) take cuBLAS's products then
    silu_mul instead of the tiled kernel: a ragged-8 shape from RAGGED_CUBLAS_MIN_ROWS rows, in the dtypes
    measured (bf16, fp16)."""
    return (
        x2d.shape[0] >= RAGGED_CUBLAS_MIN_ROWS
        and x2d.dtype in (torch.bfloat16, torch.float16)
        and tiles.promise_aligned(x2d, wg)
    )


def raced_route(x2d: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, interleaved: bool) -> str | None:
    """``"cublas"`` or ``"tiled"`` where a race decides these rows (16-bit, from RACE_MIN_ROWS rows: to
    TMA_MIN_ROWS - 1 where the ``interleaved`` weights' kernel takes the rows above, with no upper bound on the
    weights as given; timed on the first call of the shape class, :mod:`kprof.kernels.lib.routes`), else None:
    the static rules apply (CPU, interpreter, graph capture, ``KPROF_ROUTE_RACE=0``, other rows or dtypes)."""
    m, k = x2d.shape
    ff = w_gate.shape[1]
    if m < RACE_MIN_ROWS or (interleaved and m >= TMA_MIN_ROWS) or x2d.dtype not in (torch.bfloat16, torch.float16):
        return None

    def tiled() -> None:
        wg, wu = weights_in_layout(w_gate, w_up, WEIGHT_LAYOUT)
        launch_tuned(x2d, wg, wu, torch.empty((m, ff), dtype=x2d.dtype, device=x2d.device))

    def static() -> str:  # what the rules would run (asked only when the class is raced)
        wg, _ = weights_in_layout(w_gate, w_up, WEIGHT_LAYOUT)
        return "cublas" if cublas_products(m, ff) or ragged_products(x2d, wg) else "tiled"

    key = (m, k, ff, x2d.dtype, x2d.device.index, x2d.stride(0), w_gate.stride(), w_up.stride())
    run = {"tiled": tiled, "cublas": lambda: products_then_silu_mul(x2d, w_gate, w_up)}
    return _mid_rows.choose(key, run, static, x2d)


def interleaved_route(x2d: torch.Tensor, w_int: torch.Tensor, y: torch.Tensor) -> str:
    """``"interleaved"`` (the TMA kernel) or ``"cublas_pairs"`` for rows the interleaved weights ``w_int`` serve
    (16-bit): raced on the first call of a shape class (where :func:`routes.can_race`) whose kernel tiles make one wave
    under PAIRS_MAX_FILL full (on a GPU; the pairs unless the kernel is UNDERFILLED_KEEP_PAIRS faster, or where no race
    runs) or whose output width is not a multiple of 16 (the kernel where no race runs); else the kernel."""
    m, k = x2d.shape
    ff = y.shape[1]
    if x2d.dtype not in (torch.bfloat16, torch.float16):
        return "interleaved"
    underfilled = underfilled_on(x2d, ff)
    if not underfilled and ff % 16 == 0:
        return "interleaved"
    static = "cublas_pairs" if underfilled else "interleaved"
    key = (m, k, ff, x2d.dtype, x2d.device.index, x2d.stride(0))
    run = {
        "interleaved": lambda: launch_interleaved(x2d, w_int, y),
        "cublas_pairs": lambda: interleaved_product_then_silu(x2d, w_int, y),
    }
    race = _underfilled if underfilled else _interleaved_ragged
    return race.choose(key, run, static, x2d) or static


def interleavable(w: torch.Tensor) -> bool:
    """The interleaved kernel may run on weights like ``w``: 16-bit on a Hopper GPU, or on the CPU under the
    interpreter (what ``ops.PreparedSwiGLU`` makes its interleaved copy for)."""
    return (
        isinstance(w, torch.Tensor)
        and w.dtype in (torch.bfloat16, torch.float16)
        and (launching.hopper_or_later(w) or (w.device.type == "cpu" and launching.interpreting()))
    )


def interleaved_choice(
    x2d: torch.Tensor, w_int: Callable[[], torch.Tensor] | torch.Tensor | None, y: torch.Tensor, raced: str | None
) -> tuple[str, torch.Tensor | None]:
    """Past the two cuBLAS products (``cublas_products``, the raced route): (``interleaved`` for the interleaved TMA
    kernel, ``cublas_pairs`` for one cuBLAS product of the interleaved weights, or ``pointer`` for the pointer
    kernels; the interleaved weights where the first two use them) for checked rows ``x2d`` and the output ``y``."""
    if raced is None and w_int is not None and use_interleaved(x2d, y):
        wi = w_int() if callable(w_int) else w_int
        if launching.tma_ready(wi):
            return ("cublas_pairs" if interleaved_route(x2d, wi, y) == "cublas_pairs" else "interleaved"), wi
    return "pointer", None


def swiglu_with(
    x: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_int: Callable[[], torch.Tensor] | torch.Tensor | None,
    taken: list[str] | None = None,
) -> torch.Tensor:
    """The tuned version's launch choice; ``w_int`` is the interleaved weight pair (or how to make it; None:
    the pointer kernel only). ``taken``: the route is appended to it (``cublas``, ``cublas_pairs``,
    ``interleaved`` or ``pointer``: :func:`interleaved_choice`)."""
    x2d, ff = check_inputs(x, w_gate, w_up)
    raced = raced_route(x2d, w_gate, w_up, interleaved=w_int is not None)
    if raced == "cublas" or (raced is None and cublas_products(x2d.shape[0], ff)):
        if taken is not None:
            taken.append("cublas")
        return products_then_silu_mul(x2d, w_gate, w_up).view(*x.shape[:-1], ff)
    y = torch.empty((x2d.shape[0], ff), dtype=x.dtype, device=x.device)
    route, wi = interleaved_choice(x2d, w_int, y, raced)
    if taken is not None:
        taken.append(route)
    if route != "pointer":
        if route == "cublas_pairs":
            interleaved_product_then_silu(x2d, wi, y)
        else:
            launch_interleaved(x2d, wi, y)
        return y.view(*x.shape[:-1], ff)
    wg, wu = weights_in_layout(w_gate, w_up, WEIGHT_LAYOUT)
    if raced is None and ragged_products(x2d, wg):
        return products_then_silu_mul(x2d, w_gate, w_up).view(*x.shape[:-1], ff)
    config = split_k.ops_config(x2d, ff)
    if config is not None:
        split_k.launch_split_k(x2d, wg, wu, y, config)
    else:
        launch_tuned(x2d, wg, wu, y)
    return y.view(*x.shape[:-1], ff)


@FAMILY.provider(
    "triton_tuned",
    kind="triton",
    description="from 1000 rows: gate and up weights interleaved (copied on every call, counted in its time), one "
    "product of twice the width with TMA tiles (persistent but at K 8192+ with many waves, the last partial wave in "
    "smaller tiles; tiles of 192 rows where they fill one wave of SMs; where the wave is underfilled, or the width is "
    "not a multiple of 16, raced against cuBLAS's product of the interleaved pair then a pass over the pairs); "
    "65-999 rows: raced on the shape's first call, the tiled kernel or cuBLAS's two products, "
    "then kprof's silu_mul kernel (where no race runs: 512-999 rows of up to 5504 columns and ragged-8 shapes "
    "from 512 rows take cuBLAS's); "
    "else the tiled product (tiles pinned per class up to 128 rows, autotuned above), grouped program order",
)
def swiglu_tuned(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    return swiglu_with(x, w_gate, w_up, lambda: interleaved_weights(w_gate, w_up))


# the interleaved pair of the harness's versions on prepared weights (``triton_tuned_prepared``, and
# ``op_plan``'s ``triton_prepared_op`` where the ops object keeps one), made once per input set before the timed calls
prepared_interleaved = launching.SameTensorsMemo()


@FAMILY.provider(
    "triton_tuned_prepared",
    kind="triton",
    description="triton_tuned on prepared weights: the interleaved copy is made once per input set, before the timed "
    "calls (kernel time only), launched as ops.PreparedSwiGLU launches it (16-bit weights on Hopper: a plan per "
    "signature after its first call), with the inputs checked on every call, which the ops object does only on a "
    "signature's first",
)
def swiglu_tuned_prepared(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    if not interleavable(w_gate):
        return swiglu_with(x, w_gate, w_up, lambda: prepared_interleaved.get(interleaved_weights, w_gate, w_up))
    from kprof.kernels.swiglu import op_plan  # imports this module

    check_inputs(x, w_gate, w_up)  # before the interleaved copy: bad weights say what is wrong
    return op_plan.swiglu_prepared(x, w_gate, w_up, prepared_interleaved.get(interleaved_weights, w_gate, w_up))


@FAMILY.provider(
    "triton_tuned_pointer",
    kind="triton",
    description="no derived weight copy: the tiled product on the weights as given (tiles pinned per class up to "
    "128 rows, autotuned above), or cuBLAS's products then silu_mul where triton_tuned takes them and at "
    "ragged-8 shapes from 512 rows: what ops.swiglu runs, and on a GPU launched as it launches it",
)
def swiglu_tuned_pointer(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    if getattr(x, "is_cuda", False):
        # the op's launch (the same routes on a signature's first call, then its plan), so the host time a profile
        # measures for this version is the op's: through the checks and the JIT on every call 67.8-134.5 us a call
        # at 1-128 x 4096 x 11008 bf16 on an H200 (host-bound), launched as the op 15.7-27.1, under the GPU's 42-47
        # (benchmarks/results/grid/rmsnorm_linear-op-launch-c165dc9/)
        from kprof.kernels.swiglu import op_plan  # imports this module

        return op_plan.swiglu(x, w_gate, w_up)
    return swiglu_with(x, w_gate, w_up, None)


# Public handles for op_plan (the ops API's launch plans): the kernels keep their `_` names,
# which are the names profilers record for every launch.
autotuned_kernel = _swiglu_autotuned
tiled_kernel = _swiglu_tiled_kernel
interleaved_kernel = _swiglu_interleaved_kernel
