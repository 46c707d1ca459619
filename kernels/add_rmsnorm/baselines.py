"""What add_rmsnorm versions are compared against: eager PyTorch, torch.compile, Liger-Kernel."""

from __future__ import annotations

import torch

from kprof.kernels.add_rmsnorm.family import DEFAULT_EPS, FAMILY
from kprof.kernels.add_rmsnorm.reference import add_rmsnorm_eager
from kprof.kernels.lib.peers import liger_row_limit
from kprof.providers import compiled, module_missing, register_copy_bytes

FAMILY.provider("torch_eager", kind="eager", description="eager PyTorch, as users write it")(add_rmsnorm_eager)
register_copy_bytes(FAMILY)

_compiled = compiled(add_rmsnorm_eager)


@FAMILY.provider(
    "torch_compile", kind="compile", description="torch.compile of the eager code (default mode)", gpu_only=True
)
def add_rmsnorm_torch_compile(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = DEFAULT_EPS
) -> tuple[torch.Tensor, torch.Tensor]:
    return _compiled(x, residual, weight, eps)


@FAMILY.provider(
    "liger",
    supports=liger_row_limit,
    kind="peer",
    description="Liger-Kernel's fused_add_rms_norm (optional peer)",
    requires=module_missing("liger_kernel", "pip install liger-kernel"),
    gpu_only=True,
)
def add_rmsnorm_liger(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = DEFAULT_EPS
) -> tuple[torch.Tensor, torch.Tensor]:
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction

    # Liger's default "llama" casting mode, as its users call it; returns (y, x + residual)
    return LigerFusedAddRMSNormFunction.apply(x, residual, weight, eps)
