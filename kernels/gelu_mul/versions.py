"""The Triton versions of gelu_mul: one_row, tiled, tuned (kernels in ``kernels/lib/gated.py``)."""

from kprof.kernels.gelu_mul.family import FAMILY, OP
from kprof.kernels.lib import gated

VERSIONS = gated.register_versions(FAMILY, gated.GELU_TANH, OP)
