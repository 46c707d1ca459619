"""kprof.kernels.ops: both paths (eager PyTorch, and the best Triton version with KPROF_USE_TRITON=1)
compute the same function and reject the same bad input with the same message."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops

F = discover()
OPS = {  # op -> (family, shape)
    "rms_norm": ("rmsnorm", (5, 333)),
    "fused_add_rms_norm": ("add_rmsnorm", (2, 3, 257)),
    "silu_and_mul": ("silu_mul", (7, 666)),
    "gelu_tanh_and_mul": ("gelu_mul", (7, 666)),
    "swiglu": ("swiglu", (7, 33, 50)),
    "rms_norm_linear": ("rmsnorm_linear", (7, 33, 50)),
    "kasmina_forward": ("kasmina", (17, 3, 20)),
}


def _as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("op", list(OPS))
def test_both_paths_match_the_oracle(op, dtype, device, monkeypatch):
    family, shape = OPS[op]
    fam = F[family]
    inputs = fam.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    refs = _as_tuple(fam.oracle(**inputs))
    outs = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("KPROF_USE_TRITON", flag)
        assert ops.triton_enabled(inputs["x"]) == (flag == "1")
        outs[flag] = _as_tuple(getattr(ops, op)(**inputs))
        for o, r in zip(outs[flag], refs):
            assert o.dtype == inputs["x"].dtype or o.dtype == torch.float32
            err = float((o.double() - r).norm() / r.norm())
            assert err <= fam.tolerances[dtype], f"{op} KPROF_USE_TRITON={flag}: rel err {err:.2e}"


@pytest.mark.parametrize("flag", ["0", "1"])
def test_bad_input_same_error_both_ways(flag, device, monkeypatch):
    monkeypatch.setenv("KPROF_USE_TRITON", flag)
    x = torch.randn(4, 8, device=device)
    with pytest.raises(ValueError, match="expected \\(8,\\)"):
        ops.rms_norm(x, torch.randn(7, device=device))
    with pytest.raises(ValueError, match="even"):
        ops.silu_and_mul(torch.randn(4, 7, device=device))
    with pytest.raises(ValueError, match="residual has shape"):
        ops.fused_add_rms_norm(x, torch.randn(4, 9, device=device), torch.randn(8, device=device))
    with pytest.raises(ValueError, match="w_gate has shape"):
        ops.swiglu(x, torch.randn(7, 3, device=device), torch.randn(7, 3, device=device))
    with pytest.raises(ValueError, match="w has shape"):
        ops.rms_norm_linear(x, torch.randn(8, device=device), torch.randn(9, 3, device=device))


def test_kasmina_check_ids(device):
    inputs = F["kasmina"].make_inputs((4, 3, 16), "fp32", device, seed=5)
    ops.kasmina_forward(**inputs, check_ids=True)
    inputs["blueprint_id"][1] = 99
    with pytest.raises(ValueError, match="outside"):
        ops.kasmina_forward(**inputs, check_ids=True)


def test_best_names_real_providers():
    for op, target in ops.BEST.items():
        family, provider = target.split("/")
        assert F[family].providers[provider].is_triton, op
