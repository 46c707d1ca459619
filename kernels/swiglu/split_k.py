"""swiglu for a handful of rows with K split over several programs per column tile: each program runs the
tiled kernel's two products over its share of K, and the last program of a column tile to finish adds the
parts of both and applies silu(gate) * up (the parts meet as ``kernels/lib/split_k.py`` describes).

Why: at decode sizes the op streams both weights once, and a narrow weight leaves SMs idle without a split
(5504 columns in 64-wide tiles are 86 programs for an H100's 132 SMs). rmsnorm_linear's split-K kernel, the
same design with the norm inside, ran 0.92-0.94x cuBLAS's product at 1x8192x28672 on two H100s where kprof's
unsplit product alone ran 1.01-1.03x (``benchmarks/results/split-k/``). M is not specialised: Triton's one-row
binaries of these products ran 1.5-2 us slower than the 4- and 16-row ones of the same tiles.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching, split_k, tiles
from kprof.kernels.lib.tiles import dot_acc
from kprof.kernels.swiglu.family import FAMILY, check_inputs
from kprof.kernels.swiglu.tiled import ieee


@triton.jit(do_not_specialize=["M"])
def _swiglu_split_k_kernel(
    # pointers
    x_ptr,  # [M, K] tokens
    wg_ptr,  # [K, N] gate weight (any strides)
    wu_ptr,  # [K, N] up weight (same strides as wg)
    y_ptr,  # [M, N] output, contiguous
    part_ptr,  # [2, SPLIT_K, M, N] fp32: each program's partial gate and up products
    count_ptr,  # [row tiles x column tiles] int32 tickets, zero between calls
    # sizes and strides
    M,
    N,
    K,
    SPLIT_K,  # programs per column tile (not a constexpr: one binary serves every split count)
    K_PER_SPLIT,  # columns of x per program, a multiple of BLOCK_K
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    IEEE: tl.constexpr,  # products in full fp32 (fp32 inputs; the interpreter, whose bf16 dot is wrong)
    ALIGNED: tl.constexpr,  # K, N and the row strides are multiples of 8 elements (see lib.tiles.aligned8)
    MASK_ROWS: tl.constexpr,  # a tile's rows past M masked (not read); otherwise wrapped (modulo M, read again)
):
    split, tile, pid_m, pid_n, k_start, k_end = split_k.program_tile(SPLIT_K, K_PER_SPLIT, K, N, BLOCK_N)
    offs_m, row_ok = split_k.tile_rows(pid_m, M, BLOCK_M, MASK_ROWS)
    offs_n = split_k.tile_cols(pid_n, N, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_rows = offs_m[:, None].to(tl.int64) * stride_xm
    w_rows = (k_start + offs_k[:, None]) * stride_wk
    if ALIGNED:  # promises kprof.kernels.lib.tiles.aligned8 checked; they must sit in the kernel body
        x_rows = tl.multiple_of(x_rows, [8, 8])
        w_rows = tl.multiple_of(w_rows, [8, 8])
        offs_n = tl.max_contiguous(tl.multiple_of(offs_n, 8), 8)
    x_ptrs = x_ptr + x_rows + (k_start + offs_k[None, :]) * stride_xk
    w_offs = w_rows + offs_n[None, :].to(tl.int64) * stride_wn
    acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(k_start, k_end, BLOCK_K):
        k_in = offs_k < k_end - k
        if ALIGNED:  # K and each program's share are multiples of 8: the mask is constant over runs of 8
            k_in = tl.max_constancy(k_in, 8)
        x_mask = k_in[None, :]
        if MASK_ROWS:
            x_mask = row_ok[:, None] & x_mask
        a = tl.load(x_ptrs, mask=x_mask, other=0.0)
        bg = tl.load(wg_ptr + w_offs, mask=k_in[:, None], other=0.0)
        bu = tl.load(wu_ptr + w_offs, mask=k_in[:, None], other=0.0)
        acc_g = dot_acc(a, bg, acc_g, IEEE)
        acc_u = dot_acc(a, bu, acc_u, IEEE)
        x_ptrs += BLOCK_K * stride_xk
        w_offs += BLOCK_K * stride_wk

    cols, mask, tile_offs = split_k.output_tile(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
    if SPLIT_K == 1:  # a constant where the launch has one program per tile (Triton specialises 1)
        y = acc_g * tl.sigmoid(acc_g) * acc_u
        tl.store(y_ptr + tile_offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        per_part = M * N
        gate_parts = part_ptr + tile_offs
        up_parts = gate_parts + SPLIT_K * per_part
        tl.store(gate_parts + split.to(tl.int64) * per_part, acc_g, mask=mask)
        tl.store(up_parts + split.to(tl.int64) * per_part, acc_u, mask=mask)
        if split_k.take_ticket(count_ptr, tile) == SPLIT_K - 1:
            gate = split_k.sum_parts(gate_parts, mask, per_part, SPLIT_K, BLOCK_M, BLOCK_N)
            up = split_k.sum_parts(up_parts, mask, per_part, SPLIT_K, BLOCK_M, BLOCK_N)
            y = gate * tl.sigmoid(gate) * up
            tl.store(y_ptr + tile_offs, y.to(y_ptr.dtype.element_ty), mask=mask)
            split_k.release(count_ptr, tile)


def launch_split_k(
    x2d: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, y: torch.Tensor, config: triton.Config
) -> tuple[dict, dict]:
    """``silu(x2d @ wg) * (x2d @ wu)`` into ``y`` [M, N] with ``config``'s BLOCK_M/N/K and SPLIT_K (wg and wu
    of the same strides). Returns the (meta-parameters, launch options) it ran with: every constexpr, and the
    SPLIT_K and K_PER_SPLIT passed."""
    m, k = x2d.shape
    n = wg.shape[1]
    meta = dict(config.kwargs)
    splits, k_per_split = split_k.k_ranges(k, meta.pop("SPLIT_K"), meta["BLOCK_K"])
    tile_count = triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"])
    part = torch.empty(2 * splits * m * n if splits > 1 else 1, dtype=torch.float32, device=x2d.device)
    options = {} if launching.interpreting() else launching.config_options(config)
    meta.update(IEEE=ieee(x2d), ALIGNED=tiles.promise_aligned(x2d, wg))
    meta.setdefault("MASK_ROWS", False)
    _swiglu_split_k_kernel[(tile_count * splits,)](
        x2d,
        wg,
        wu,
        y,
        part,
        launching.ticket_counters(x2d, tile_count),
        m,
        n,
        k,
        splits,
        k_per_split,
        x2d.stride(0),
        x2d.stride(1),
        wg.stride(0),
        wg.stride(1),
        **meta,
        **options,
    )
    return {**meta, "SPLIT_K": splits, "K_PER_SPLIT": k_per_split}, options


# Tiles by column class up to 16 rows: (BLOCK_N, BLOCK_K, stages, programs per SM the split aims at; 0: no
# split), 16-row tiles and 4 warps, bf16 and fp16. From a cold race of 13 tiles x 5 split counts at 1, 4 and 16
# rows x K 2048/4096/8192 x N 5504-28672 on an H100 (benchmarks/results/split-k/swiglu-4bba1af/): the fastest
# candidate had no split at all 72 points; these are the fastest of their class at every point but one (1.021x,
# bf16 14336). At ~5504 columns the pinned tiled kernel was as fast (1.00x), so the op keeps it there.
DECODE_TILES: dict[int, tuple[int, int, int, int]] = {
    5504: (64, 128, 4, 0),
    11008: (128, 64, 4, 0),
    14336: (128, 64, 3, 0),
    28672: (256, 64, 3, 0),
}
DECODE_MAX_ROWS = 16
OPS_MIN_COLS = 8192  # the op takes the kernel from this many columns (the 11008-column class and wider)
# Up to MASKED_MAX_ROWS rows a tile's rows past M are masked, not wrapped: wrapped, the 16 rows of a one-row tile
# read the same row through L2 (cp.async bypasses L1). The op's configs raced both ways at 1, 2, 4 and 16 rows x K
# 2048/4096/8192 x the four column classes on an H100 (benchmarks/results/split-k/swiglu-rows-9f89fd2/): masked
# over wrapped, geometric mean (range), 0.974 (0.928-0.999) at one row in bf16 and in fp16, 0.990-0.991 at two,
# 0.998-1.000 at four. Masked, the kernel also beat the pinned tiled kernel the op ran at ~5504 columns there:
# 1x2048x5504 bf16 1.017x cuBLAS against 1.102x, 1x4096x5504 fp16 1.009x against 1.101x, and at two rows level
# or ahead (0.905-1.032x against 0.904-1.041x); so up to that many rows the op takes it from MASKED_MIN_COLS.
MASKED_MAX_ROWS = 2
MASKED_MIN_COLS = 5000
MIN_K = 2048  # shallower products were not raced


def column_class(n: int) -> int:
    """The measured column count nearest to ``n`` (the keys of ``DECODE_TILES``)."""
    return tiles.nearest(DECODE_TILES, n)


def config_for(x2d: torch.Tensor, n: int) -> triton.Config:
    """The column class's tiles for ``x2d`` [M, K] times [K, n] weights, K split as the class says."""
    m, k = x2d.shape
    bn, bk, stages, per_sm = DECODE_TILES[column_class(n)]
    splits = 1 if per_sm == 0 else split_k.split_count(m, k, n, 16, bn, bk, per_sm * launching.sm_count(x2d))
    return split_k.config(16, bn, bk, splits, 4, stages, MASK_ROWS=m <= MASKED_MAX_ROWS)


