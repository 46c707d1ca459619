"""The PyTorch code a user would write, and the float64 oracle every provider is checked against."""

from __future__ import annotations

import torch


def rmsnorm_eager(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm as people write it in PyTorch: upcast, normalise, scale, cast back."""
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * rstd * weight.float()).to(x.dtype)


def rmsnorm_oracle(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The truth, in float64."""
    x64 = x.double()
    return x64 * torch.rsqrt(x64.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.double()
