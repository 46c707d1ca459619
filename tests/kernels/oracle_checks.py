"""One output against its family's float64 oracle, for the kernels' tests."""

from __future__ import annotations

import torch

from kprof.registry import Family


def assert_matches_oracle(fam: Family, out: torch.Tensor, inputs: dict, dtype: str, what: str) -> None:
    """``out`` has the oracle's shape and x's dtype, and is within the family's tolerance for ``dtype`` of it (relative
    error in the Frobenius norm)."""
    ref = fam.oracle(**inputs)
    tol = fam.tolerances[dtype]
    assert out.shape == ref.shape and out.dtype == inputs["x"].dtype
    err = float((out.double() - ref).norm() / ref.norm())
    assert err <= tol, f"{what}: rel err {err:.2e} (tolerance {tol})"
