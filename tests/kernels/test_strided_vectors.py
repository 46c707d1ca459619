"""Every Triton version of every family given a vector input (a bias, a norm weight, per-seed state) as a strided view,
the same values as the contiguous one: its output is the oracle's. The kernels load vector element i at ``ptr + i``,
so a version that passes a strided view straight to them reads other elements (the ops API copied its vectors
first; the versions themselves did not: eight of rmsnorm_linear's and two of kasmina's were off by relative errors
of 0.5 to 1e36)."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover

FAMILIES = discover()
# one small shape a family's fp32 versions all take (kasmina: 2 x 5 seeds of 16 channels)
SHAPES = {
    "rmsnorm_linear": (3, 72, 40),
    "swiglu": (3, 72, 40),
    "rmsnorm": (3, 72),
    "add_rmsnorm": (3, 72),
    "silu_mul": (3, 72),
    "gelu_mul": (3, 72),
    "kasmina": (2, 5, 16),
}


def _vectors(family: str) -> list[str]:
    """The names of a family's 1-D tensor inputs (none for swiglu, silu_mul and gelu_mul)."""
    inputs = FAMILIES[family].make_inputs(SHAPES[family], "fp32", "cpu", seed=0)
    return [key for key, v in inputs.items() if isinstance(v, torch.Tensor) and v.dim() == 1]


CASES = [
    (family, provider.name)
    for family, shape in SHAPES.items()
    if _vectors(family)
    for provider in FAMILIES[family].triton_providers()
    if provider.unsupported_reason(shape, "fp32") is None
]


def _first(out: object) -> torch.Tensor:
    return out[0] if isinstance(out, (tuple, list)) else out


def test_every_family_is_covered():
    assert set(SHAPES) == set(FAMILIES), "a new family: give it a shape here"
    assert {f for f, _ in CASES} == {"rmsnorm_linear", "rmsnorm", "add_rmsnorm", "kasmina"}


@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f}/{n}" for f, n in CASES])
def test_a_strided_vector_gives_the_oracles_output(family, name, device):
    fam = FAMILIES[family]
    inputs = fam.make_inputs(SHAPES[family], "fp32", device, seed=torch.seed() % 2**31)
    ref = _first(fam.oracle(**inputs)).double()
    for key in _vectors(family):
        v = inputs[key]
        strided = torch.empty(2 * v.numel(), dtype=v.dtype, device=device)[::2].copy_(v)
        out = _first(fam.providers[name].fn(**{**inputs, key: strided})).double()
        err = float((out - ref).norm() / ref.norm())
        assert err <= fam.tolerances["fp32"], f"{family}/{name} with a strided {key}: rel err {err:.3g}"
