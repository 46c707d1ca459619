"""What gelu_mul versions are compared against: eager PyTorch, torch.compile, Liger-Kernel."""

from __future__ import annotations

import torch

from kprof.kernels.gelu_mul.family import FAMILY, gelu_mul_eager
from kprof.kernels.lib import gated
from kprof.kernels.lib.peers import liger_gated_limit
from kprof.providers import module_missing

gated.register_baselines(FAMILY, gelu_mul_eager)


@FAMILY.provider(
    "liger",
    kind="peer",
    description="Liger-Kernel's geglu forward kernel on the gate/up halves of x in place (optional peer)",
    requires=module_missing("liger_kernel", "pip install liger-kernel"),
    supports=liger_gated_limit,
    gpu_only=True,
)
def gelu_mul_liger(x: torch.Tensor) -> torch.Tensor:
    """Liger has no fused gate|up GeGLU; its ``LigerGELUMulFunction(a, b)`` would first copy both halves
    contiguous. Its forward kernel takes one row stride for a, b and c, so it runs here directly on the
    halves of x, writing into the left half of a ``[rows, 2H]`` buffer: same DRAM traffic as separate
    contiguous a, b, c (the case Liger is built for), no copies; the output is a strided view."""
    from liger_kernel.ops.geglu import _geglu_tanh_forward_kernel
    from liger_kernel.ops.utils import calculate_settings

    x2d = x.reshape(-1, x.shape[-1])
    h = x.shape[-1] // 2
    c = torch.empty_like(x2d)
    block, warps = calculate_settings(h)
    _geglu_tanh_forward_kernel[(x2d.shape[0],)](
        x2d, x2d[:, h:], c, x2d.stride(0), n_cols=h, BLOCK_SIZE=block, num_warps=warps
    )
    return c[:, :h].view(*x.shape[:-1], h) if x.dim() == 2 else c[:, :h].reshape(*x.shape[:-1], h)
