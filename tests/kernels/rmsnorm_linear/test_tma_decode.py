"""rmsnorm_linear's TMA decode kernel (x and the folded weight by TMA descriptors, one program per 64 columns): against
the float64 oracle at odd shapes in both 16-bit dtypes, with and without a bias; what it refuses and why; where the
prepared objects take it (first and planned calls alike) and where they do not."""

from __future__ import annotations

import pytest
import torch

from kprof.errors import UnsupportedConfig
from kprof.kernels import discover, ops
from kprof.kernels.lib import launching
from kprof.kernels.rmsnorm_linear import op_plan, tma_decode
from kprof.kernels.rmsnorm_linear.fused import folded_weight
from tests.kernels.ops_paths import triton_ops
from tests.kernels.oracle_checks import assert_matches_oracle

FAM = discover()["rmsnorm_linear"]
PROVIDER = FAM.providers["triton_tma_decode_prepared"]


def _check(out: torch.Tensor, inputs: dict, dtype: str, what: str) -> None:
    assert_matches_oracle(FAM, out, inputs, dtype, what)


# (rows, K, N): one row, a partial row tile, a full one; K ending inside a 256-wide step (TMA zero-fills past K), N
# ending inside a 64-column tile; K and N multiples of 8 (TMA's 16-byte rows)
SHAPES = [(1, 264, 40), (3, 72, 136), (16, 520, 72), (7, 8, 8)]


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
def test_the_kernel_matches_the_oracle(shape, dtype, bias, device):
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    if not bias:
        inputs["b"] = None
    _check(PROVIDER.fn(**inputs), inputs, dtype, f"provider {shape} {dtype}")
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    y = torch.full((shape[0], shape[2]), float("nan"), dtype=x.dtype, device=device)
    run = tma_decode.launch_tma_decode(x, folded_weight(g, w), b, y, eps)
    assert run["HAS_BIAS"] is bias
    _check(y, inputs, dtype, f"kernel {shape} {dtype}")


def test_a_strided_bias_is_read_at_its_stride(device):
    """The kernel reads the bias at unit stride: a strided one is made contiguous first, not read between its values."""
    inputs = FAM.make_inputs((3, 72, 40), "bf16", device, seed=torch.seed() % 2**31)
    inputs["b"] = torch.randn(80, dtype=torch.bfloat16, device=device)[::2]
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    y = torch.empty((3, 40), dtype=x.dtype, device=device)
    tma_decode.launch_tma_decode(x, folded_weight(g, w), b, y, eps)
    _check(y, inputs, "bf16", "strided bias")


def test_batched_rows_match_the_oracle(device):
    """x of shape [2, 5, K]: the rows of every batch entry, y in x's leading shape."""
    inputs = FAM.make_inputs((2, 5, 136, 72), "bf16", device, seed=torch.seed() % 2**31)
    out = PROVIDER.fn(**inputs)
    assert out.shape == (2, 5, 72)
    _check(out, inputs, "bf16", "2x5 rows")


@pytest.mark.parametrize(
    ("shape", "dtype", "why"),
    [
        ((4, 64, 64), "fp32", "16-bit"),
        ((17, 64, 64), "bf16", "at most 16"),
        ((4, 60, 64), "bf16", "multiples of 8"),
        ((4, 64, 36), "fp16", "multiples of 8"),
    ],
)
def test_the_provider_says_which_shapes_it_does_not_take(shape, dtype, why):
    reason = PROVIDER.supports(shape, dtype)
    assert reason is not None and why in reason
    assert PROVIDER.supports((16, 3584, 4608), dtype if dtype != "fp32" else "bf16") is None


def test_the_launch_refuses_what_tma_cannot_read(device):
    inputs = FAM.make_inputs((17, 64, 64), "bf16", device, seed=1)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    y = torch.empty((17, 64), dtype=x.dtype, device=device)
    with pytest.raises(ValueError, match="at most 16 rows"):
        tma_decode.launch_tma_decode(x, folded_weight(g, w), b, y, eps)
    x32 = x[:4].float()
    with pytest.raises(UnsupportedConfig, match="16-bit"):
        tma_decode.launch_tma_decode(x32, folded_weight(g, w).float(), b.float(), y[:4].float(), eps)


def test_a_weight_stored_transposed_is_refused_not_misread(device):
    """W stored [N, K] (unit stride along K): its fold keeps that layout, which a TMA descriptor cannot read as [K, N]
    blocks, so the version says so (a skip with the reason in a sweep) and the prepared objects do not take it."""
    inputs = FAM.make_inputs((3, 72, 40), "bf16", device, seed=torch.seed() % 2**31)
    inputs["w"] = inputs["w"].t().contiguous().t()
    with pytest.raises(UnsupportedConfig, match="unit last stride"):
        PROVIDER.fn(**inputs)
    assert not tma_decode.serves(inputs["x"], folded_weight(inputs["g"], inputs["w"]))


