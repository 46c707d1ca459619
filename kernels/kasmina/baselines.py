"""The PyTorch versions kasmina's kernels are compared against: the seed's loop (the family's baseline),
a vectorised version, torch.compile of the vectorised version; and the yardstick, a bare copy of x."""

from __future__ import annotations

import torch

from kprof.kernels.kasmina.family import FAMILY
from kprof.kernels.kasmina.reference import kasmina_loop, kasmina_vectorised
from kprof.providers import compiled

FAMILY.provider(
    "torch_loop", kind="eager", description="the seed's chunk-by-chunk loop (state read on the host per seed)"
)(kasmina_loop)
FAMILY.provider("torch_vectorised", kind="eager", description="gathered blueprints, one batched product (PyTorch)")(
    kasmina_vectorised
)

_compiled = compiled(kasmina_vectorised)


@FAMILY.provider(
    "torch_compile", kind="compile", description="torch.compile of the vectorised PyTorch code", gpu_only=True
)
def kasmina_torch_compile(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    return _compiled(x, lifecycle, blueprint_id, alpha, weights, bias)


@FAMILY.provider(
    "copy_x",
    kind="roofline",
    description="a bare device copy of x (x.clone()): the yardstick, since the layer reads x and writes a y of "
    "the same size",
)
def kasmina_copy_x(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> torch.Tensor:
    return x.clone()
