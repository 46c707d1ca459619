"""The silu_mul family: the eager code a user writes, and the family record (oracle, models, tolerances)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from kprof.kernels.lib import gated

OP = "silu_mul"


def silu_mul_eager(x: torch.Tensor) -> torch.Tensor:
    """As written in a Llama MLP: split the fused projection, activate the gate, multiply."""
    gate, up = x.chunk(2, dim=-1)
    return F.silu(gate) * up


def validate(x: torch.Tensor, *, triton: bool = True) -> None:
    """Raise ``ValueError`` saying what is wrong (``triton``: x must suit a Triton kernel)."""
    gated.validate(OP, x, triton=triton)


def check_inputs(x: torch.Tensor, out: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate for a kernel; return ``(x2d, y2d, y)`` with ``y`` of shape ``[..., H]``."""
    return gated.check_inputs(OP, x, out)


def silu_mul_oracle(x: torch.Tensor) -> torch.Tensor:
    """float64 reference: silu(g) = g * sigmoid(g)."""
    gate, up = x.double().chunk(2, dim=-1)
    return gate * torch.sigmoid(gate) * up


# flops per output: sigmoid (exp, add, divide) + 2 multiplies (transcendentals as 1)
FAMILY = gated.make_family(
    OP, "x = [..., 2H] (gate | up) -> silu(gate) * up", Path(__file__).parent, silu_mul_oracle, flops_per_output=5
)
