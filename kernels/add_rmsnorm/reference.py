"""The PyTorch code a user would write, and the float64 oracle."""

from __future__ import annotations

import torch


def add_rmsnorm_eager(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """As written in a decoder block: add in the input dtype, then RMSNorm in fp32 of the sum."""
    h = x + residual
    hf = h.float()
    rstd = torch.rsqrt(hf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (hf * rstd * weight.float()).to(x.dtype), h


def add_rmsnorm_oracle(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """The truth, in float64 (the sum is not rounded to the input dtype before the norm)."""
    h = x.double() + residual.double()
    return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.double(), h
