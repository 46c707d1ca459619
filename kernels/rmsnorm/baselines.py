"""What rmsnorm versions are compared against: eager PyTorch, F.rms_norm, torch.compile, Liger-Kernel."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kprof.kernels.lib.peers import liger_row_limit
from kprof.kernels.rmsnorm.family import DEFAULT_EPS, FAMILY
from kprof.kernels.rmsnorm.reference import rmsnorm_eager
from kprof.providers import compiled, module_missing, register_copy_bytes

FAMILY.provider("torch_eager", kind="eager", description="eager PyTorch, as users write it")(rmsnorm_eager)
register_copy_bytes(FAMILY)

_rmsnorm_compiled = compiled(rmsnorm_eager)


@FAMILY.provider(
    "torch_compile", kind="compile", description="torch.compile of the eager code (default mode)", gpu_only=True
)
def rmsnorm_torch_compile(x: torch.Tensor, weight: torch.Tensor, eps: float = DEFAULT_EPS) -> torch.Tensor:
    return _rmsnorm_compiled(x, weight, eps)


def _no_f_rms_norm() -> str | None:
    return None if hasattr(F, "rms_norm") else f"torch {torch.__version__} has no F.rms_norm (added in 2.4)"


@FAMILY.provider("torch_F", kind="library", description="torch.nn.functional.rms_norm", requires=_no_f_rms_norm)
def rmsnorm_torch_functional(x: torch.Tensor, weight: torch.Tensor, eps: float = DEFAULT_EPS) -> torch.Tensor:
    return F.rms_norm(x, (x.shape[-1],), weight=weight, eps=eps)


@FAMILY.provider(
    "liger",
    supports=liger_row_limit,
    kind="peer",
    description="Liger-Kernel's rms_norm (optional peer)",
    requires=module_missing("liger_kernel", "pip install liger-kernel"),
    gpu_only=True,
)
def rmsnorm_liger(x: torch.Tensor, weight: torch.Tensor, eps: float = DEFAULT_EPS) -> torch.Tensor:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    # Liger's default "llama" casting mode, as its users call it.
    return LigerRMSNormFunction.apply(x, weight, eps)
