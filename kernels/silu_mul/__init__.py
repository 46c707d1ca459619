"""SiLU·mul: ``x = [..., 2H]`` (gate | up) -> ``silu(gate) * up`` of shape ``[..., H]`` (SwiGLU's activation).

Versions: ``triton_one_row``, ``triton_tiled``, ``triton_tuned`` (kernels shared with gelu_mul in
``kernels/lib/gated.py``, the activation a constexpr). Baselines: eager PyTorch, ``torch.compile``,
Liger-Kernel's fused gate-up SiLU·mul.
"""

from kprof.kernels.silu_mul.family import FAMILY
from kprof.registry import load_family_modules

load_family_modules(__name__, __path__)

__all__ = ["FAMILY"]
