"""swiglu's cuBLAS route (``triton_cublas_silu``: cuBLAS's two products, then kprof's silu_mul kernel) and where
the dispatch takes it: the rule's boundaries, and every path that can take it against the float64 oracle."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.lib.plans import CUBLAS
from kprof.kernels.swiglu import cublas_silu, op_plan, tuned
from tests.kernels.ops_paths import triton_ops

FAM = discover()["swiglu"]


def test_the_rule_takes_cublas_only_for_its_rows_and_narrow_weights():
    lo, hi, cols = tuned.CUBLAS_MIN_ROWS, tuned.TMA_MIN_ROWS, tuned.CUBLAS_MAX_COLS
    assert tuned.cublas_products(lo, cols) and tuned.cublas_products(hi - 1, 1)
    assert not tuned.cublas_products(lo - 1, cols)  # fewer rows: the pinned or autotuned tiles
    assert not tuned.cublas_products(hi, cols)  # the interleaved TMA kernel's rows
    assert not tuned.cublas_products(lo, cols + 1)


def test_ragged_shapes_take_cublas_from_their_rows_only():
    rows = tuned.RAGGED_CUBLAS_MIN_ROWS
    ragged, even, odd = (1000, 3000), (1024, 3072), (1001, 3000)  # (K, N): multiples of 8; of 16; neither
    bf16 = torch.bfloat16
    for m, (k, n), takes in [(rows, ragged, True), (rows - 1, ragged, False), (rows, even, False), (rows, odd, False)]:
        assert tuned.ragged_products(torch.empty(m, k, dtype=bf16), torch.empty(k, n, dtype=bf16)) == takes, (m, k, n)
    assert tuned.ragged_products(torch.empty(rows, 1000, dtype=torch.float16), torch.empty(1000, 3000))
    assert not tuned.ragged_products(torch.empty(rows, 1000), torch.empty(1000, 3000))  # fp32: not measured
    assert not tuned.ragged_products(torch.empty(rows, 1000, dtype=bf16), torch.empty(3000, 1000).t())  # W column-major


# The rules' limits scaled down (a product past the real ones takes the interpreter minutes): (rows, K, N)
# on each side of both limits; the first takes cuBLAS's products. 5x40x32 is ragged (K a multiple of 8, not
# of 16) and wider than CUBLAS_MAX_COLS: cuBLAS from RAGGED_CUBLAS_MIN_ROWS rows; 3x40x32 has fewer.
SMALL_LIMITS = {"CUBLAS_MIN_ROWS": 4, "CUBLAS_MAX_COLS": 24, "RAGGED_CUBLAS_MIN_ROWS": 4}
SHAPES = [(5, 37, 19), (5, 37, 29), (3, 37, 19), (5, 40, 32), (3, 40, 32)]


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_path_matches_the_oracle_on_both_sides_of_the_rule(shape, dtype, device, monkeypatch):
    for name, value in SMALL_LIMITS.items():
        monkeypatch.setattr(tuned, name, value)
    m, _, n = shape
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    ref = FAM.oracle(**inputs)
    outs = {p: FAM.providers[p].fn(**inputs) for p in ("triton_cublas_silu", "triton_tuned", "triton_tuned_pointer")}
    with triton_ops():
        outs["ops first call"] = ops.swiglu(**inputs)
        outs["ops planned call"] = ops.swiglu(**inputs)
        ((_, (launch, _, _)),) = op_plan.PLANS.plans.items()
    x2d = inputs["x"].view(-1, inputs["x"].shape[-1])
    assert (launch is CUBLAS) == (tuned.cublas_products(m, n) or tuned.ragged_products(x2d, inputs["w_gate"]))
    assert (launch is CUBLAS) == (shape == (5, 37, 19) or (shape == (5, 40, 32) and dtype != "fp32"))
    tol = FAM.tolerances[dtype]
    for name, out in outs.items():
        assert out.shape == (m, n) and out.dtype == inputs["x"].dtype
        err = float((out.double() - ref).norm() / ref.norm())
        assert err <= tol, f"{name} {shape} {dtype}: rel err {err:.2e} (tolerance {tol})"


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize(
    "shape", [(1, 37, 1), (5, 37, 19), (3, 40, 1500), (7, 16, 2049)], ids=lambda s: "x".join(map(str, s))
)
def test_cublas_on_interleaved_weights_then_the_pairs_pass_matches_the_oracle(shape, dtype, device):
    """One product on the interleaved weights (gate and up in each pair of columns), then the pairs pass: odd
    widths, one column, and more columns than one program's block (1024); into a new output and into one given.
    Under 8 outputs the error is taken over several draws together: one output alone is a dot product of 37 terms
    that may cancel to near zero, where its own relative error reads fp32's rounding as 1.6e-5 (about 0.5% of
    draws at 1x37x1)."""
    draws = -(-8 // (shape[0] * shape[2]))
    outs, refs = [], []
    for _ in range(draws):
        inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
        w_int = tuned.interleaved_weights(inputs["w_gate"], inputs["w_up"])
        out = cublas_silu.interleaved_product_then_silu(inputs["x"], w_int)
        assert out.shape == (shape[0], shape[2]) and out.dtype == inputs["x"].dtype
        outs.append(out.double().flatten())
        refs.append(FAM.oracle(**inputs).flatten())
    err = float((torch.cat(outs) - torch.cat(refs)).norm() / torch.cat(refs).norm())
    assert err <= FAM.tolerances[dtype], f"{shape} {dtype}: rel err {err:.2e} over {draws} draw(s)"
    given = torch.full_like(out, float("nan"))  # the tuned version's own output, written in place
    assert cublas_silu.interleaved_product_then_silu(inputs["x"], w_int, given) is given
    assert torch.equal(given, out)
