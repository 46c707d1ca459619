"""What silu_mul versions are compared against: eager PyTorch, torch.compile, Liger-Kernel."""

from __future__ import annotations

import torch

from kprof.kernels.lib import gated
from kprof.kernels.lib.peers import liger_gated_limit
from kprof.kernels.silu_mul.family import FAMILY, silu_mul_eager
from kprof.providers import module_missing

gated.register_baselines(FAMILY, silu_mul_eager)


@FAMILY.provider(
    "liger",
    kind="peer",
    description="Liger-Kernel's fused gate-up SiLU*mul (reads both halves of x in place; optional peer)",
    requires=module_missing("liger_kernel", "pip install liger-kernel"),
    supports=liger_gated_limit,
    gpu_only=True,
)
def silu_mul_liger(x: torch.Tensor) -> torch.Tensor:
    from liger_kernel.ops.swiglu import LigerFusedGateUpSiLUMulFunction

    return LigerFusedGateUpSiLUMulFunction.apply(x)
