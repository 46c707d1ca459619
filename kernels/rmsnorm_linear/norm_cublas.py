"""kprof's tuned rmsnorm kernel writes the normalised rows, then cuBLAS multiplies them by W (with the bias
in its epilogue, ``torch.addmm``). The product is not a Triton kernel: this version exists for the shapes
where no Triton product kprof has matches cuBLAS, so that a model calling the ops API there pays no more
than the norm kernel and one cuBLAS product (which is also how torch.compile builds the op).

Why it is needed, measured on an H100 (bf16, ``benchmarks/results/grid/new-parts/``): at 512 rows the
autotuned pointer product took 52.7 us at 512x2048x11008 against torch.compile's 39.7 (cuBLAS's ``x @ W``
alone about 37), and the TMA product with 128x256 tiles lost there too
(``benchmarks/results/matmul-tma/``)."""

from __future__ import annotations

import torch

from kprof.kernels.lib.checks import dense_vector
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs


def cublas_times(xn: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """``xn @ w (+ b)`` by one cuBLAS call (the bias in its epilogue, ``torch.addmm``)."""
    return xn @ w if b is None else torch.addmm(b, xn, w)


def norm_then_cublas(
    x2d: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """``rmsnorm_tuned(x2d, g) @ w (+ b)`` for checked 2-D rows: [M, N] in x's dtype."""
    return cublas_times(rmsnorm_tuned(x2d, g, eps), w, b)


@FAMILY.provider(
    "triton_norm_cublas",
    kind="triton",
    description="tuned rmsnorm kernel writes the normalised rows, then one cuBLAS product with the bias in "
    "its epilogue (torch.addmm): the product is cuBLAS's, not a Triton kernel",
)
def rmsnorm_linear_norm_cublas(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    b = dense_vector(b)  # the kernels read the bias at unit stride
    x2d, n = check_inputs(x, g, w, b)
    return norm_then_cublas(x2d, g, w, b, eps).view(*x.shape[:-1], n)
