"""What rmsnorm_linear versions are compared against: eager PyTorch, torch.compile, and the product
``x @ W`` alone in cuBLAS (the roofline: a fused version should cost about that)."""

from __future__ import annotations

import torch

from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY
from kprof.kernels.rmsnorm_linear.reference import rmsnorm_linear_eager
from kprof.providers import compiled

FAMILY.provider("torch_eager", kind="eager", description="eager PyTorch, as users write it")(rmsnorm_linear_eager)

_compiled = compiled(rmsnorm_linear_eager)


@FAMILY.provider(
    "torch_compile", kind="compile", description="torch.compile of the eager code (default mode)", gpu_only=True
)
def rmsnorm_linear_torch_compile(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    return _compiled(x, g, w, b, eps)


@FAMILY.provider("cublas_xw", kind="roofline", description="x @ W alone in cuBLAS: the yardstick")
def rmsnorm_linear_cublas_xw(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    return x @ w
