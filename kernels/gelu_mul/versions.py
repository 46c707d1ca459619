"""The Triton versions of gelu_mul: one_row, tiled, tuned (kernels in ``kernels/_gated.py``)."""

from kprof.kernels import _gated as gated
from kprof.kernels.gelu_mul.family import FAMILY, OP

VERSIONS = gated.register_versions(FAMILY, gated.GELU_TANH, OP)
