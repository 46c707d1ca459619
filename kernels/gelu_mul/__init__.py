"""GELU(tanh)·mul: ``x = [..., 2H]`` (gate | up) -> ``gelu_tanh(gate) * up`` of shape ``[..., H]`` (GeGLU).

Versions (``kernels.py``): ``triton_one_row``, ``triton_tiled``, ``triton_tuned``, built from the gated
building blocks in ``kernels/lib/gated.py`` (shared with silu_mul). Baselines: eager PyTorch,
``torch.compile``, Liger-Kernel's geglu kernel.
"""

from kprof.kernels.gelu_mul.family import FAMILY
from kprof.registry import load_family_modules

load_family_modules(__name__, __path__)

__all__ = ["FAMILY"]
