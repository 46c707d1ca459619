"""The gelu_mul family: the eager code a user writes, and the family record (oracle, models, tolerances)."""

from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F

from kprof.kernels.lib import gated

OP = "gelu_mul"


def gelu_mul_eager(x: torch.Tensor) -> torch.Tensor:
    """As written in a GeGLU MLP (Gemma): split the fused projection, tanh-GELU the gate, multiply."""
    gate, up = x.chunk(2, dim=-1)
    return F.gelu(gate, approximate="tanh") * up


def validate(x: torch.Tensor, *, triton: bool = True) -> None:
    """Raise ``ValueError`` saying what is wrong (``triton``: x must suit a Triton kernel)."""
    gated.validate(OP, x, triton=triton)


def check_inputs(x: torch.Tensor, out: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate for a kernel; return ``(x2d, y2d, y)`` with ``y`` of shape ``[..., H]``."""
    return gated.check_inputs(OP, x, out)


def gelu_mul_oracle(x: torch.Tensor) -> torch.Tensor:
    """float64 reference: the tanh form, 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))."""
    gate, up = x.double().chunk(2, dim=-1)
    return 0.5 * gate * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (gate + 0.044715 * gate.pow(3)))) * up


# flops per output: the cubic (3), the sigmoid form g * sigmoid(2z) (4) and the multiply by up (1), ~= 8
# (transcendentals as 1)
FAMILY = gated.make_family(
    OP, "x = [..., 2H] (gate | up) -> gelu_tanh(gate) * up", Path(__file__).parent, gelu_mul_oracle, flops_per_output=8
)
