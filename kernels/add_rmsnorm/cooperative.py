"""Many rows of 128 KB or more: each row split over ``SPLITS`` programs that hold their chunk of h = x +
residual in registers and meet once, so x and the residual are read once and h is not read back.

The same protocol as rmsnorm's (``kernels/rmsnorm/cooperative.py``: tickets in start order, a partial sum per
program, a counter per row, the partial sums added in a fixed order). The chunked kernel (``looped``) stores
h and reads it back for its second pass; at 512+ rows of 65536-131072 bf16 columns it reached 77-84% of the
copy ceiling on an H100 (benchmarks/results/grid/). GPU only: the interpreter runs one program after another.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _add_rmsnorm_cooperative_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    r_ptr,  # [rows, N] residual
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] normalised output, contiguous
    h_ptr,  # [rows, N] sum, contiguous
    ws_ptr,  # [rows, SPLITS] float32: each program's partial sum of squares
    sync_ptr,  # [1 + rows] int32, zeroed: the ticket counter, then one arrival counter per row
    # sizes and strides
    x_row_stride,
    r_row_stride,
    N,
    # parameters
    eps,
    # meta-parameters
    CHUNK: tl.constexpr,  # elements per program, a power of two >= N / SPLITS: held in registers
    SPLITS: tl.constexpr,  # programs per row
    SPLITS_POW2: tl.constexpr,  # SPLITS rounded up to a power of two (the partial sums are read as one block)
):
    ticket = tl.atomic_add(sync_ptr, 1)
    row = (ticket // SPLITS).to(tl.int64)
    part = ticket % SPLITS
    cols = part * CHUNK + tl.arange(0, CHUNK)
    m = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
    r = tl.load(r_ptr + row * r_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
    # h is rounded to its dtype before it is normalised, as every version does; it stays in that dtype in
    # registers through the wait (half the registers of float32 for 16-bit h)
    h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * N + cols, h, mask=m)
    hf = h.to(tl.float32)
    tl.store(ws_ptr + row * SPLITS + part, tl.sum(hf * hf, axis=0))
    arrived = tl.atomic_add(sync_ptr + 1 + row, 1, sem="release") + 1
    while arrived < SPLITS:
        arrived = tl.atomic_add(sync_ptr + 1 + row, 0, sem="acquire")
    slots = tl.arange(0, SPLITS_POW2)
    sums = tl.load(ws_ptr + row * SPLITS + slots, mask=slots < SPLITS, other=0.0, cache_modifier=".cg")
    rstd = tl.rsqrt(tl.sum(sums, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
    if h_ptr.dtype.element_ty == tl.bfloat16:
        # the same conversion as bit operations, so the compiler does not keep the float32 copy through the wait
        hf = (h.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    else:
        hf = h.to(tl.float32)
    tl.store(y_ptr + row * N + cols, (hf * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


def launch_cooperative(
    x2d: torch.Tensor,
    r2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    h2d: torch.Tensor,
    eps: float,
    splits: int,
    num_warps: int,
) -> None:
    """y, h = add_rmsnorm(x, residual) over rows, ``splits`` cooperating programs per row (one launch after a
    zeroing of ``1 + rows`` counters). y and h contiguous. GPU only: see the module docstring."""
    if not x2d.is_cuda:
        raise ValueError(
            "the cooperative add_rmsnorm kernel needs the programs of a row to run at once, which the "
            "interpreter cannot do; run it on a GPU, or use the chunked kernel"
        )
    n_rows, n = x2d.shape
    chunk = triton.next_power_of_2(triton.cdiv(n, splits))
    ws = torch.empty((n_rows, splits), dtype=torch.float32, device=x2d.device)
    sync = torch.zeros(1 + n_rows, dtype=torch.int32, device=x2d.device)
    _add_rmsnorm_cooperative_kernel[(n_rows * splits,)](
        x2d, r2d, weight, y2d, h2d, ws, sync, x2d.stride(0), r2d.stride(0), n, float(eps),
        CHUNK=chunk, SPLITS=splits, SPLITS_POW2=triton.next_power_of_2(splits), num_warps=num_warps,
    )  # fmt: skip
