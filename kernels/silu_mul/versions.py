"""The Triton versions of silu_mul: one_row, tiled, tuned (kernels in ``kernels/lib/gated.py``)."""

from kprof.kernels.lib import gated
from kprof.kernels.silu_mul.family import FAMILY, OP

VERSIONS = gated.register_versions(FAMILY, gated.SILU, OP)
