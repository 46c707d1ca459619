"""SiLU·mul: ``x = [..., 2H]`` (gate | up) -> ``silu(gate) * up`` of shape ``[..., H]`` (SwiGLU's activation).

Versions (``kernels.py``): ``triton_one_row``, ``triton_tiled``, ``triton_tuned``, built from the gated
building blocks in ``kernels/lib/gated.py`` (shared with gelu_mul). Baselines: eager PyTorch, ``torch.compile``,
Liger-Kernel's fused gate-up SiLU·mul.
"""

from kprof.kernels.silu_mul.family import FAMILY
from kprof.registry import load_family_modules

load_family_modules(__name__, __path__)

__all__ = ["FAMILY"]
