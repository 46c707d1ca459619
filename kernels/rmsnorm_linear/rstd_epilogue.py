"""Row statistics first, then one product that applies them: a small kernel reads x once and writes
each row's ``rstd = rsqrt(mean(x²) + eps)`` (4 bytes per row), and the autotuned product multiplies the
raw x by ``W' = diag(g) W`` and scales its rows by rstd in the epilogue. ``triton_rstd_epilogue`` folds
W' on every call (its time includes the fold); ``triton_rstd_epilogue_prepared`` measures the kernels on
W' folded before the timed calls, as a model holding :class:`kprof.kernels.ops.PreparedRMSNormLinear`
runs them.

This is the algebra of fusing the norm into the product without its trap: ``triton_fused`` recomputes the sum of
squares in
every program of a row tile (N / BLOCK_N times per row, 32 times at N = 4096 with 128-wide tiles) and
measured 1.75x cuBLAS's ``x @ W`` at 2048x4096x4096 on an H100; ``triton_two_kernels`` writes and rereads
a normalised copy of x (2 x 16 MB there). Here the extra traffic is one read of x and M floats.

Where x, W' and y can be addressed by TMA descriptors (16-bit, 16-byte aligned rows, Hopper) and there
are enough rows to fill the machine, the product is a persistent kernel (one program per SM walking the
tiles in grouped order) that moves its tiles with the Tensor Memory Accelerator. On an H100 (Triton 3.6,
bf16, ``benchmarks/results/matmul-tma/``) that took the whole op from 431.8 to
398.8 us at 8192x4096x4096 (cuBLAS's ``x @ W`` alone: 381.7, 1.045x) and from 115.1 to 108.3 us at 2048
rows (cuBLAS 94.3); at 1000x1000x3000, where the pointer kernel cannot use 16-byte copies, from 66.5 to
25.3 us (cuBLAS 16.2). Summing the squares from the x tiles inside that loop instead of the rstd kernel was
slower with every tile shape (468.6 us at best) and wrong with 128x256 tiles when not persistent.

On Hopper the two kernels overlap by programmatic dependent launch (``launching.pdl_ready``; ``KPROF_PDL=0``
turns it off): the rstd kernel lets the product start at once, the product's K loops need only x and W',
and it waits for the rstd kernel just before its first epilogue reads rstd. The rstd kernel then runs a
few looping programs (``overlapped_rstd_grid``) with an all-shared-memory carveout, so a product program
fits on every SM beside them. On H100s (``benchmarks/results/rmsnorm-linear-pdl/``) that
took 2048x4096x4096 from 107.7-108.5 to 99.3-101.0 us (cuBLAS 93.5-95.7: 1.045-1.062x over five machines)
and 8192 rows from 402-408 to 386-388 us (0.995x cuBLAS); 8 rows from 25.6-27.0 to 23.2 us.

At K 2048 a tile's K loop is short, so what it pays outside the loop shows (``benchmarks/results/short-k/``): the
product stores its output tiles in halves, which leaves room for a 4th pipeline stage, and does the tiles of its
last, partial wave in halves or quarters, as swiglu's kernel does (``tma_tiles``, ``TMA_TAIL_SPLITS``). With both,
1.03x cuBLAS's ``x @ W`` holds at 18 and 16 of the 20 and 18 prefill points a grid could judge (bf16, fp16); at
N 5504 and K 2048 the op is 1.04-1.06x. Where the last wave holds more than half the SMs (N 5504: 88 tiles for 132,
2.67 waves run as 3), its tiles' K steps can be shared out over every SM (``_stream_k_tail``); that pays where it
saves an SM more steps than its parts cost to meet (``STREAM_K_MIN_SAVED_STEPS``; K 8192 at N 5504 and 28672), with
its registers capped so that it still fits on an SM beside the rstd kernel it overlaps (``STREAM_K_MAX_REGISTERS``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching, split_k
from kprof.kernels.lib.checks import dense_vector
from kprof.kernels.lib.tiles import (
    TilePlan,
    dot_acc,
    grouped_tile,
    persistent_sms,
    store_tile,
    stream_k_parts,
    tail_part,
    tail_split,
    tile_descriptors,
)
from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.rmsnorm_linear.fused import folded_weight, launch_product, prepared_fold


@triton.jit
def _row_rstd_kernel(
    # pointers
    x_ptr,  # [M, K] rows
    r_ptr,  # [M] fp32 output: rsqrt(mean of squares + eps) per row
    # sizes and strides
    M,
    K,
    stride_xm,
    stride_xk,
    # parameters
    eps,
    # meta-parameters
    ROWS: tl.constexpr,  # rows per block; program p takes blocks p, p + programs, ...
    BLOCK_K: tl.constexpr,  # columns per loop step
    PDL: tl.constexpr,  # the product is launched as this kernel's dependent: let it start at once
):
    launching.launch_dependents(PDL)
    cols = tl.arange(0, BLOCK_K)
    for first in range(tl.program_id(0) * ROWS, M, tl.num_programs(0) * ROWS):
        rows = first + tl.arange(0, ROWS)
        row_ok = rows < M
        base = x_ptr + rows[:, None].to(tl.int64) * stride_xm
        acc = tl.zeros([ROWS, BLOCK_K], dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            c = k * BLOCK_K + cols
            x = tl.load(base + c[None, :] * stride_xk, mask=row_ok[:, None] & (c < K)[None, :], other=0.0)
            x = x.to(tl.float32)
            acc += x * x
        tl.store(r_ptr + rows, tl.rsqrt(tl.sum(acc, axis=1) / K + eps), mask=row_ok)


@triton.jit
def _scaled_tile(
    x_desc,
    w_desc,
    y_desc,
    r_ptr,
    b_ptr,
    off_m,
    off_n,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    SUBTILE: tl.constexpr,
    IEEE: tl.constexpr,
    PDL: tl.constexpr,
):
    """One output tile at (off_m, off_n): the product, its rows scaled by rstd, the bias added."""
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for ks in range(tl.cdiv(K, BLOCK_K)):  # out-of-range rows/columns of the last tiles load as zeros
        a = x_desc.load([off_m, ks * BLOCK_K])
        b = w_desc.load([ks * BLOCK_K, off_n])
        acc = dot_acc(a, b, acc, IEEE)
    _scale_and_store(acc, y_desc, r_ptr, b_ptr, off_m, off_n, M, N, BLOCK_M, BLOCK_N, HAS_BIAS, SUBTILE, PDL)


@triton.jit
def _scale_and_store(
    acc,
    y_desc,
    r_ptr,
    b_ptr,
    off_m,
    off_n,
    M,
    N,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    SUBTILE: tl.constexpr,
    PDL: tl.constexpr,
):
    """The epilogue of a tile's product ``acc``: its rows scaled by rstd, the bias added, stored."""
    rows = off_m + tl.arange(0, BLOCK_M)
    launching.wait_for_primary(PDL)  # the K loop before may have overlapped the rstd kernel; r_ptr may not
    acc = acc * tl.load(r_ptr + rows, mask=rows < M, other=0.0)[:, None]
    if HAS_BIAS:
        cols = off_n + tl.arange(0, BLOCK_N)
        acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    store_tile(y_desc, acc, off_m, off_n, BLOCK_M, BLOCK_N, SUBTILE)  # the store clips the last tiles


