"""The ops' versions (``kprof.kernels.ops_providers.BEST``) launch on a GPU as their op launches them: the first
call makes the op's plan for the signature, later calls take it, so the host time ``kprof profile`` measures for
the version is the host time a model pays for the op (through the checks on every call it was 2-5x that on H200s:
``benchmarks/results/grid/rmsnorm_linear-op-launch-c165dc9/``). Every call is checked against the float64 oracle.
Each family keeps its op's plan in its own folder, so launching through it widens no family's revision closure
(``tests/toolkit/test_closure.py``)."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.add_rmsnorm import op_plan as add_plan
from kprof.kernels.kasmina import op_plan as kasmina_plan
from kprof.kernels.lib import gated
from kprof.kernels.ops_providers import BEST, PREPARED_OP
from kprof.kernels.rmsnorm_linear import op_plan as rl_plan
from kprof.kernels.swiglu import op_plan as swiglu_plan
from tests.kernels.ops_paths import triton_ops

FAMILIES = discover()
PLANS = {
    "add_rmsnorm": add_plan.PLANS,
    "silu_mul": gated.PLANS,
    "gelu_mul": gated.PLANS,
    "swiglu": swiglu_plan.PLANS,
    "rmsnorm_linear": rl_plan.PLANS,
    "kasmina": kasmina_plan.PLANS,
}
# shapes where each op plans (the split swiglu launches do not), odd sizes, and some of an H200's classes (few rows'
# column tiles, the whole row through the one-row kernel, add_rmsnorm's few bf16 rows)
SHAPES = {
    "add_rmsnorm": [(7, 4096), (129, 1000), (32, 6144)],
    "silu_mul": [(5, 2 * 4104), (3000, 2 * 1000), (8, 2 * 4096), (400, 2 * 8192)],
    "gelu_mul": [(5, 2 * 4104), (3000, 2 * 1000), (8, 2 * 4096), (400, 2 * 8192)],
    "swiglu": [(3, 4096, 11008), (200, 1000, 3000)],
    "rmsnorm_linear": [(1, 2048, 5504), (300, 1000, 3000)],
    "kasmina": [(64, 1000, 64), (5, 77, 40)],
}


def test_every_op_with_a_plan_is_covered():
    # rmsnorm's version has a plan of its own (ops.rms_norm calls it)
    assert {ref.split("/")[0] for ref in BEST.values()} - {"rmsnorm"} == set(PLANS)


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


# rows that take each of the prepared objects' routes: decode rows (the split-K kernel on the fold, where the plain
# op runs split-K), 17-32 rows (the plain op on a GPU), 33-999 (raced on a GPU; every row count under the interpreter
# takes the fold's kernels) and 1000+ rows
PREPARED_SHAPES = {
    "rmsnorm_linear": [(1, 96, 40), (3, 5, 64, 72), (20, 64, 48), (150, 96, 80), (1003, 64, 48)],
    "swiglu": [(2, 64, 40), (1001, 64, 48)],
}


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize(("family", "shape"), [(f, s) for f, shapes in PREPARED_SHAPES.items() for s in shapes])
def test_the_prepared_op_version_computes_what_the_prepared_object_computes(family, shape, dtype, device):
    """``triton_prepared_op`` (``ops_providers.PREPARED_OP``) is the object's own route, which ``kprof grid`` holds to
    the best version: on the same inputs it gives the object's output bit for bit, and both match the oracle."""
    fam = FAMILIES[family]
    provider = PREPARED_OP[{"rmsnorm_linear": "rms_norm_linear", "swiglu": "swiglu"}[family]].split("/")[1]
    inputs = fam.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    with triton_ops():
        if family == "swiglu":
            obj = ops.PreparedSwiGLU(inputs["w_gate"], inputs["w_up"])
            held = obj(inputs["x"])
        else:
            obj = ops.PreparedRMSNormLinear(inputs["g"], inputs["w"])
            held = obj(inputs["x"], inputs["b"], inputs["eps"])
        out = fam.providers[provider].fn(**inputs)
    assert torch.equal(out, held)  # the catalog's tests hold the version to the oracle
