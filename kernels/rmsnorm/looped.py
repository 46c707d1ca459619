"""Rows wider than one block: accumulate the sum of squares over chunks, then normalise in a second pass.

The second pass reads the row again; for rows up to a few hundred KB that read is mostly served by
L2, so DRAM traffic stays close to one read and one write. Any N works.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib.launching import known_row_sizes, meta_params
from kprof.kernels.rmsnorm.family import DEFAULT_EPS, FAMILY, check_inputs

DEFAULT_CHUNK = 4096


@triton.jit
def _rmsnorm_looped_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] output
    # sizes and strides
    x_row_stride,
    y_row_stride,
    N,
    # parameters
    eps,
    # meta-parameters
    BLOCK_N: tl.constexpr,  # chunk width: the loop walks the row BLOCK_N elements at a time
    ALIGN: tl.constexpr = 1,  # N and both row strides are multiples of ALIGN elements (launching.vector_align)
):
    N, x_row_stride, y_row_stride = known_row_sizes(N, x_row_stride, y_row_stride, ALIGN, 0)
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    cols = tl.arange(0, BLOCK_N)
    # pass 1: per-lane partial sums of squares, reduced once at the end
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / N + eps)
    # pass 2: normalise and scale
    for start in range(0, N, BLOCK_N):
        mask = start + cols < N
        x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + start + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@FAMILY.provider(
    "triton_looped",
    kind="triton",
    description="one program per row, chunked two-pass loop (any row width)",
    accepts_out=True,
    params={"BLOCK_N": "columns per chunk (power of two)", "num_warps": "warps per program"},
)
def rmsnorm_looped(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = DEFAULT_EPS,
    out: torch.Tensor | None = None,
    chunk: int = DEFAULT_CHUNK,
    num_warps: int = 8,
    config: dict[str, int] | None = None,
) -> torch.Tensor:
    x2d, weight, y2d, y = check_inputs(x, weight, out)
    n = x2d.shape[1]
    block_n = min(triton.next_power_of_2(n), triton.next_power_of_2(chunk))
    meta = meta_params(
        "rmsnorm_looped", config, {"BLOCK_N": block_n, "num_warps": num_warps}, powers_of_two=("BLOCK_N",)
    )
    _rmsnorm_looped_kernel[(x2d.shape[0],)](x2d, weight, y2d, x2d.stride(0), y2d.stride(0), n, eps, **meta)
    return y
