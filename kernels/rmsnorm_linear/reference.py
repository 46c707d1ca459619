"""The PyTorch code a user would write, and the float64 oracle."""

from __future__ import annotations

import torch

from kprof.kernels.rmsnorm.reference import rmsnorm_eager


def rmsnorm_linear_eager(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = 1e-6
) -> torch.Tensor:
    y = rmsnorm_eager(x, g, eps) @ w
    return y if b is None else y + b


def rmsnorm_linear_oracle(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = 1e-6
) -> torch.Tensor:
    x64 = x.double()
    xn = x64 * torch.rsqrt(x64.pow(2).mean(dim=-1, keepdim=True) + eps) * g.double()
    y = xn @ w.double()
    return y if b is None else y + b.double()
