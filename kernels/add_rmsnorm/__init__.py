"""add + RMSNorm: ``h = x + residual; y = rmsnorm(h) * weight``, returning ``(y, h)`` from one pass.

The pre-norm residual pattern of every transformer block: unfused it reads x, residual and h again
(five tensor passes); fused it reads x and residual and writes y and h (four). Versions (one module
each): ``one_row`` (one program per row, whole row in one block), ``looped`` (chunked two-pass rows,
any width), ``tuned`` (rows per program from measured configs, compiled-kernel launches).
Baselines: eager PyTorch, ``torch.compile`` and Liger-Kernel's fused_add_rms_norm.
"""

from kprof.kernels.add_rmsnorm.family import FAMILY
from kprof.registry import load_family_modules

load_family_modules(__name__, __path__)

__all__ = ["FAMILY"]
