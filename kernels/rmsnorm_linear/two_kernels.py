"""Two kernels: the tuned rmsnorm kernel writes the normalised x (times g), then the autotuned product
reads it back with the bias in its epilogue. The [M, K] intermediate makes one extra round trip through
memory, and the product cannot start before the norm ends."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.rmsnorm_linear.fused import launch_product


def norm_then_triton(
    x2d: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """``rmsnorm_tuned(x2d, g) @ w (+ b)`` by kprof's Triton product (pinned tiles at decode sizes, else
    autotuned), for checked 2-D rows: [M, N]."""
    xn = rmsnorm_tuned(x2d, g, eps)
    y = torch.empty((x2d.shape[0], w.shape[1]), dtype=x2d.dtype, device=x2d.device)
    launch_product(xn, w.contiguous(), b, y, eps, norm=0)
    return y


@FAMILY.provider(
    "triton_two_kernels",
    kind="triton",
    description="tuned rmsnorm kernel, then an autotuned product with the bias in its epilogue",
)
def rmsnorm_linear_two_kernels(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    x2d, n = check_inputs(x, g, w, b)
    return norm_then_triton(x2d, g, w, b, eps).view(*x.shape[:-1], n)


@triton.jit
def _decode_norm_kernel(
    # pointers
    x_ptr,  # [M, K] rows
    g_ptr,  # [K] norm weight
    xn_ptr,  # [M, K] output: the normalised rows times g, contiguous
    # sizes and strides
    x_row_stride,
    K,
    # parameters
    eps,
    # meta-parameters
    BLOCK_K: tl.constexpr,  # power of two >= K: one row per program, in one load
    PDL: tl.constexpr,  # the product is launched as this kernel's dependent: let it start at once
):
    launching.launch_dependents(PDL)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_K)
    mask = cols < K
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / K + eps)
    tl.store(xn_ptr + row * K + cols, (x * rstd * g).to(xn_ptr.dtype.element_ty), mask=mask)


PDL_MAX_K = 16384  # one row per program in one load: 64 elements a thread with 8 warps


def norm_then_triton_pdl(
    x2d: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """``norm_then_triton`` with the product launched as the norm kernel's dependent (programmatic dependent
    launch, Hopper): its programs start while the norm runs and wait for it before they read anything, so
    the product's launch overlaps the norm. Without PDL (another GPU, the interpreter, ``KPROF_PDL=0``) the
    same two kernels run one after the other."""
    m, k = x2d.shape
    if k > PDL_MAX_K:
        raise ValueError(f"rmsnorm_linear: the PDL route normalises a row in one load, up to {PDL_MAX_K} columns")
    pdl = launching.pdl_ready(x2d)
    xn = torch.empty((m, k), dtype=x2d.dtype, device=x2d.device)
    block = triton.next_power_of_2(k)
    options = {} if launching.interpreting() else {"num_warps": 4 if block <= 4096 else 8}
    _decode_norm_kernel[(m,)](x2d, g, xn, x2d.stride(0), k, float(eps), BLOCK_K=block, PDL=pdl, **options)
    y = torch.empty((m, w.shape[1]), dtype=x2d.dtype, device=x2d.device)
    launch_product(xn, w.contiguous(), b, y, eps, norm=0, pdl=pdl)
    return y


@FAMILY.provider(
    "triton_two_kernels_pdl",
    kind="triton",
    description="a one-load norm kernel, then the pinned/autotuned product launched as its dependent (PDL): "
    "the product's launch overlaps the norm",
)
def rmsnorm_linear_two_kernels_pdl(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    x2d, n = check_inputs(x, g, w, b)
    return norm_then_triton_pdl(x2d, g.contiguous(), w, b, eps).view(*x.shape[:-1], n)
