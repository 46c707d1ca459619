"""What swiglu versions are compared against: eager PyTorch, torch.compile, and one cuBLAS product
``x @ [Wg Wu]`` (the roofline: the same FLOPs as the two projections, in one library call)."""

from __future__ import annotations

import torch

from kprof.kernels.lib import launching
from kprof.kernels.swiglu.family import FAMILY
from kprof.kernels.swiglu.reference import swiglu_eager
from kprof.providers import compiled

FAMILY.provider("torch_eager", kind="eager", description="eager PyTorch, as users write it")(swiglu_eager)

_compiled = compiled(swiglu_eager)


@FAMILY.provider(
    "torch_compile", kind="compile", description="torch.compile of the eager code (default mode)", gpu_only=True
)
def swiglu_torch_compile(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    return _compiled(x, w_gate, w_up)


_gate_up = launching.SameTensorsMemo()


@FAMILY.provider(
    "cublas_gate_up",
    kind="roofline",
    description="one cuBLAS product x @ [Wg Wu] (the concatenated weight built once per input set, before the timed "
    "calls): the yardstick",
)
def swiglu_cublas_gate_up(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    return x @ _gate_up.get(lambda wg, wu: torch.cat([wg, wu], dim=1), w_gate, w_up)