def test_it_serves_only_the_range_raced_on_an_h200(monkeypatch, device):
    """Off an H200 never (the races were on H200s); on one, 16-bit rows 1-16 inside ``SERVES``, and nothing past it."""
    x = torch.randn(16, 3584, dtype=torch.bfloat16, device=device)
    w = torch.randn(3584, 4608, dtype=torch.bfloat16, device=device)
    if not launching.fast_memory(x):
        assert not tma_decode.serves(x, w)
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    assert tma_decode.serves(x, w) == launching.tma_ready(x, w)
    (k_lo, k_hi), (n_lo, n_hi) = tma_decode.SERVES
    assert not tma_decode.serves(x[:, : k_lo - 8], w[: k_lo - 8])
    assert not tma_decode.serves(torch.cat([x, x[:1]]), w)  # 17 rows
    assert not tma_decode.serves(x, w[:, : n_lo - 8])
    wide = torch.empty(3584, n_hi + 8, dtype=torch.bfloat16, device=device)
    assert not tma_decode.serves(x, wide)
    assert not tma_decode.serves(x.float(), w.float())


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize(
    "shape", [(1, 72, 64), (16, 136, 40), (17, 136, 40)], ids=["1x72x64", "16x136x40", "17x136x40"]
)
def test_the_prepared_objects_take_it_where_it_serves(shape, dtype, device, monkeypatch):
    """``ops.PreparedRMSNormLinear`` on an H200 (here: the range scaled down, the GPU's memory said fast) runs the
    kernel on its fold at 1-16 rows, first and planned calls alike; 17 rows take another route."""
    monkeypatch.setattr(tma_decode, "SERVES", ((64, 300), (40, 80)))
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    with triton_ops():
        prepared = ops.PreparedRMSNormLinear(g, w)
        first = prepared(x, b, eps)
        planned_call = prepared(x, b, eps)
        planned = list(op_plan.PREPARED_PLANS.plans.values())
    takes = shape[0] <= 16
    assert any(type(p) is op_plan.PreparedTMADecodePlan for p in planned) == takes
    if takes:
        assert torch.equal(first, planned_call)
    _check(first, inputs, dtype, f"first call {shape}")
    _check(planned_call, inputs, dtype, f"planned call {shape}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize(("m", "k", "n"), [(16, 3584, 4608), (3, 2048, 5120)], ids=["16x3584x4608", "3x2048x5120"])
def test_the_planned_launches_on_an_h200(m, k, n, dtype):
    """On an H200, where the prepared objects take the kernel: the plan's compiled launch (the two descriptors' encoding
    kept by the addresses of x and the fold) gives the oracle's answer for new inputs on every call. Two sets of
    inputs take turns, so later calls find their addresses kept; then the same addresses hold new values; then calls
    without a bias (a signature, and a plan, of their own: its first call checked, its second launched through the
    JIT, its third compiled, from its fourth with its descriptors kept)."""
    if not torch.cuda.is_available() or not launching.fast_memory(torch.empty(1, device="cuda")):
        pytest.skip("needs an H200 (the kernel serves only there)")
    inp = FAM.make_inputs((m, k, n), dtype, "cuda", seed=torch.seed() % 2**31)
    sets = [FAM.make_inputs((m, k, n), dtype, "cuda", seed=torch.seed() % 2**31) for _ in range(2)]
    with triton_ops():
        prepared = ops.PreparedRMSNormLinear(inp["g"], inp["w"])
        for i in range(12):
            new = sets[i % 2]
            if i >= 4:  # the same addresses, new values
                new["x"].copy_(torch.randn_like(new["x"]))
                new["b"].copy_(torch.randn_like(new["b"]))
            case = {**inp, "x": new["x"], "b": new["b"] if i < 8 else None}
            _check(prepared(new["x"], case["b"], inp["eps"]), case, dtype, f"call {i}")
        planned = [p for p in op_plan.PREPARED_PLANS.plans.values() if type(p) is op_plan.PreparedTMADecodePlan]
    assert len(planned) == 2  # with and without a bias
    for plan in planned:
        assert plan.product.entry is not None  # the compiled launch ran
        described = plan.product.described()
        assert described is not None and described.kept, "the launch took Triton's wrapper on every call"
