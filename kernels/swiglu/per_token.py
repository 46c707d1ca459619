"""The seed's teaching kernel: per token, dot products of x's row with columns of both weights, summed
on CUDA cores (``tl.sum(x * w)``), SiLU*mul on the two sums.

No tensor cores and little reuse: every token's programs stream the weight columns again (L2 absorbs
some of it). Kept as the baseline the tiled kernels are measured against, and limited to shapes where
it finishes in reasonable time (``MAX_MACS`` multiply-adds per call)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.swiglu.family import FAMILY, check_inputs, dims
from kprof.registry import Shape

MAX_MACS = 2**33  # ~8.6e9 multiply-adds: 16 x 4096 x 11008 runs, 2048 x 2048 x 5504 does not


@triton.jit
def _swiglu_per_token_kernel(
    # pointers
    x_ptr,  # [M, d] tokens, rows `x_row_stride` apart
    wg_ptr,  # [d, ff] gate weight, contiguous
    wu_ptr,  # [d, ff] up weight, contiguous
    y_ptr,  # [M, ff] output, contiguous
    # sizes and strides
    d,
    ff,
    x_row_stride,
    # meta-parameters
    BLOCK_D: tl.constexpr,  # reduction chunk along d
    BLOCK_F: tl.constexpr,  # outputs (columns of ff) per program
):
    token = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)
    cmask = cols < ff
    gate = tl.zeros([BLOCK_F], dtype=tl.float32)
    up = tl.zeros([BLOCK_F], dtype=tl.float32)
    for start in range(0, d, BLOCK_D):
        ks = start + tl.arange(0, BLOCK_D)
        kmask = ks < d
        xv = tl.load(x_ptr + token * x_row_stride + ks, mask=kmask, other=0.0).to(tl.float32)
        wmask = kmask[:, None] & cmask[None, :]
        offs = ks[:, None].to(tl.int64) * ff + cols[None, :]
        wg = tl.load(wg_ptr + offs, mask=wmask, other=0.0).to(tl.float32)
        wu = tl.load(wu_ptr + offs, mask=wmask, other=0.0).to(tl.float32)
        gate += tl.sum(xv[:, None] * wg, axis=0)
        up += tl.sum(xv[:, None] * wu, axis=0)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(y_ptr + token * ff + cols, y.to(y_ptr.dtype.element_ty), mask=cmask)


def _supports(shape: Shape, dtype: str) -> str | None:
    m, d, ff = dims(shape)
    if m * d * ff > MAX_MACS:
        return (
            f"{m}x{d}x{ff} is {m * d * ff:.1e} multiply-adds on CUDA cores, over the teaching kernel's {MAX_MACS:.1e}"
        )
    return None


@FAMILY.provider(
    "triton_per_token",
    kind="triton",
    description="the seed's per-token dot-product kernel (CUDA cores, teaching baseline)",
    supports=_supports,
)
def swiglu_per_token(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    x2d, ff = check_inputs(x, w_gate, w_up)
    m, d = x2d.shape
    y = torch.empty((m, ff), dtype=x.dtype, device=x.device)
    block_f = min(128, triton.next_power_of_2(ff))
    _swiglu_per_token_kernel[(m, triton.cdiv(ff, block_f))](
        x2d,
        w_gate.contiguous(),
        w_up.contiguous(),
        y,
        d,
        ff,
        x2d.stride(0),
        BLOCK_D=64,
        BLOCK_F=block_f,
        num_warps=4,
    )
    return y.view(*x.shape[:-1], ff)
