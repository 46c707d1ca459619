"""swiglu's split-K kernel (both products over a share of K, the last program of a column tile adds the parts and
applies silu * mul): against the float64 oracle at odd shapes, split counts and dtypes; where the op takes it
(``split_k.ops_config``) through the provider and the ops API's first and planned calls; on a GPU, the ops
API's planned calls of both split-K kernels at decode shapes."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.lib import launching, plans
from kprof.kernels.lib import split_k as lib_split_k
from kprof.kernels.rmsnorm_linear import op_plan as rl_op_plan
from kprof.kernels.swiglu import op_plan, split_k
from tests.kernels.ops_paths import triton_ops
from tests.kernels.oracle_checks import assert_matches_oracle

FAM = discover()["swiglu"]


def _check(out: torch.Tensor, inputs: dict, dtype: str, what: str) -> None:
    assert_matches_oracle(FAM, out, inputs, dtype, what)


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("shape", [(1, 97, 45), (3, 130, 33), (17, 70, 50)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("splits", [1, 3, 64])  # 64: more than K has steps, so the launch trims it
@pytest.mark.parametrize("masked", [False, True], ids=["rows wrapped", "rows masked"])
def test_the_kernel_matches_the_oracle(shape, dtype, splits, masked, device):
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
    y = torch.full((shape[0], shape[2]), float("nan"), dtype=x.dtype, device=device)
    meta, _ = split_k.launch_split_k(x, wg, wu, y, lib_split_k.config(16, 32, 32, splits, 4, 3, MASK_ROWS=masked))
    assert meta["MASK_ROWS"] == masked
    _check(y, inputs, dtype, f"{shape} {dtype} split {splits} masked {masked}")
    assert all(int(c.abs().sum()) == 0 for c in launching._COUNTERS.values())


def test_the_op_takes_the_kernel_only_where_it_was_raced():
    def cfg(m, k, n, dtype=torch.bfloat16):
        return split_k.ops_config(torch.empty((m, k), dtype=dtype), n)

    assert cfg(1, 2048, 11008) is not None and cfg(16, 8192, 28672) is not None
    assert cfg(17, 2048, 11008) is None  # more rows than raced
    assert cfg(16, 2048, split_k.OPS_MIN_COLS - 1) is None  # ~5504 columns: the pinned tiled kernel as fast
    assert cfg(16, split_k.MIN_K - 1, 11008) is None
    assert cfg(4, 4096, 11008, torch.float32) is None  # not raced
    assert cfg(4, 4096, 11008, torch.float16).kwargs["SPLIT_K"] == 1  # the table's classes are all unsplit
    for m in range(1, split_k.MASKED_MAX_ROWS + 1):  # a row or two: rows past M masked, from ~5504 columns
        assert cfg(m, 2048, 5504).kwargs["MASK_ROWS"] and cfg(m, 2048, 11008).kwargs["MASK_ROWS"]
        assert cfg(m, 2048, split_k.MASKED_MIN_COLS - 1) is None
    assert cfg(split_k.MASKED_MAX_ROWS + 1, 2048, 5504) is None
    assert not cfg(split_k.MASKED_MAX_ROWS + 1, 2048, 11008).kwargs["MASK_ROWS"]


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("rows", [5, 2])  # 2: a tile's rows past M masked
def test_the_op_runs_the_kernel_through_provider_and_plans(dtype, rows, device, monkeypatch):
    """With the limits scaled down (the interpreter takes minutes over a real decode weight): the provider, the
    ops API's first call and its plan (the unsplit kernel) in bf16 and fp16; fp32 keeps the tiled kernel."""
    monkeypatch.setattr(split_k, "OPS_MIN_COLS", 16)
    monkeypatch.setattr(split_k, "MASKED_MIN_COLS", 16)
    monkeypatch.setattr(split_k, "MIN_K", 16)
    monkeypatch.setattr(split_k, "column_class", lambda n: 11008)
    shape = (rows, 70, 40)
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    taken = dtype != "fp32"
    assert (split_k.ops_config(inputs["x"], 40) is not None) == taken
    outs = {"provider": FAM.providers["triton_tuned"].fn(**inputs)}
    with triton_ops():
        outs["ops first call"] = ops.swiglu(**inputs)
        outs["ops planned call"] = ops.swiglu(**inputs)
        outs["ops planned call again"] = ops.swiglu(**inputs)
        ((_, (_, out_shape, unsplit)),) = op_plan.PLANS.plans.items()
    assert unsplit == taken and out_shape == (rows, 40)
    for name, out in outs.items():
        _check(out, inputs, dtype, name)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_gpu_planned_calls_of_both_split_k_kernels(dtype):
    """At decode shapes the dispatch sends to them: planned calls reach the compiled launch and match the
    oracle (swiglu unsplit; rmsnorm_linear split and unsplit)."""
    from kprof.kernels.rmsnorm_linear import tuned as rl_tuned

    rl = discover()["rmsnorm_linear"]
    cases = [("swiglu", (4, 2048, 11008)), ("rmsnorm_linear", (4, 2048, 28672))]
    if dtype == "bf16":
        cases.append(("rmsnorm_linear", (1, 2048, 5504)))
    with triton_ops():
        for family, shape in cases:
            plans.reset()
            fam = FAM if family == "swiglu" else rl
            inputs = fam.make_inputs(shape, dtype, "cuda", seed=torch.seed() % 2**31)
            op = ops.swiglu if family == "swiglu" else ops.rms_norm_linear
            if family == "rmsnorm_linear":
                assert rl_tuned.split_k_product(shape[0], shape[1], shape[2], inputs["x"].dtype)
            outs = [op(**inputs) for _ in range(4)]
            torch.cuda.synchronize()
            table = op_plan.PLANS if family == "swiglu" else rl_op_plan.PLANS
            ((_, plan),) = table.plans.items()
            launch = plan[0] if family == "swiglu" else plan.launch
            assert launch.entry is not None, f"{family} {shape}: the plan never reached its compiled launch"
            ref = fam.oracle(**inputs)
            for out in outs:
                err = float((out.double() - ref).norm() / ref.norm())
                assert err <= fam.tolerances[dtype], f"{family} {shape} {dtype}: rel err {err:.2e}"
