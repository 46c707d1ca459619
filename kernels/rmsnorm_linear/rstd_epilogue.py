"""Row statistics first, then one product that applies them: a small kernel reads x once and writes
each row's ``rstd = rsqrt(mean(x²) + eps)`` (4 bytes per row), and the autotuned product multiplies the
raw x by ``W' = diag(g) W`` (folded once, cached) and scales its rows by rstd in the epilogue.

This is the algebra of seed 000 without its trap: ``triton_fused`` recomputes the sum of squares in
every program of a row tile (N / BLOCK_N times per row, 32 times at N = 4096 with 128-wide tiles) and
measured 1.75x cuBLAS's ``x @ W`` at 2048x4096x4096 on an H100; ``triton_two_kernels`` writes and rereads
a normalised copy of x (2 x 16 MB there). Here the extra traffic is one read of x and M floats.

Where x, W' and y can be addressed by TMA descriptors (16-bit, 16-byte aligned rows, Hopper) and there
are enough rows to fill the machine, the product is a persistent kernel (one program per SM walking the
tiles in grouped order) that moves its tiles with the Tensor Memory Accelerator. On an H100 (Triton 3.6,
bf16, ``benchmarks/results/2026-11-22-h100-rmsnorm-linear-tma/``) that took the whole op from 431.8 to
398.8 us at 8192x4096x4096 (cuBLAS's ``x @ W`` alone: 381.7, 1.045x) and from 115.1 to 108.3 us at 2048
rows (cuBLAS 94.3); at 1000x1000x3000, where the pointer kernel cannot use 16-byte copies, from 66.5 to
25.3 us (cuBLAS 16.2). Summing the squares from the x tiles inside that loop instead of the rstd kernel was
slower with every tile shape (468.6 us at best) and wrong with 128x256 tiles when not persistent.

Where the tiles make more than one wave and each SM's program has at most 16 rows to sum (about 1100 to
2100 rows on an H100), the product computes rstd itself instead: every program sums the squares of its
own rows during its first tile, the programs meet at a grid barrier (a cooperative launch guarantees they
are all resident), and only then apply rstd. At 2048x4096x4096 that took the op from 106.3 to 98.8 us
(1.048x cuBLAS's 94.3, ``benchmarks/results/2026-11-22-h100-matmul-ws/``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels import _common as common
from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.rmsnorm_linear.fused import folded_weight, launch_product


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
    ROWS: tl.constexpr,  # rows per program
    BLOCK_K: tl.constexpr,  # columns per loop step
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    cols = tl.arange(0, BLOCK_K)
    base = x_ptr + rows[:, None].to(tl.int64) * stride_xm
    acc = tl.zeros([ROWS, BLOCK_K], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        c = k * BLOCK_K + cols
        x = tl.load(base + c[None, :] * stride_xk, mask=row_ok[:, None] & (c < K)[None, :], other=0.0)
        x = x.to(tl.float32)
        acc += x * x
    tl.store(r_ptr + rows, tl.rsqrt(tl.sum(acc, axis=1) / K + eps), mask=row_ok)


@triton.jit
def _tile_epilogue(acc, y_desc, r_ptr, b_ptr, off_m, off_n, M, N,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr, SUBTILE: tl.constexpr):
    rows = off_m + tl.arange(0, BLOCK_M)
    # .cg: with STATS_IN the rstd values were written by other SMs during this launch; skip L1
    acc = acc * tl.load(r_ptr + rows, mask=rows < M, other=0.0, cache_modifier=".cg")[:, None]
    if HAS_BIAS:
        cols = off_n + tl.arange(0, BLOCK_N)
        acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    common.store_tile(y_desc, acc, off_m, off_n, BLOCK_M, BLOCK_N, SUBTILE)  # the store clips the last tiles


@triton.jit
def _mma(a, b, acc, IEEE: tl.constexpr):
    if IEEE:
        return acc + tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    return tl.dot(a, b, acc)


@triton.jit
def _tma_product_kernel(
    # TMA descriptors (block shapes set by the launcher)
    x_desc,  # x [M, K], blocks [BLOCK_M, BLOCK_K]
    w_desc,  # W' = diag(g) W [K, N], blocks [BLOCK_K, BLOCK_N]
    y_desc,  # y [M, N], blocks [BLOCK_M, BLOCK_N] (half as wide with SUBTILE)
    # pointers
    r_ptr,  # [M] fp32 rstd per row: read (written first by this kernel with STATS_IN)
    b_ptr,  # [N] bias (unused unless HAS_BIAS)
    x_ptr,  # x itself, for the row statistics (STATS_IN)
    bar_ptr,  # int32[2] grid-barrier state (STATS_IN)
    # sizes, strides, parameters
    M,
    N,
    K,
    stride_xm,
    eps,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # row tiles per column tile in tile order (weight tiles reused from L2)
    PROGRAMS: tl.constexpr,  # the grid: min(SMs, tiles); each program takes every PROGRAMS-th tile
    HAS_BIAS: tl.constexpr,
    SUBTILE: tl.constexpr,  # store output tiles in two halves (room for a 4th stage)
    STATS_IN: tl.constexpr,  # compute rstd here: each program its STATS_ROWS rows, then a grid barrier
    STATS_ROWS: tl.constexpr,  # power of two >= ceil(M / PROGRAMS)
    IEEE: tl.constexpr,  # the interpreter, whose bf16 dot is wrong: fp32 products there
):
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    pid = tl.program_id(0)
    first = pid
    if STATS_IN:
        # The first tile, peeled: at each K step the program also reads a BLOCK_K slice of its own
        # STATS_ROWS rows of x (plain loads; 16 rows x 64 columns at 2048 rows) and sums their squares.
        # Those rows are not its tile's rows, so every rstd is ready only once all programs have passed
        # the barrier before their first epilogue. This replaces the rstd kernel: at 2048x4096x4096 on an
        # H100 the op went from 106.3 to 98.8 us (cuBLAS x @ W 94.3); with 32 or more rows per program
        # (4096+ rows) the extra loads cost more than the kernel they replace (211.9 vs 200.4 us at 4096).
        pid_m, pid_n = common.grouped_tile(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        own = pid * STATS_ROWS + tl.arange(0, STATS_ROWS)
        own_ok = own < M
        cols = tl.arange(0, BLOCK_K)
        own_base = x_ptr + own[:, None].to(tl.int64) * stride_xm
        squares = tl.zeros([STATS_ROWS, BLOCK_K], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for ks in tl.range(k_steps):
            a = x_desc.load([pid_m * BLOCK_M, ks * BLOCK_K])
            b = w_desc.load([ks * BLOCK_K, pid_n * BLOCK_N])
            c = ks * BLOCK_K + cols
            xs = tl.load(own_base + c[None, :], mask=own_ok[:, None] & (c < K)[None, :], other=0.0).to(tl.float32)
            squares += xs * xs
            acc = _mma(a, b, acc, IEEE)
        tl.store(r_ptr + own, tl.rsqrt(tl.sum(squares, axis=1) / K + eps), mask=own_ok)
        common.grid_barrier(bar_ptr, PROGRAMS)
        _tile_epilogue(acc, y_desc, r_ptr, b_ptr, pid_m * BLOCK_M, pid_n * BLOCK_N, M, N,
                       BLOCK_M, BLOCK_N, HAS_BIAS, SUBTILE)
        first = pid + PROGRAMS
    # flatten: the compiler pipelines the next tile's first loads under this tile's epilogue
    for tile in tl.range(first, tiles, PROGRAMS, flatten=True):
        pid_m, pid_n = common.grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for ks in tl.range(k_steps):  # out-of-range rows/columns of the last tiles load as zeros
            a = x_desc.load([pid_m * BLOCK_M, ks * BLOCK_K])
            b = w_desc.load([ks * BLOCK_K, pid_n * BLOCK_N])
            acc = _mma(a, b, acc, IEEE)
        _tile_epilogue(acc, y_desc, r_ptr, b_ptr, pid_m * BLOCK_M, pid_n * BLOCK_N, M, N,
                       BLOCK_M, BLOCK_N, HAS_BIAS, SUBTILE)


# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages): the fastest of 7 tile shapes, plain and persistent,
# at 2048 and 8192 rows on an H100 (128x256x64 with 4 stages needs 256 KB of shared memory: refused)
TMA_CONFIG = (128, 256, 64, 8, 8, 3)
# With the statistics in the product: the same tiles stored in halves, so a 4th stage fits (224 KB);
# 98.8 us at 2048x4096x4096 against 104.1 with 3 stages and whole-tile stores
# (benchmarks/results/2026-11-22-h100-matmul-ws/)
STATS_IN_CONFIG = (128, 256, 64, 8, 8, 4)
TMA_INTERPRETER_CONFIG = (16, 32, 32, 2, 4, 2)
# 1000+ rows: at 1000x1000x3000 the op took 25.3 us with descriptors against 66.5 (cuBLAS 16.2); at 512 and
# 128 rows the pointer product's smaller tiles won (128x256 tiles: 52.3 against 39.3 us at 512 rows)
TMA_MIN_ROWS = 1000
# Statistics in the product when every SM has a program with a tile left after the first (more tiles
# than SMs) and a program has at most this many rows to sum: met at 2048x4096x4096 (132 programs, 16 rows
# each); at 1000x1000x3000 (96 tiles) and 4096 rows (32 rows each) the rstd kernel was faster
STATS_IN_MAX_ROWS = 16
_no_cooperative: set[int] = set()  # devices whose driver refused the cooperative launch (MPS limits, ...)


def stats_in_product(m: int, tiles: int, sms: int, device_index: int) -> bool:
    """Whether the TMA product should compute the row statistics itself (see ``STATS_IN_MAX_ROWS``)."""
    return tiles > sms and triton.cdiv(m, sms) <= STATS_IN_MAX_ROWS and device_index not in _no_cooperative


def tma_product(x2d: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None, y: torch.Tensor,
                rstd: torch.Tensor, eps: float, *, stats_in: bool = False, programs: int | None = None) -> None:
    """``y = (x2d @ wf) * rstd[:, None] (+ b)`` by the persistent TMA kernel (``tma_ready`` operands).

    With ``stats_in`` the kernel first computes ``rstd`` itself (a cooperative launch on the GPU: it
    raises where the driver refuses one); otherwise ``rstd`` must hold it already. ``programs`` overrides
    the grid: tests run the in-kernel statistics with one program under the interpreter, whose programs
    run one after another and could never meet at a barrier."""
    m, k = x2d.shape
    n = wf.shape[1]
    if common.interpreting():
        bm, bn, bk, gm, warps, stages = TMA_INTERPRETER_CONFIG
    else:
        bm, bn, bk, gm, warps, stages = STATS_IN_CONFIG if stats_in else TMA_CONFIG
    programs = programs or min(common.sm_count(x2d) if x2d.is_cuda else 4, triton.cdiv(m, bm) * triton.cdiv(n, bn))
    subtile = stats_in and not common.interpreting()
    launch = {"launch_cooperative_grid": True} if stats_in and x2d.is_cuda else {}
    _tma_product_kernel[(programs,)](
        common.TensorDescriptor.from_tensor(x2d, [bm, bk]), common.TensorDescriptor.from_tensor(wf, [bk, bn]),
        common.TensorDescriptor.from_tensor(y, [bm, bn // 2 if subtile else bn]),
        rstd, b if b is not None else rstd, x2d, common.barrier_state(x2d) if stats_in else rstd,
        m, n, k, x2d.stride(0), float(eps),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, PROGRAMS=programs, HAS_BIAS=b is not None,
        SUBTILE=subtile, STATS_IN=stats_in, STATS_ROWS=triton.next_power_of_2(triton.cdiv(m, programs)),
        IEEE=common.interpreting(), num_warps=warps, num_stages=stages, **launch,
    )


def tma_product_with_stats(x2d: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None, y: torch.Tensor,
                           rstd: torch.Tensor, eps: float) -> bool:
    """The TMA product computing rstd itself, where that was measured faster; False where it does not
    apply or the driver refused the cooperative launch (remembered per device): the caller then runs
    the rstd kernel and :func:`tma_product`."""
    if not x2d.is_cuda:
        return False
    sms = common.sm_count(x2d)
    tiles = triton.cdiv(x2d.shape[0], TMA_CONFIG[0]) * triton.cdiv(wf.shape[1], TMA_CONFIG[1])
    if not stats_in_product(x2d.shape[0], tiles, sms, x2d.get_device()):
        return False
    try:
        tma_product(x2d, wf, b, y, rstd, eps, stats_in=True)
    except RuntimeError as exc:  # e.g. "too many blocks in cooperative launch" under MPS SM limits
        if "cooperative" not in str(exc).lower():
            raise
        _no_cooperative.add(x2d.get_device())
        return False
    return True


def row_rstd(x2d: torch.Tensor, rstd: torch.Tensor, eps: float) -> None:
    """``rstd[i] = rsqrt(mean(x2d[i]²) + eps)`` by the row-statistics kernel."""
    m, k = x2d.shape
    rows = rows_per_program(m)
    _row_rstd_kernel[(triton.cdiv(m, rows),)](
        x2d, rstd, m, k, x2d.stride(0), x2d.stride(1), float(eps),
        ROWS=rows, BLOCK_K=min(1024, triton.next_power_of_2(k)), num_warps=4,
    )


def use_tma(x2d: torch.Tensor, wf: torch.Tensor, y: torch.Tensor) -> bool:
    return ((x2d.shape[0] >= TMA_MIN_ROWS or common.interpreting())
            and common.tma_ready(x2d, wf, y))


ROWS = 4  # 4 rows x 1024 columns per step: 32 fp32 accumulators per thread with 4 warps


def rows_per_program(m: int) -> int:
    """One row per program for few rows (decode: 8 rows would otherwise be 2 programs), else ROWS."""
    return 1 if m < 1024 else ROWS


@FAMILY.provider(
    "triton_rstd_epilogue",
    kind="triton",
    description="row-statistics kernel (x read once, rstd [M] written), then one product of x with g folded into W "
                "and rstd applied in its epilogue: persistent with TMA tiles where the operands allow (Hopper, "
                "16-bit, aligned rows, 1000+ rows; there the product computes rstd itself when each SM has at "
                "most 16 rows to sum), else autotuned",
)
def rmsnorm_linear_rstd_epilogue(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    x2d, n = check_inputs(x, g, w, b)
    m, _ = x2d.shape
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    wf = folded_weight(g, w)
    if not use_tma(x2d, wf, y):
        row_rstd(x2d, rstd, eps)
        launch_product(x2d, wf, b, y, eps, norm=2, rstd=rstd)
    elif not tma_product_with_stats(x2d, wf, b, y, rstd, eps):
        row_rstd(x2d, rstd, eps)
        tma_product(x2d, wf, b, y, rstd, eps)
    return y.view(*x.shape[:-1], n)