@triton.jit
def _stream_k_tail(
    x_desc,
    w_desc,
    y_desc,
    r_ptr,
    b_ptr,
    ws_ptr,
    count_ptr,
    whole,
    tiles,
    M,
    N,
    K,
    PARTS,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PROGRAMS: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    SUBTILE: tl.constexpr,
    IEEE: tl.constexpr,
    PDL: tl.constexpr,
):
    """The last, partial wave's tiles (from tile ``whole`` on) shared out along K: their K steps, tile after tile,
    cut into PROGRAMS runs as equal as whole steps allow, a run a program. A tile's programs each store their fp32
    part in the tile's slots of ``ws_ptr`` (slot = program - the tile's first program) and take a ticket; the one
    that draws the last adds the parts in slot order (so the result does not depend on which finished last), scales,
    stores and puts the counter back to zero (``split_k``'s meeting). Every SM then works through the last wave
    for (its tiles / PROGRAMS) of a tile's time, where whole tiles leave the SMs past them idle for a whole one."""
    steps = tl.cdiv(K, BLOCK_K)
    total = (tiles - whole) * steps
    pid = tl.program_id(0)
    at = pid * total // PROGRAMS
    end = (pid + 1) * total // PROGRAMS
    while at < end:
        t, k_hi, off_m, off_n, first, last, acc = _stream_k_piece(
            x_desc, w_desc, at, end, steps, total, whole, M, N, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, PROGRAMS, IEEE
        )
        if first == last:
            _scale_and_store(acc, y_desc, r_ptr, b_ptr, off_m, off_n, M, N, BLOCK_M, BLOCK_N, HAS_BIAS, SUBTILE, PDL)
        else:
            tile_ws = ws_ptr + (t * PARTS).to(tl.int64) * (BLOCK_M * BLOCK_N)
            local = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
            tl.store(tile_ws + (pid - first) * (BLOCK_M * BLOCK_N) + local, acc)
            if split_k.take_ticket(count_ptr, t) == last - first:
                _sum_parts_and_store(
                    tile_ws, last - first + 1, y_desc, r_ptr, b_ptr, off_m, off_n, M, N,
                    BLOCK_M, BLOCK_N, HAS_BIAS, SUBTILE, PDL,
                )  # fmt: skip
                split_k.release(count_ptr, t)
        at = t * steps + k_hi


