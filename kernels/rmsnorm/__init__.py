"""RMSNorm: ``y = x / sqrt(mean(x**2, -1) + eps) * weight``, computed in fp32, stored in the input dtype.

Versions (one module each): ``one_row`` (the classic one-program-per-row kernel), ``looped`` (chunked
two-pass rows, any width), ``tuned`` (several rows per program, measured configs, cheap launches).
Baselines: eager PyTorch, ``torch.nn.functional.rms_norm``, ``torch.compile`` and Liger-Kernel.
"""

from kprof.kernels.rmsnorm.family import FAMILY
from kprof.registry import load_family_modules

load_family_modules(__name__, __path__)

__all__ = ["FAMILY"]
