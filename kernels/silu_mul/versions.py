"""The Triton versions of silu_mul: one_row, tiled, tuned (kernels in ``kernels/_gated.py``)."""

from kprof.kernels import _gated as gated
from kprof.kernels.silu_mul.family import FAMILY, OP

VERSIONS = gated.register_versions(FAMILY, gated.SILU, OP)
