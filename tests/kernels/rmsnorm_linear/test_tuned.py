"""rmsnorm_linear's dispatch (``triton_tuned``, what the plain op of ``kprof.kernels.ops`` runs): the rule's
boundaries, and both of its products against the float64 oracle, through the provider and through the ops
API's first and planned calls."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.lib.plans import CUBLAS
from kprof.kernels.rmsnorm_linear import op_plan, tuned
from tests.kernels.ops_paths import triton_ops

FAM = discover()["rmsnorm_linear"]


def test_the_rule_switches_at_its_declared_boundaries():
    wide, narrow = tuned.NARROW_MAX_COLS + 1, tuned.NARROW_MAX_COLS
    for k in (64, 8192):  # the rule does not look at K
        for n in (narrow, wide):
            assert tuned.cublas_product(1, k, n)
            assert not tuned.cublas_product(2, k, n)
            assert not tuned.cublas_product(tuned.TRITON_MAX_ROWS, k, n)
            assert tuned.cublas_product(tuned.CUBLAS_MIN_ROWS, k, n)
        assert tuned.cublas_product(tuned.TRITON_MAX_ROWS + 1, k, narrow)
        assert not tuned.cublas_product(tuned.TRITON_MAX_ROWS + 1, k, wide)
        assert not tuned.cublas_product(tuned.CUBLAS_MIN_ROWS - 1, k, wide)
        # weights narrower than the grid's: cuBLAS at every row count
        assert tuned.cublas_product(2, k, tuned.TRITON_MIN_COLS - 1)
        assert not tuned.cublas_product(2, k, tuned.TRITON_MIN_COLS)


def test_an_h200_takes_cublas_at_17_to_32_16_bit_rows(monkeypatch):
    """On an H200 (``launching.fast_memory``), 17-32 16-bit rows that the split-K kernel does not take go to cuBLAS's
    product at any width; 16 and 33 rows, float32 and an H100 keep the rule's route (on the CPU no race runs)."""
    lo, hi = tuned.FAST_MEMORY_CUBLAS_ROWS
    assert (lo, hi) == (tuned.SPLIT_K_ROWS[-1] + 1, tuned.TRITON_MAX_ROWS)

    def route(m: int, n: int, dtype: torch.dtype) -> str:
        return tuned.product_route(torch.empty(m, 4096, dtype=dtype), torch.empty(4096, n, dtype=dtype))

    for dtype in (torch.bfloat16, torch.float16):
        assert route(lo, 14336, dtype) == route(hi, 28672, dtype) == "triton"  # an H100: the rule's Triton product
    monkeypatch.setattr(tuned.launching, "fast_memory", lambda t: True)
    for dtype in (torch.bfloat16, torch.float16):
        for m in (lo, 24, hi):
            for n in (6144, 10240, 14336, 28672):
                assert route(m, n, dtype) == "cublas", (m, n, dtype)
        assert route(hi + 1, 28672, dtype) == "triton"  # 33 rows: the rule's (the race's default on a GPU)
    assert route(24, 14336, torch.float32) == "triton"  # float32: not measured
    assert route(16, 14336, torch.bfloat16) == "split_k"


def test_ragged_weights_take_cublas_in_16_bit_only():
    bf16 = torch.bfloat16
    for (k, n), ragged in [((1000, 3000), True), ((4104, 11000), True), ((4096, 11008), False), ((1001, 3000), False)]:
        assert tuned.ragged_weights(torch.empty(3, k, dtype=bf16), torch.empty(k, n, dtype=bf16)) == ragged, (k, n)
    x, w = torch.empty(3, 1000, dtype=torch.float16), torch.empty(1000, 3000, dtype=torch.float16)
    assert tuned.ragged_weights(x, w) and not tuned.ragged_weights(x.float(), w.float())  # fp32: not measured
    assert not tuned.ragged_weights(x, torch.empty(3000, 1000, dtype=torch.float16).t())  # W column-major


# (rows, K, N), odd sizes on each side of the rule with its limits scaled down (the interpreter takes minutes
# over a product past the real ones): one row and more than TRITON_MAX_ROWS rows of a weight up to
# NARROW_MAX_COLS wide take cuBLAS, 2 to TRITON_MAX_ROWS rows and wider weights the Triton product; 3x40x24
# (K a multiple of 8, not of 16) the Triton product's rows and width, but a ragged weight: cuBLAS in 16-bit
SMALL_LIMITS = {"NARROW_MAX_COLS": 24, "TRITON_MAX_ROWS": 4, "TRITON_MIN_COLS": 16}
SHAPES = [(1, 41, 29), (3, 37, 19), (6, 23, 29), (5, 37, 19), (3, 40, 24)]


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
    with triton_ops():
        outs["ops first call"] = ops.rms_norm_linear(**inputs)
        outs["ops planned call"] = ops.rms_norm_linear(**inputs)
        ((_, (_, product, _, _)),) = op_plan.PLANS.plans.items()
    x2d = inputs["x"].view(-1, k)
    assert (product is CUBLAS) == (tuned.cublas_product(m, k, n) or tuned.ragged_weights(x2d, inputs["w"]))
    assert (product is CUBLAS) == (shape in [(1, 41, 29), (5, 37, 19)] or (shape == (3, 40, 24) and dtype != "fp32"))
    for name, out in outs.items():
        assert out.shape == (m, n) and out.dtype == inputs["x"].dtype
        err = float((out.double() - ref).norm() / ref.norm())
        assert err <= tol, f"{name} {shape} {dtype}: rel err {err:.2e} (tolerance {tol})"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("shape", [(1, 2048, 5504), (16, 4096, 11008), (5, 1000, 3000), (2048, 2048, 5504)])
def test_the_provider_on_a_gpu_launches_as_the_op_does(shape, dtype):
    """On a GPU ``triton_tuned`` is the op's launch: its first call makes the op's plan for the signature (so what
    kprof profile measures of its host time is the op's), its later calls take that plan, and every call matches
    the float64 oracle (split-K at decode sizes, cuBLAS at ragged-8 weights and from 1000 rows)."""
    inputs = FAM.make_inputs(shape, dtype, "cuda", seed=torch.seed() % 2**31)
    ref, tol = FAM.oracle(**inputs), FAM.tolerances[dtype]
    prov = FAM.providers["triton_tuned"].fn
    with triton_ops():
        outs = {"provider first call": prov(**inputs)}
        assert len(op_plan.PLANS.plans) == 1
        outs["provider planned call"] = prov(**inputs)
        outs["ops planned call"] = ops.rms_norm_linear(**inputs)
        assert len(op_plan.PLANS.plans) == 1
    for name, out in outs.items():
        err = float((out.double() - ref).norm() / ref.norm())
        assert err <= tol, f"{name} {shape} {dtype}: rel err {err:.2e} (tolerance {tol})"
