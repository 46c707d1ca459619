"""The gelu_mul family: the eager code a user writes, and the family record (oracle, models, tolerances)."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from kprof.kernels import _gated as gated

OP = "gelu_mul"


def gelu_mul_eager(x: torch.Tensor) -> torch.Tensor:
    """As written in a GeGLU MLP (Gemma): split the fused projection, tanh-GELU the gate, multiply."""
    gate, up = x.chunk(2, dim=-1)
    return F.gelu(gate, approximate="tanh") * up


FAMILY = gated.make_family(
    OP, gated.GELU_TANH, "x = [..., 2H] (gate | up) -> gelu_tanh(gate) * up", Path(__file__).parent
)