@triton.jit
def _stream_k_piece(
    x_desc,
    w_desc,
    at,
    end,
    steps,
    total,
    whole,
    M,
    N,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PROGRAMS: tl.constexpr,
    IEEE: tl.constexpr,
):
    """The piece of this program's run [at, end) of the last wave's K steps that starts at step ``at``: (its tile of
    the last wave, the K step it ends at, the tile's row and column offsets, the programs whose runs hold the tile's
    first and last steps, the piece's fp32 product). Run p starts at step p * total // PROGRAMS."""
    t = at // steps
    k_lo = at - t * steps
    k_hi = tl.minimum(end - t * steps, steps)
    pid_m, pid_n = grouped_tile(whole + t, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for ks in range(k_lo, k_hi):
        a = x_desc.load([off_m, ks * BLOCK_K])
        b = w_desc.load([ks * BLOCK_K, off_n])
        acc = dot_acc(a, b, acc, IEEE)
    first = ((t * steps + 1) * PROGRAMS - 1) // total
    last = ((t * steps + steps) * PROGRAMS - 1) // total
    return t, k_hi, off_m, off_n, first, last, acc


@triton.jit
def _sum_parts_and_store(
    tile_ws,
    parts,
    y_desc,
    r_ptr,
    b_ptr,
    off_m,
    off_n,
    M,
    N,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    SUBTILE: tl.constexpr,
    PDL: tl.constexpr,
):
    """A shared tile's ``parts`` fp32 parts (slots BLOCK_M x BLOCK_N apart) added in slot order, scaled, stored.
    With SUBTILE in column halves, the y descriptor's block: the sum and the part being added then hold 64 fp32
    registers a thread each with 8 warps, where a whole 128x256 tile would take 128 each and spill. ``.cg``: the
    parts from L2, never a stale L1 line."""
    HALVES: tl.constexpr = 2 if SUBTILE else 1
    WIDTH: tl.constexpr = BLOCK_N // HALVES
    rows = off_m + tl.arange(0, BLOCK_M)
    launching.wait_for_primary(PDL)
    scale = tl.load(r_ptr + rows, mask=rows < M, other=0.0)
    local = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, WIDTH)[None, :]
    for h in tl.static_range(HALVES):
        total = tl.zeros([BLOCK_M, WIDTH], dtype=tl.float32)
        for j in range(0, parts):
            total += tl.load(tile_ws + j * (BLOCK_M * BLOCK_N) + h * WIDTH + local, cache_modifier=".cg")
        total = total * scale[:, None]
        if HAS_BIAS:
            cols = off_n + h * WIDTH + tl.arange(0, WIDTH)
            total += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
        y_desc.store([off_m, off_n + h * WIDTH], total.to(y_desc.dtype))


