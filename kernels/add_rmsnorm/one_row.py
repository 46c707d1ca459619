"""One program per row, the whole row in one block: load x and residual once, write h and y.

Rows wider than ``MAX_BLOCK_BYTES`` are refused (use ``looped`` or ``tuned``): two fp32 copies of a
wider row no longer fit in registers.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.dtypes import element_size
from kprof.kernels.add_rmsnorm.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.lib.launching import known_row_sizes, whole_row_meta
from kprof.registry import Shape

MAX_BLOCK_BYTES = 32 * 1024  # 8192 fp32 or 16384 bf16/fp16 elements per row


@triton.jit
def _add_rmsnorm_one_row_kernel(
    # pointers
    x_ptr,  # [rows, N] input, rows `x_row_stride` elements apart
    r_ptr,  # [rows, N] residual, rows `r_row_stride` elements apart
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] normalised output, contiguous
    h_ptr,  # [rows, N] sum x + residual, contiguous
    # sizes and strides
    x_row_stride,
    r_row_stride,
    N,
    # parameters
    eps,
    # meta-parameters
    BLOCK_N: tl.constexpr,  # power of two >= N: the whole row is one block
    ALIGN: tl.constexpr = 1,  # N and both row strides are multiples of ALIGN elements (launching.vector_align): the
    # tuned version's dispatch passes it, so that rows of a multiple of 8 but not 16 load in vectors
):
    N, x_row_stride, r_row_stride = known_row_sizes(N, x_row_stride, r_row_stride, ALIGN, 0)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + row * r_row_stride + cols, mask=mask, other=0.0)
    # h is rounded to the storage dtype before the norm, so y == rmsnorm(h) for the h returned
    h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * N + cols, h, mask=mask)
    hf = h.to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(hf * hf, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (hf * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _supports(shape: Shape, dtype: str) -> str | None:
    limit = MAX_BLOCK_BYTES // element_size(dtype)
    if triton.next_power_of_2(shape[-1]) > limit:
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
def add_rmsnorm_one_row(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = DEFAULT_EPS,
    out: tuple[torch.Tensor, torch.Tensor] | None = None,
    config: dict[str, int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    x2d, r2d, w, y, h = check_inputs(x, residual, weight, out)
    n = x2d.shape[1]
    meta = whole_row_meta(
        "add_rmsnorm_one_row",
        config,
        n,
        x2d.element_size(),
        MAX_BLOCK_BYTES,
        instead="add_rmsnorm_looped or add_rmsnorm_tuned",
    )
    _add_rmsnorm_one_row_kernel[(x2d.shape[0],)](x2d, r2d, w, y, h, x2d.stride(0), r2d.stride(0), n, eps, **meta)
    return y, h