def ops_config(x2d: torch.Tensor, n: int) -> triton.Config | None:
    """The config the op (``triton_tuned``, ``ops.swiglu``) runs this kernel with, or None where it runs the
    tiled kernel: up to ``DECODE_MAX_ROWS`` rows of bf16 or fp16, from ``OPS_MIN_COLS`` columns (from
    ``MASKED_MIN_COLS`` up to ``MASKED_MAX_ROWS`` rows), K from ``MIN_K``."""
    m, k = x2d.shape
    least_cols = MASKED_MIN_COLS if m <= MASKED_MAX_ROWS else OPS_MIN_COLS
    if m > DECODE_MAX_ROWS or n < least_cols or k < MIN_K or x2d.dtype not in (torch.bfloat16, torch.float16):
        return None
    return config_for(x2d, n)


@FAMILY.provider(
    "triton_split_k",
    kind="triton",
    description="the tiled kernel's two products for a few rows with K split over programs; the last program "
    "of a column tile adds the parts and applies silu(gate) * up",
)
def swiglu_split_k(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    x2d, ff = check_inputs(x, w_gate, w_up)
    if w_gate.stride() != w_up.stride():
        w_gate, w_up = w_gate.contiguous(), w_up.contiguous()
    y = torch.empty((x2d.shape[0], ff), dtype=x.dtype, device=x.device)
    launch_split_k(x2d, w_gate, w_up, y, config_for(x2d, ff))
    return y.view(*x.shape[:-1], ff)


# Public handle for op_plan (the ops API's launch plans).
split_k_kernel = _swiglu_split_k_kernel
