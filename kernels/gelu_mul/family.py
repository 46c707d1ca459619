"""The gelu_mul family: the eager code a user writes, and the family record (oracle, models, tolerances)."""

from __future__ import annotations

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


FAMILY = gated.make_family(
    OP, gated.GELU_TANH, "x = [..., 2H] (gate | up) -> gelu_tanh(gate) * up", Path(__file__).parent
)