@triton.jit
def _tma_product_kernel(
    # TMA descriptors (block shapes set by the launcher)
    x_desc,  # x [M, K], blocks [BLOCK_M, BLOCK_K]
    w_desc,  # W' = diag(g) W [K, N], blocks [BLOCK_K, BLOCK_N]
    y_desc,  # y [M, N], blocks [BLOCK_M, BLOCK_N] (half as wide with SUBTILE)
    x_tail,  # the same three for the last wave's part tiles (TAIL_SPLIT): x blocks [BLOCK_M / 2, BLOCK_K],
    w_tail,  # W' blocks [BLOCK_K, TN], y blocks [BLOCK_M / 2, TN], with TN = BLOCK_N for halves,
    y_tail,  # BLOCK_N / 2 for quarters
    # pointers
    r_ptr,  # [M] fp32 rstd per row
    b_ptr,  # [N] bias (unused unless HAS_BIAS)
    ws_ptr,  # fp32 parts of the last wave's tiles shared along K: PARTS slots of BLOCK_M x BLOCK_N a tile (STREAM_K)
    count_ptr,  # int32 ticket counters, one per last-wave tile, zero between calls (STREAM_K)
    # sizes
    M,
    N,
    K,
    PARTS,  # slots a last-wave tile has in ws_ptr: the most programs that can share one (STREAM_K)
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # row tiles per column tile in tile order (weight tiles reused from L2)
    PROGRAMS: tl.constexpr,  # the grid: min(SMs, tiles); each program takes every PROGRAMS-th tile
    HAS_BIAS: tl.constexpr,
    SUBTILE: tl.constexpr,  # store output tiles in two halves (room for a 4th stage)
    TAIL_SPLIT: tl.constexpr,  # 0, or the tiles of the last, partial wave done as 2 halves / 4 quarters
    IEEE: tl.constexpr,  # the interpreter, whose bf16 dot is wrong: fp32 products there
    PDL: tl.constexpr,  # launched as the rstd kernel's dependent: wait for it before reading r_ptr
    STREAM_K: tl.constexpr,  # the last, partial wave's tiles shared out along K (_stream_k_tail; TAIL_SPLIT 0)
):
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    whole = (tiles // PROGRAMS) * PROGRAMS if (TAIL_SPLIT or STREAM_K) else tiles
    # flatten: the compiler pipelines the next tile's first loads under this tile's epilogue
    for tile in tl.range(tl.program_id(0), whole, PROGRAMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        _scaled_tile(
            x_desc,
            w_desc,
            y_desc,
            r_ptr,
            b_ptr,
            pid_m * BLOCK_M,
            pid_n * BLOCK_N,
            M,
            N,
            K,
            BLOCK_M,
            BLOCK_N,
            BLOCK_K,
            HAS_BIAS,
            SUBTILE,
            IEEE,
            PDL,
        )
    if TAIL_SPLIT:
        # as swiglu's interleaved kernel does (kprof.kernels.lib.tiles.tail_split): the last wave's tiles in parts
        for unit in tl.range(tl.program_id(0), (tiles - whole) * TAIL_SPLIT, PROGRAMS):
            off_m, off_n = tail_part(unit, whole, M, N, BLOCK_M, BLOCK_N, GROUP_M, TAIL_SPLIT)
            _scaled_tile(
                x_tail,
                w_tail,
                y_tail,
                r_ptr,
                b_ptr,
                off_m,
                off_n,
                M,
                N,
                K,
                BLOCK_M // 2,
                BLOCK_N // (TAIL_SPLIT // 2),
                BLOCK_K,
                HAS_BIAS,
                False,
                IEEE,
                PDL,
            )

    if STREAM_K:
        _stream_k_tail(
            x_desc, w_desc, y_desc, r_ptr, b_ptr, ws_ptr, count_ptr, whole, tiles, M, N, K, PARTS,
            BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, PROGRAMS, HAS_BIAS, SUBTILE, IEEE, PDL,
        )  # fmt: skip


# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages): 128x256x64 tiles were the fastest of 7 tile shapes, plain
# and persistent, at 2048 and 8192 rows on an H100. With the output tile stored whole, 4 stages need 256 KB of
# shared memory (refused); stored in two halves (TMA_SUBTILE), they need 224 KB and fit. At K 2048, with cold
# calls at full SM clock (benchmarks/results/short-k/, bf16, one H100), halves, 4 stages and GROUP_M 16 took
# the op (rstd kernel and product) from 1.044-1.104x cuBLAS's x @ W to 1.017-1.079x at 5 prefill points
# (8192x2048x11008: 498.7 against 510.3 us, x @ W 488.8), ahead of halves with 3 stages, or with GROUP_M 8.
TMA_CONFIG = (128, 256, 64, 16, 8, 4)
TMA_SUBTILE = True
# From K 8192 with over 32 waves of tiles, the tiles before those (whole, 3 stages, GROUP_M 8), as swiglu's
# kernel keeps one tile per program there: at 8192x8192x28672 fp16 (54 waves) they took 1.000x cuBLAS against
# 1.023x; at 10.7 waves (8192x8192x5504) the two were within 0.3% in bf16 and fp16 (short-k/).
LONG_K_CONFIG = (128, 256, 64, 8, 8, 3)
LONG_K_SUBTILE = False
LONG_K_MIN_K = 8192
LONG_K_MIN_WAVES = 32
# The last, partial wave of tiles in halves or quarters (``tail_split``), as swiglu's kernel does. On an H100
# (benchmarks/results/short-k/races-b277249/) the op took 0.965x cuBLAS's x @ W against 1.049x with whole tiles
# at 2048x4096x11008 bf16 (688 tiles, a last wave of 28: quarters), 0.983 against 1.060 at 2048x8192x11008, and
# 1.002-1.019 against 1.024-1.048 at 8192x2048/4096x14336, in both dtypes; at 2048x2048x11008 fp16 it read 1.100
# against 1.076, on a machine whose rounds at 2048x2048 moved by up to 13%.
TMA_TAIL_SPLITS = True
# Where the last wave holds more than half the SMs (tail_split leaves it whole), its tiles shared out along K
# (_stream_k_tail), in runs of at least STREAM_K_MIN_STEPS BLOCK_K steps, where that saves an SM at least
# STREAM_K_MIN_SAVED_STEPS of a whole tile's steps. On H200s (benchmarks/results/stream-k-tail/, products alone,
# bf16 / fp16) it took 2048x8192x5504 from 255.2 / 261.2 to 246.8 / 254.8 us (43 steps saved), and cost 0.1-1.6%
# where it saved 22 steps (2048x4096x5504, 8192x4096x5504), 2-11% where it saved 5-14. What it costs whatever K:
# 8.0-9.3 us for the meeting (the parts' 128 KB stores and tickets, the last program's reading of them), and the
# runs' own pipeline fills and epilogues (without any meeting it saved 0.5-1.2 us at K 2048, a third of a tile ~8).
# Its registers are capped at STREAM_K_MAX_REGISTERS a thread, what the whole-tile product takes (171-176 on Triton
# 3.6), so that the rstd kernel's two 8-warp programs an SM (overlapped_rstd_grid, past 2048 rows; 32 registers a
# thread) still fit beside one product program: uncapped, the product with a bias took 208 (53248 of an SM's 65536
# registers, room for one of them), and the op's kernels ran one after the other. On an H200 with a bias at
# 8192x8192x5504 (benchmarks/results/stream-k-tail/registers-7b98ac8/) the op took 1.076-1.078x cuBLAS uncapped and
# 0.976x (bf16) / 0.981x (fp16) capped at 176, with no spill; the product alone was not slower capped (972.9-974.9
# against 976.6 us fp16), nor at 2048 rows (243.3 against 243.4 us bf16). Compiled offline for sm_90 by Triton 3.9,
# the capped product keeps 40 (no bias) to 72 (bias) bytes a thread on the stack: not measured on a GPU.
TMA_STREAM_K = True
STREAM_K_MIN_STEPS = 4
STREAM_K_MIN_SAVED_STEPS = 32
STREAM_K_MAX_REGISTERS = 176
TMA_INTERPRETER_CONFIG = (16, 32, 32, 2, 4, 2)
# 1000+ rows: at 1000x1000x3000 the op took 25.3 us with descriptors against 66.5 (cuBLAS 16.2); at 512 and
# 128 rows the pointer product's smaller tiles won (128x256 tiles: 52.3 against 39.3 us at 512 rows)
TMA_MIN_ROWS = 1000


def tma_tiles(m: int, n: int, k: int, sms: int) -> tuple[tuple[int, ...], bool]:
    """(tiles, output stored in halves) of the TMA product at [m, k] x [k, n] on ``sms`` SMs."""
    waves = triton.cdiv(m, TMA_CONFIG[0]) * triton.cdiv(n, TMA_CONFIG[1]) / sms
    if k >= LONG_K_MIN_K and waves > LONG_K_MIN_WAVES:
        return LONG_K_CONFIG, LONG_K_SUBTILE
    return TMA_CONFIG, TMA_SUBTILE


def tma_product(
    x2d: torch.Tensor,
    wf: torch.Tensor,
    b: torch.Tensor | None,
    y: torch.Tensor,
    rstd: torch.Tensor,
    *,
    pdl: bool = False,
    tail: bool | None = None,
    stream_k: bool | None = None,
) -> None:
    """``y = (x2d @ wf) * rstd[:, None] (+ b)`` by the persistent TMA kernel (``tma_ready`` operands).
    ``pdl``: launched as the dependent of the rstd kernel just before it (which must have been launched
    with ``pdl=True``). ``tail`` (default ``TMA_TAIL_SPLITS``): the last partial wave's tiles in parts;
    ``stream_k`` (default ``TMA_STREAM_K``): shared out along K where ``tail`` leaves them whole."""
    tma_launcher(x2d, wf, b, y, rstd, pdl=pdl, tail=tail, stream_k=stream_k)()


def tma_launcher(
    x2d: torch.Tensor,
    wf: torch.Tensor,
    b: torch.Tensor | None,
    y: torch.Tensor,
    rstd: torch.Tensor,
    *,
    pdl: bool = False,
    tail: bool | None = None,
    stream_k: bool | None = None,
    maxnreg: int | None = None,
) -> Callable[[], None]:
    """:func:`tma_product`'s launch, its tiles chosen and its descriptors made now: the op makes them before it
    launches the rstd kernel, so that only the launch itself stands between the two kernels (why: see
    :func:`tma_op`). ``maxnreg``: a cap on the product's registers a thread (experiments)."""
    (m, k), n = x2d.shape, wf.shape[1]
    plan = tma_plan(m, k, n, persistent_sms(x2d), tail, stream_k)
    descriptors = tile_descriptors(x2d, wf, y, plan.tiles, plan.subtile, plan.split)
    ws, counters = stream_k_buffers(x2d, plan, m, n, rstd)
    args = (*descriptors, rstd, b if b is not None else rstd, ws, counters, m, n, k, plan.parts)
    meta = tma_meta(plan, b is not None, pdl) | ({} if maxnreg is None else {"maxnreg": maxnreg})
    return lambda: _tma_product_kernel[(plan.programs,)](*args, **meta)


def stream_k_buffers(
    x2d: torch.Tensor, plan: TilePlan, m: int, n: int, unused: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fp32 workspace, ticket counters) of a launch whose last wave is shared out along K (``plan.parts``): a
    call's own workspace (its parts never outlive the launch), the stream's kept counters. ``unused`` twice where
    the plan keeps whole tiles (the kernel reads neither)."""
    if not plan.parts:
        return unused, unused
    bm, bn, _ = plan.tiles
    last = triton.cdiv(m, bm) * triton.cdiv(n, bn) % plan.programs
    workspace = x2d.new_empty((last * plan.parts * bm * bn,), dtype=torch.float32)
    return workspace, launching.ticket_counters(x2d, last)


def tma_meta(plan: TilePlan, has_bias: bool, pdl: bool) -> dict:
    """The TMA product's constexprs and launch options for ``plan`` (``tma_plan``)."""
    capped = {"maxnreg": STREAM_K_MAX_REGISTERS} if plan.parts and not launching.interpreting() else {}
    return plan.meta(HAS_BIAS=has_bias, PDL=pdl, STREAM_K=bool(plan.parts), **launching.pdl_launch(pdl), **capped)


def tma_plan(m: int, k: int, n: int, sms: int, tail: bool | None = None, stream_k: bool | None = None) -> TilePlan:
    """The TMA product's tiles, tail and grid for [m, k] x [k, n] on ``sms`` SMs (``tail`` and ``stream_k`` as
    :func:`tma_product`). The last wave is shared out along K only where the output is stored in halves (its
    parts are added in halves: a whole 128x256 fp32 tile and the part added to it would spill) or under the
    interpreter."""
    if launching.interpreting():
        (bm, bn, bk, gm, warps, stages), subtile = TMA_INTERPRETER_CONFIG, False
    else:
        (bm, bn, bk, gm, warps, stages), subtile = tma_tiles(m, n, k, sms)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    programs = min(sms, tiles)
    split = tail_split(tiles, programs) if (TMA_TAIL_SPLITS if tail is None else tail) else 0
    parts = 0
    shares = TMA_STREAM_K if stream_k is None else stream_k
    if shares and not split and (subtile or launching.interpreting()):
        saved = 0 if launching.interpreting() else STREAM_K_MIN_SAVED_STEPS  # the interpreter's tests share short K
        parts = stream_k_parts(tiles, programs, triton.cdiv(k, bk), STREAM_K_MIN_STEPS, saved)
    return TilePlan((bm, bn, bk), gm, warps, stages, subtile, split, programs, parts)


def use_tma(x2d: torch.Tensor, wf: torch.Tensor, y: torch.Tensor) -> bool:
    return (x2d.shape[0] >= TMA_MIN_ROWS or launching.interpreting()) and launching.tma_ready(x2d, wf, y)


ROWS = 4  # 4 rows x 1024 columns per step: 32 fp32 accumulators per thread with 4 warps
RSTD_BLOCK_K = 1024  # columns of a row block per step of the rstd kernel


def rows_per_program(m: int) -> int:
    """One row per program for few rows (decode: 8 rows would otherwise be 2 programs), else ROWS."""
    return 1 if m < 1024 else ROWS


def overlapped_rstd_grid(m: int, sms: int) -> tuple[int, int, int]:
    """(rows per block, programs, warps) of the rstd kernel when the product overlaps it (PDL). Few
    programs, each looping over row blocks, so one product program fits beside them on every SM and they
    take little of its issue slots; enough that x is read before the product's first epilogue waits for
    rstd. Measured on H100s (benchmarks/results/rmsnorm-linear-pdl/, calls 2, 3 and 5): one
    4-warp program per SM with 4-row blocks was within 0.3 us of the fastest at 2048 rows on three machines
    (99.8, 98.3, 99.6 us; cuBLAS 95.5, 93.9, 94.8); at 8192 rows two 8-warp programs per SM with 2-row
    blocks (387.6 us, cuBLAS 387.1; 4 warps: 394.0; one 4-warp program per SM with 4-row blocks: 451.0).
    Where the host launches the product late (a host-bound caller, a profiler's replay) such a grid runs
    alone, and took 28 us at 2048 rows in call 8's trace."""
    if m <= 2048:
        return rows_per_program(m), sms, 4
    return 2, 2 * sms, 8


def row_rstd_launch(m: int, k: int, sms: int, pdl: bool) -> tuple[int, dict]:
    """(programs, constexprs and launch options) of the rstd kernel over [m, k] rows on ``sms`` SMs; ``pdl``: the
    next kernel is launched with PDL, and the kernel runs ``overlapped_rstd_grid``."""
    if pdl:
        rows, programs, warps = overlapped_rstd_grid(m, sms)
    else:
        rows, programs, warps = rows_per_program(m), None, 4
    blocks = triton.cdiv(m, rows)
    meta = dict(ROWS=rows, BLOCK_K=min(RSTD_BLOCK_K, triton.next_power_of_2(k)), PDL=pdl, num_warps=warps)
    return min(blocks, programs or blocks), meta


def launch_row_rstd(x2d: torch.Tensor, rstd: torch.Tensor, eps: float, *, pdl: bool = False) -> None:
    """``rstd[i] = rsqrt(mean(x2d[i]**2) + eps)`` (fp32). ``pdl``: the next kernel is launched with PDL and
    may start as soon as every program of this one has started (``overlapped_rstd_grid``)."""
    m, k = x2d.shape
    programs, meta = row_rstd_launch(m, k, launching.sm_count(x2d) if pdl else 0, pdl)
    compiled = _row_rstd_kernel[(programs,)](x2d, rstd, m, k, x2d.stride(0), x2d.stride(1), float(eps), **meta)
    if pdl:
        # an SM whose L1/shared split was set for this kernel's few bytes of shared memory cannot take a
        # product program (128 KB) until it drains: without this the product never overlapped it (2048
        # rows: 108.1 us with PDL against 107.9 without; 99.8 with the carveout). Set once per compiled
        # kernel, after its first launch.
        launching.prefer_shared_memory(compiled)


def tma_op(
    x2d: torch.Tensor,
    wf: torch.Tensor,
    b: torch.Tensor | None,
    y: torch.Tensor,
    rstd: torch.Tensor,
    eps: float,
    *,
    pdl: bool,
    stream_k: bool | None = None,
    maxnreg: int | None = None,
) -> None:
    """The op's two kernels on the TMA route: the rstd kernel into ``rstd``, then :func:`tma_product` into ``y``
    (``stream_k``, ``maxnreg`` as :func:`tma_launcher`). The product's tiles and descriptors are made before the rstd
    kernel is launched: with PDL the product overlaps that kernel only if it is launched while the kernel runs (17-34
    us at 2048-8192 rows), so the host's work between the two launches is kept to the launch itself. Raced both ways
    at 14 prefill points on one H100 the orders were within 0.6% at 13 and 180.2 against 164.1 us at 2048x2048x14336
    bf16, but another H100 read 180.2 there with this order (benchmarks/results/short-k/, k-tail-15ac428 and
    rstd-grid-26712a6)."""
    product = tma_launcher(x2d, wf, b, y, rstd, pdl=pdl, stream_k=stream_k, maxnreg=maxnreg)
    launch_row_rstd(x2d, rstd, eps, pdl=pdl)
    product()


def rmsnorm_linear_folded(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float, wf: torch.Tensor
) -> torch.Tensor:
    """The op from ``wf = diag(g) w`` (the caller keeps it current; g and w are only checked)."""
    return folded_launches(x, g, w, b, eps, wf)[0]


def folded_launches(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float, wf: torch.Tensor
) -> tuple[torch.Tensor, tuple[dict, dict] | None]:
    """:func:`rmsnorm_linear_folded`'s output and, where it ran the pointer product (not the TMA kernel), the
    (meta-parameters, launch options) that product ran with: a launch plan repeats them (``op_plan``)."""
    x2d, n = check_inputs(x, g, w, b)
    m = x2d.shape[0]
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    pdl = launching.pdl_ready(x2d)
    if use_tma(x2d, wf, y):
        tma_op(x2d, wf, b, y, rstd, eps, pdl=pdl)
        return y.view(*x.shape[:-1], n), None
    launch_row_rstd(x2d, rstd, eps, pdl=pdl)
    launched = launch_product(x2d, wf, b, y, eps, norm=2, rstd=rstd, pdl=pdl)
    return y.view(*x.shape[:-1], n), launched


@FAMILY.provider(
    "triton_rstd_epilogue",
    kind="triton",
    description="row-statistics kernel (x read once, rstd [M] written), then one product of x with g folded into W "
    "(folded on every call, counted in its time) and rstd applied in its epilogue: persistent with TMA "
    "tiles where the operands allow (Hopper, 16-bit, aligned rows, 1000+ rows), else autotuned; on "
    "Hopper the product overlaps the statistics kernel (programmatic dependent launch)",
)
def rmsnorm_linear_rstd_epilogue(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    b = dense_vector(b)  # the kernels read the bias at unit stride
    check_inputs(x, g, w, b)  # before the fold: a bad g or w says what is wrong
    # fold before the rstd kernel: with PDL the product may start while the kernel before it runs, and it
    # reads W' at once (only rstd is waited for), so W' must come from earlier in the stream
    return rmsnorm_linear_folded(x, g, w, b, eps, folded_weight(g, w))


@FAMILY.provider(
    "triton_rstd_epilogue_prepared",
    kind="triton",
    description="triton_rstd_epilogue on prepared weights: g folded into W once per input set, before the timed calls "
    "(kernel time only), launched as ops.PreparedRMSNormLinear launches them (a plan per signature after its first "
    "call), with the inputs checked on every call, which the ops object does only on a signature's first",
)
def rmsnorm_linear_rstd_epilogue_prepared(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    b = dense_vector(b)  # the kernels read the bias at unit stride
    from kprof.kernels.rmsnorm_linear import op_plan  # imports this module

    check_inputs(x, g, w, b)  # before the fold: a bad g or w says what is wrong
    return op_plan.rms_norm_linear_prepared(x, g, w, prepared_fold.get(folded_weight, g, w), b, eps, "statistics")


# Public handles for experiments (benchmarks/ races them against variants); the kernels keep their `_` names,
# which are the names profilers record for every launch.
row_rstd_kernel = _row_rstd_kernel
tma_product_kernel = _tma_product_kernel
