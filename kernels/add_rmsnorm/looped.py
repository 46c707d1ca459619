"""Rows of any width: pass 1 adds, stores h and accumulates the sum of squares chunk by chunk; pass 2
reads h back (from L2: the program wrote it microseconds earlier) and normalises it.

DRAM traffic stays at four row passes as long as a row's h stays in L2 between the passes.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.add_rmsnorm.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.lib.launching import known_row_sizes

DEFAULT_CHUNK = 4096


@triton.jit
def _add_rmsnorm_looped_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    r_ptr,  # [rows, N] residual
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] normalised output, contiguous
    h_ptr,  # [rows, N] sum, contiguous
    # sizes and strides
    x_row_stride,
    r_row_stride,
    N,
    # parameters
    eps,
    # meta-parameters
    BLOCK_N: tl.constexpr,  # chunk width
    COLS: tl.constexpr = 0,  # 0, or N as a constant (as Inductor compiles a static shape): loops of known length
    ALIGN: tl.constexpr = 1,  # N and both row strides are multiples of ALIGN elements (launching.vector_align)
    HINTS: tl.constexpr = False,  # evict_first on x, the residual and h read back, evict_last on w (Inductor's hints)
):
    N, x_row_stride, r_row_stride = known_row_sizes(N, x_row_stride, r_row_stride, ALIGN, COLS)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    h_row = h_ptr + row * N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    once: tl.constexpr = "evict_first" if HINTS else ""
    kept: tl.constexpr = "evict_last" if HINTS else ""
    for start in range(0, N, BLOCK_N):
        mask = start + cols < N
        x = tl.load(x_ptr + row * x_row_stride + start + cols, mask=mask, other=0.0, eviction_policy=once)
        r = tl.load(r_ptr + row * r_row_stride + start + cols, mask=mask, other=0.0, eviction_policy=once)
        h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
        tl.store(h_row + start + cols, h, mask=mask)
        hf = h.to(tl.float32)
        acc += hf * hf
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / N + eps)
    tl.debug_barrier()  # h written by every thread of the block is visible before pass 2 reads it
    for start in range(0, N, BLOCK_N):
        mask = start + cols < N
        hf = tl.load(h_row + start + cols, mask=mask, other=0.0, eviction_policy=once).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0, eviction_policy=kept).to(tl.float32)
        tl.store(y_ptr + row * N + start + cols, (hf * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@FAMILY.provider(
    "triton_looped",
    kind="triton",
    description="one program per row, chunked two-pass loop (any row width)",
    accepts_out=True,
)
def add_rmsnorm_looped(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = DEFAULT_EPS,
    out: tuple[torch.Tensor, torch.Tensor] | None = None,
    chunk: int = DEFAULT_CHUNK,
    num_warps: int = 8,
) -> tuple[torch.Tensor, torch.Tensor]:
    x2d, r2d, w, y, h = check_inputs(x, residual, weight, out)
    n = x2d.shape[1]
    block_n = min(triton.next_power_of_2(n), triton.next_power_of_2(chunk))
    _add_rmsnorm_looped_kernel[(x2d.shape[0],)](
        x2d,
        r2d,
        w,
        y,
        h,
        x2d.stride(0),
        r2d.stride(0),
        n,
        eps,
        BLOCK_N=block_n,
        num_warps=num_warps,
    )
    return y, h
