"""swiglu's cuBLAS route (``triton_cublas_silu``: cuBLAS's two products, then kprof's silu_mul kernel) and where
the dispatch takes it: the rule's boundaries, and every path that can take it against the float64 oracle."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.lib import fastops
from kprof.kernels.swiglu import tuned

FAM = discover()["swiglu"]


def test_the_rule_takes_cublas_only_for_its_rows_and_narrow_weights():
    lo, hi, cols = tuned.CUBLAS_MIN_ROWS, tuned.TMA_MIN_ROWS, tuned.CUBLAS_MAX_COLS
    assert tuned.cublas_products(lo, cols) and tuned.cublas_products(hi - 1, 1)
    assert not tuned.cublas_products(lo - 1, cols)  # fewer rows: the pinned or autotuned tiles
    assert not tuned.cublas_products(hi, cols)  # the interleaved TMA kernel's rows
    assert not tuned.cublas_products(lo, cols + 1)


# The rule's limits scaled down (a product past the real ones takes the interpreter minutes): (rows, K, N)
# on each side of both limits; the first takes cuBLAS's products
SMALL_LIMITS = {"CUBLAS_MIN_ROWS": 4, "CUBLAS_MAX_COLS": 24}
SHAPES = [(5, 37, 19), (5, 37, 29), (3, 37, 19)]


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_path_matches_the_oracle_on_both_sides_of_the_rule(shape, dtype, device, monkeypatch):
    for name, value in SMALL_LIMITS.items():
        monkeypatch.setattr(tuned, name, value)
    m, _, n = shape
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    ref = FAM.oracle(**inputs)
    outs = {p: FAM.providers[p].fn(**inputs) for p in ("triton_cublas_silu", "triton_tuned", "triton_tuned_pointer")}
    previous = ops.use_triton(True)
    try:
        fastops.reset()
        outs["ops first call"] = ops.swiglu(**inputs)
        outs["ops planned call"] = ops.swiglu(**inputs)
        ((_, (launch, _, _)),) = fastops._swiglu_plans.plans.items()
    finally:
        ops.use_triton(previous)
        fastops.reset()
    assert (launch is fastops.CUBLAS) == tuned.cublas_products(m, n)
    tol = FAM.tolerances[dtype]
    for name, out in outs.items():
        assert out.shape == (m, n) and out.dtype == inputs["x"].dtype
        err = float((out.double() - ref).norm() / ref.norm())
        assert err <= tol, f"{name} {shape} {dtype}: rel err {err:.2e} (tolerance {tol})"
