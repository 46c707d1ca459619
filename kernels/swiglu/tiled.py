"""A tiled matrix product with both accumulators: each program computes a BLOCK_M x BLOCK_N tile of
``x @ Wg`` and of ``x @ Wu`` from the same loaded tile of x, and applies SiLU*mul in the epilogue, so
the two [M, ff] intermediates never reach memory. Weights are read through their strides, so one
kernel serves [d, ff] row-major weights and transposed ([ff, d] stored) ones.

This version launches one fixed tile (128 x 64 x 64, 4 warps, 3 stages) in row-major program order;
``triton_tuned`` autotunes the same kernel."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.errors import UnsupportedConfig
from kprof.kernels.lib import launching, tiles
from kprof.kernels.lib.tiles import dot_acc, grouped_tile
from kprof.kernels.swiglu.family import FAMILY, check_inputs


@triton.jit
def _swiglu_tiled_kernel(
    # pointers
    x_ptr,  # [M, K] tokens
    wg_ptr,  # [K, N] gate weight (any strides)
    wu_ptr,  # [K, N] up weight (same strides as wg)
    y_ptr,  # [M, N] output, contiguous
    # sizes and strides
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # programs walk GROUP_M row tiles per column tile, so weight tiles are reused from L2
    IEEE: tl.constexpr,  # products in full fp32 (fp32 inputs: not TF32; the interpreter: its bf16 dot is wrong)
    ALIGNED: tl.constexpr,  # K, N and the row strides are multiples of 8 elements (see lib.tiles.aligned8)
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)

    # rows/columns past the edge wrap around (modulo) instead of being masked: loads stay in bounds and
    # unmasked; the wrapped results are simply not stored
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    x_rows = offs_m[:, None].to(tl.int64) * stride_xm
    w_rows = offs_k[:, None] * stride_wk
    if ALIGNED:  # promises kprof.kernels.lib.tiles.aligned8 checked; they must sit in the kernel body
        x_rows = tl.multiple_of(x_rows, [8, 8])
        w_rows = tl.multiple_of(w_rows, [8, 8])
        offs_n = tl.max_contiguous(tl.multiple_of(offs_n, 8), 8)
    x_ptrs = x_ptr + x_rows + offs_k[None, :] * stride_xk
    w_offs = w_rows + offs_n[None, :].to(tl.int64) * stride_wn
    acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x_mask = offs_k[None, :] < k_left
        if ALIGNED:  # K a multiple of 8: the mask is constant over runs of 8 columns, vector loads stay legal
            x_mask = tl.max_constancy(x_mask, [1, 8])
        a = tl.load(x_ptrs, mask=x_mask, other=0.0)
        bg = tl.load(wg_ptr + w_offs, mask=offs_k[:, None] < k_left, other=0.0)
        bu = tl.load(wu_ptr + w_offs, mask=offs_k[:, None] < k_left, other=0.0)
        acc_g = dot_acc(a, bg, acc_g, IEEE)
        acc_u = dot_acc(a, bu, acc_u, IEEE)
        x_ptrs += BLOCK_K * stride_xk
        w_offs += BLOCK_K * stride_wk
    y = acc_g * tl.sigmoid(acc_g) * acc_u
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    tl.store(y_ptr + rows[:, None].to(tl.int64) * N + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def launch(x2d: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, y: torch.Tensor, **config) -> None:
    """Launch the tiled kernel with one explicit config (BLOCK_M/N/K, GROUP_M, num_warps, num_stages)."""
    m, k = x2d.shape
    n = wg.shape[1]
    grid = (triton.cdiv(m, config["BLOCK_M"]) * triton.cdiv(n, config["BLOCK_N"]),)
    _swiglu_tiled_kernel[grid](
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
        **config,
    )


def ieee(x: torch.Tensor) -> bool:
    return x.dtype == torch.float32 or launching.interpreting()


FIXED = dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, GROUP_M=1, num_warps=4, num_stages=3)


@FAMILY.provider(
    "triton_tiled",
    kind="triton",
    description="tiled product, both accumulators, SiLU*mul epilogue (one fixed 128x64x64 tile)",
    params={
        "BLOCK_M": "rows of x per tile (power of two, >= 16 for tl.dot)",
        "BLOCK_N": "output columns per tile (power of two, >= 16)",
        "BLOCK_K": "reduction slice per loop step (power of two, >= 16)",
        "GROUP_M": "row tiles per column tile in program order (1: row-major)",
        "num_warps": "warps per program",
        "num_stages": "software-pipelining depth of the K loop",
    },
)
def swiglu_tiled(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, config: dict[str, int] | None = None
) -> torch.Tensor:
    x2d, ff = check_inputs(x, w_gate, w_up)
    if w_gate.stride() != w_up.stride():
        w_gate, w_up = w_gate.contiguous(), w_up.contiguous()
    meta = launching.meta_params("swiglu_tiled", config, FIXED, powers_of_two=("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    small = [k for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K") if meta[k] < 16]
    if small:
        raise UnsupportedConfig(
            f"swiglu_tiled: {', '.join(f'{k}={meta[k]}' for k in small)}: tl.dot needs "
            "tiles of at least 16 in every dimension"
        )
    y = torch.empty((x2d.shape[0], ff), dtype=x.dtype, device=x.device)
    launch(x2d, w_gate, w_up, y, **meta)
    return y.view(*x.shape[:-1], ff)
