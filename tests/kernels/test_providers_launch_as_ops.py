"""The versions of the matrix ops and kasmina (``kprof.kernels.ops_providers.BEST``) launch on a GPU as their op
launches them: the first call makes the op's plan for the signature, later calls take it, so the host time
``kprof profile`` measures for the version is the host time a model pays for the op (through the checks on every
call it was 2-5x that on H200s: ``benchmarks/results/grid/rmsnorm_linear-op-launch-c165dc9/``). Every call is
checked against the float64 oracle."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover
from kprof.kernels.lib import fastops
from kprof.kernels.ops_providers import BEST
from tests.kernels.ops_paths import triton_ops

FAMILIES = discover()
PLANS = {
    "swiglu": fastops._swiglu_plans,
    "rmsnorm_linear": fastops._product_plans,
    "kasmina": fastops._kasmina_plans,
}
# rmsnorm's version has a plan of its own (ops.rms_norm calls it); add_rmsnorm's and the gated families' keep their
# checked launch: importing the plans would put every family's modules into their revision closure
# (tests/toolkit/test_closure.py)
OWN_LAUNCH = {"rmsnorm", "add_rmsnorm", "silu_mul", "gelu_mul"}
# shapes where each op plans (the split swiglu launches do not), odd sizes
SHAPES = {
    "swiglu": [(3, 4096, 11008), (200, 1000, 3000)],
    "rmsnorm_linear": [(1, 2048, 5504), (300, 1000, 3000)],
    "kasmina": [(64, 1000, 64), (5, 77, 40)],
}


def test_every_op_with_a_plan_is_covered():
    assert {ref.split("/")[0] for ref in BEST.values()} == set(PLANS) | OWN_LAUNCH


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize(("family", "shape"), [(f, s) for f, shapes in SHAPES.items() for s in shapes])
def test_the_ops_version_makes_and_takes_the_ops_plan(family, shape, dtype):
    fam = FAMILIES[family]
    provider = next(ref.split("/")[1] for ref in BEST.values() if ref.split("/")[0] == family)
    fn = fam.providers[provider].fn
    inputs = fam.make_inputs(shape, dtype, "cuda", seed=torch.seed() % 2**31)
    refs = fam.oracle(**inputs)
    refs = refs if isinstance(refs, tuple) else (refs,)
    with triton_ops():
        outs = [fn(**inputs)]
        assert len(PLANS[family].plans) == 1, f"{family}/{provider}: no plan after its first call"
        outs.append(fn(**inputs))
        assert len(PLANS[family].plans) == 1
    for call, out in zip(("first", "planned"), outs, strict=True):
        for ref, got in zip(refs, out if isinstance(out, tuple) else (out,), strict=True):
            err = float((got.double() - ref).norm() / ref.norm())
            assert err <= fam.tolerances[dtype], f"{family}/{provider} {shape} {dtype} {call} call: rel err {err:.2e}"
