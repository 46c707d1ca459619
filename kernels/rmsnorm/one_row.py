"""The classic pattern: one program per row, the whole row in one block.

Simple and fast while a row fits in registers; rows wider than ``MAX_BLOCK_BYTES`` are refused
(use ``looped`` or ``tuned``), because a block that large spills registers and stalls.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.dtypes import element_size
from kprof.kernels.lib.launching import whole_row_meta
from kprof.kernels.rmsnorm.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.registry import Shape

MAX_BLOCK_BYTES = 64 * 1024  # 16384 fp32 or 32768 bf16/fp16 elements per row


@triton.jit
def _rmsnorm_one_row_kernel(
    # pointers
    x_ptr,  # [rows, N] input, rows `x_row_stride` elements apart
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] output, rows `y_row_stride` elements apart
    # sizes and strides
    x_row_stride,
    y_row_stride,
    N,
    # parameters
    eps,
    # meta-parameters
    BLOCK_N: tl.constexpr,  # power of two >= N: the whole row is one block
):
    row = tl.program_id(0).to(tl.int64)  # int64: rows * stride can pass 2**31
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    y = x * rstd * w
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _supports(shape: Shape, dtype: str) -> str | None:
    limit = MAX_BLOCK_BYTES // element_size(dtype)
    if shape[-1] > limit:
        return f"row of {shape[-1]} {dtype} elements exceeds the one-block limit of {limit}"
    return None


@FAMILY.provider(
    "triton_one_row",
    kind="triton",
    description="one program per row, whole row in one block (classic pattern)",
    accepts_out=True,
    supports=_supports,
    params={"BLOCK_N": "columns per block: a power of two >= N (the whole row)", "num_warps": "warps per program"},
)
def rmsnorm_one_row(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = DEFAULT_EPS,
    out: torch.Tensor | None = None,
    config: dict[str, int] | None = None,
) -> torch.Tensor:
    x2d, weight, y2d, y = check_inputs(x, weight, out)
    n = x2d.shape[1]
    meta = whole_row_meta(
        "rmsnorm_one_row", config, n, x2d.element_size(), MAX_BLOCK_BYTES, instead="rmsnorm_looped or rmsnorm_tuned"
    )
    _rmsnorm_one_row_kernel[(x2d.shape[0],)](x2d, weight, y2d, x2d.stride(0), y2d.stride(0), n, eps, **meta)
    return y
