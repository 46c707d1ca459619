"""The ops API's Triton path for a test (``kprof.kernels.ops``): on, with no launch plan left by an earlier test,
and both the switch and the plans restored after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kprof.kernels import ops
from kprof.kernels.lib import plans


@contextlib.contextmanager
def triton_ops() -> Iterator[None]:
    previous = ops.use_triton(True)
    plans.reset()
    try:
        yield
    finally:
        ops.use_triton(previous)
        plans.reset()
