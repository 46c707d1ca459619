"""rmsnorm_linear's dispatch (``triton_tuned``, what the plain op of ``kprof.kernels.ops`` runs): the rule's
boundaries, and both of its products against the float64 oracle, through the provider and through the ops
API's first and planned calls."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.lib import fastops
from kprof.kernels.rmsnorm_linear import tuned

FAM = discover()["rmsnorm_linear"]


def test_the_rule_switches_at_its_declared_boundaries():
    wide, narrow = tuned.NARROW_MAX_COLS + 1, tuned.NARROW_MAX_COLS
    big_k, small_k = tuned.DECODE_MAX_K + 1, tuned.DECODE_MAX_K
    for m in (1, tuned.DECODE_ROWS, tuned.CUBLAS_MIN_ROWS):
        for k in (small_k, big_k):
            assert tuned.cublas_product(m, k, narrow)
            assert tuned.cublas_product(tuned.CUBLAS_MIN_ROWS + m, k, wide)
    assert not tuned.cublas_product(tuned.CUBLAS_MIN_ROWS - 1, small_k, wide)
    assert not tuned.cublas_product(tuned.DECODE_ROWS, small_k, wide)
    assert tuned.cublas_product(tuned.DECODE_ROWS - 1, small_k, wide)
    assert not tuned.cublas_product(tuned.DECODE_ROWS - 1, big_k, wide)
    assert not tuned.cublas_product(1, big_k, wide)


# (rows, K, N), odd sizes on each side of the rule with its limits scaled down (the interpreter takes minutes
# over a product past the real ones): few rows, K past DECODE_MAX_K and a weight wider than NARROW_MAX_COLS
# take the Triton product
SMALL_LIMITS = {"NARROW_MAX_COLS": 24, "DECODE_MAX_K": 32}
SHAPES = [(3, 41, 29), (5, 37, 19), (6, 23, 29)]


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_both_products_match_the_oracle(shape, dtype, device, monkeypatch):
    for name, value in SMALL_LIMITS.items():
        monkeypatch.setattr(tuned, name, value)
    m, k, n = shape
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    ref = FAM.oracle(**inputs)
    tol = FAM.tolerances[dtype]
    outs = {"provider": FAM.providers["triton_tuned"].fn(**inputs)}
    previous = ops.use_triton(True)
    try:
        fastops.reset()
        outs["ops first call"] = ops.rms_norm_linear(**inputs)
        outs["ops planned call"] = ops.rms_norm_linear(**inputs)
        ((_, (_, product, _, _)),) = fastops._product_plans.plans.items()
    finally:
        ops.use_triton(previous)
        fastops.reset()
    assert (product is fastops.CUBLAS) == tuned.cublas_product(m, k, n)
    for name, out in outs.items():
        assert out.shape == (m, n) and out.dtype == inputs["x"].dtype
        err = float((out.double() - ref).norm() / ref.norm())
        assert err <= tol, f"{name} {shape} {dtype}: rel err {err:.2e} (tolerance {tol})"
