"""The PyTorch code a user would write, and the float64 oracle."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def swiglu_eager(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """Two projections, SiLU on the gate, elementwise product (each step in the input dtype)."""
    return F.silu(x @ w_gate) * (x @ w_up)


def swiglu_oracle(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    x64 = x.double()
    g = x64 @ w_gate.double()
    return g * torch.sigmoid(g) * (x64 @ w_up.double())
