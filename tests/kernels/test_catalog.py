"""Every version of every discovered family against its float64 oracle, through the harness's own check
(outputs poisoned with NaN first, fresh random inputs per test, odd shapes, every dtype), and the house
rules checked for every family: at least two Triton versions, a torch.compile peer, an oracle, a sweep.

The families come from discovery (``kprof.kernels.discover``): a new family folder is under these tests
with no list to edit here.

On a machine without a GPU the Triton versions run in Triton's interpreter; on a GPU, compiled.
"""

from __future__ import annotations

import pytest
import torch

from kprof.harness import check_correctness
from kprof.kernels import discover
from kprof.registry import YARDSTICK_KINDS, Case

FAMILIES = discover()
CATALOG = sorted(FAMILIES)


def _cases():
    for name in CATALOG:
        fam = FAMILIES[name]
        sweep = fam.sweep("interpreter")
        for p in fam.providers.values():
            if p.gpu_only and not torch.cuda.is_available():
                continue
            for shape in sweep.shapes:
                for dtype in sweep.dtypes:
                    case_id = f"{name}-{p.name}-{'x'.join(map(str, shape))}-{dtype}"
                    yield pytest.param(name, p.name, shape, dtype, id=case_id)


@pytest.mark.parametrize("family,provider,shape,dtype", list(_cases()))
def test_matches_oracle(family, provider, shape, dtype, device):
    fam = FAMILIES[family]
    prov = fam.providers[provider]
    if prov.unavailable_reason():  # an optional peer not installed here (Liger on a GPU machine without it)
        pytest.skip(prov.unavailable_reason())
    if prov.unsupported_reason(shape, dtype):
        pytest.skip(prov.unsupported_reason(shape, dtype))
    inputs = fam.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    corr = check_correctness(fam, prov, Case(family, provider, shape, dtype), inputs)
    assert corr.ok, f"{family}/{provider} {shape} {dtype}: {corr.note} (rel err {corr.rel_err:.2e})"
    if prov.kind not in YARDSTICK_KINDS:
        assert corr.rel_err <= fam.tolerances[dtype]


@pytest.mark.parametrize("family", CATALOG)
def test_every_family_keeps_the_house_rules(family):
    fam = FAMILIES[family]
    assert len(fam.triton_providers()) >= 2, f"{family}: fewer than two Triton versions to compare"
    compile_peers = [p.name for p in fam.providers.values() if p.kind == "compile"]
    assert compile_peers, f"{family}: no torch.compile peer (a provider of kind 'compile')"
    assert callable(fam.oracle), f"{family}: no float64 oracle"
    gpu = fam.sweep("gpu")
    assert gpu.shapes and "bf16" in gpu.dtypes
    for shape in gpu.shapes:  # the models cover every default shape
        assert fam.bytes_model(shape, "bf16") > 0 and fam.flops_model(shape, "bf16") > 0


@pytest.mark.parametrize("family", CATALOG)
def test_inputs_are_random_and_never_zero(family, device):
    fam = FAMILIES[family]
    shape = fam.sweep("interpreter").shapes[-1]
    a = fam.make_inputs(shape, "fp32", device, seed=1)
    b = fam.make_inputs(shape, "fp32", device, seed=2)
    for key, t in a.items():
        if isinstance(t, torch.Tensor) and t.dtype.is_floating_point:
            assert t.abs().max() > 0 and (t != 0).float().mean() > 0.99, key
            assert not torch.equal(t, b[key]), f"{key} does not depend on the seed"


def test_a_wrong_output_fails_loudly(device):
    """The check catches a version that returns the wrong (y, h) pairing or a broken telemetry."""
    fam = FAMILIES["add_rmsnorm"]
    inputs = fam.make_inputs((6, 200), "bf16", device, seed=3)
    swapped = type(fam.providers["torch_eager"])(
        family="add_rmsnorm",
        name="swapped",
        kind="eager",
        description="",
        fn=lambda **kw: tuple(reversed(fam.providers["torch_eager"].fn(**kw))),
    )
    assert not check_correctness(fam, swapped, Case("add_rmsnorm", "swapped", (6, 200), "bf16"), inputs).ok
    kas = FAMILIES["kasmina"]
    kin = kas.make_inputs((8, 5, 16), "fp32", device, seed=4)

    def bad_telemetry(**kw):
        y, tele = kas.providers["torch_vectorised"].fn(**kw)
        return y, tele * 1.01  # 1% off in the small output only

    bad = type(kas.providers["torch_loop"])(
        family="kasmina", name="bad", kind="eager", description="", fn=bad_telemetry
    )
    corr = check_correctness(kas, bad, Case("kasmina", "bad", (8, 5, 16), "fp32"), kin)
    assert not corr.ok and corr.rel_err > 5e-3


@pytest.mark.parametrize("family", ["silu_mul", "gelu_mul"])
def test_liger_s_gated_peers_declare_the_h_they_refuse(family):
    """Liger's gated kernels take H in one block of at most 65536: past it the peer says why it is not run (a grid point
    lists it as unsupported, a race leaves it out) rather than raising inside a case."""
    liger = FAMILIES[family].providers["liger"]
    assert liger.unsupported_reason((8, 2 * 65536), "bf16") is None
    assert liger.unsupported_reason((3, 5, 2 * 40000), "fp16") is None
    reason = liger.unsupported_reason((1, 2 * 65537), "bf16")
    assert reason and "65536" in reason and "65537" in reason
