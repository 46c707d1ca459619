"""kprof.kernels.ops' prepared objects and modules never answer from weights other than their current ones: a weight
given new storage (``w.data = new``) with content checks off (the GPU default), a compiled graph calling a prepared
object whose weights moved, a module whose parameter was replaced."""

from __future__ import annotations

import contextlib

import pytest
import torch

from kprof.kernels import discover, ops
from tests.kernels.ops_paths import triton_ops

F = discover()
BF16 = torch.bfloat16


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.detach().double() - ref).norm() / ref.norm())


def _swiglu_ok(out, x, wg, wu, tag):
    err = _rel(out, F["swiglu"].oracle(x, wg.detach(), wu.detach()))
    assert err <= F["swiglu"].tolerances["bf16"], f"{tag}: rel err {err:.2e}"


def _rl_ok(out, x, g, w, b, tag):
    err = _rel(out, F["rmsnorm_linear"].oracle(x, g.detach(), w.detach(), None if b is None else b.detach()))
    assert err <= F["rmsnorm_linear"].tolerances["bf16"], f"{tag}: rel err {err:.2e}"


def _refused_until_refreshed(mlp, proj, call_mlp, call_proj, x, how: str) -> None:
    """Both modules' calls (``call_*``: the modules or their compiled graphs) refuse until refreshed, then answer
    from the current weights."""
    for call in (call_mlp, call_proj):
        with pytest.raises(ops.StaleWeightsError, match="refresh"):
            call(x)
    mlp.refresh()
    proj.refresh()
    _swiglu_ok(call_mlp(x), x, mlp.w_gate, mlp.w_up, f"{how}SwiGLU after refresh")
    _rl_ok(call_proj(x), x, proj.g, proj.w, proj.b, f"{how}RMSNormLinear after refresh")


@contextlib.contextmanager
def _checking(enabled: bool):
    previous = ops.check_prepared(enabled)
    try:
        yield
    finally:
        ops.check_prepared(previous)


@pytest.mark.parametrize("how", ["data", "vector_to_parameters"])
def test_new_storage_without_refresh_is_refused_with_checks_off(how, device):
    """``w.data = new`` (and ``vector_to_parameters``, which does it) moves no version counter: with content checks
    off, as on a GPU by default, the objects answered from the old derived weights (relative error near 1)."""
    x = torch.randn(5, 16, device=device, dtype=BF16)
    with triton_ops(), _checking(False), torch.no_grad():
        mlp = ops.SwiGLU(16, 24, device=device, dtype=BF16)
        proj = ops.RMSNormLinear(16, 24, device=device, dtype=BF16)
        if mlp.prepared.w_int is None or proj.prepared.wf is None:
            pytest.skip("no derived weights on this device")
        for module in (mlp, proj):
            params = list(module.parameters())
            if how == "data":
                for p in params:
                    p.data = torch.randn_like(p)
            else:
                vec = torch.nn.utils.parameters_to_vector(params)
                torch.nn.utils.vector_to_parameters(torch.randn_like(vec), params)
        _refused_until_refreshed(mlp, proj, mlp, proj, x, "")


def test_compiled_prepared_calls_refuse_stale_weights(device):
    """A compiled graph calls the registered op with the derived weight and never ran the object's check: after an
    in-place update without refresh it answered from the old derived weights where the eager call refuses."""
    torch._dynamo.reset()
    x = torch.randn(5, 16, device=device, dtype=BF16)
    with triton_ops(), torch.no_grad():
        mlp = ops.SwiGLU(16, 24, device=device, dtype=BF16)
        proj = ops.RMSNormLinear(16, 24, device=device, dtype=BF16)
        if mlp.prepared.w_int is None or proj.prepared.wf is None:
            pytest.skip("no derived weights on this device")
        c_mlp = torch.compile(mlp, fullgraph=True, backend="aot_eager")
        c_proj = torch.compile(proj, fullgraph=True, backend="aot_eager")
        _swiglu_ok(c_mlp(x), x, mlp.w_gate, mlp.w_up, "compiled SwiGLU")
        _rl_ok(c_proj(x), x, proj.g, proj.w, proj.b, "compiled RMSNormLinear")
        mlp.w_gate.mul_(2.0)
        proj.w.mul_(2.0)
        _refused_until_refreshed(mlp, proj, c_mlp, c_proj, x, "compiled ")


def test_a_refreshed_objects_old_derived_weight_is_refused(device):
    """The registered op given a derived weight its object has since replaced (refresh) refuses it."""
    x = torch.randn(5, 16, device=device, dtype=BF16)
    with triton_ops(), torch.no_grad():
        prep = ops.PreparedSwiGLU(torch.randn(16, 24, dtype=BF16), torch.randn(16, 24, dtype=BF16))
        old = prep.w_int
        if old is None:
            pytest.skip("no derived weights on this device")
        prep.w_gate.mul_(2.0)
        prep.refresh()
        with pytest.raises(ops.StaleWeightsError, match="refreshed"):
            torch.ops.kprof.swiglu_prepared(x, prep.w_gate, prep.w_up, old)
        _swiglu_ok(
            torch.ops.kprof.swiglu_prepared(x, prep.w_gate, prep.w_up, prep.w_int),
            x,
            prep.w_gate,
            prep.w_up,
            "current derived weight",
        )


@pytest.mark.parametrize("enabled", [False, True])
def test_modules_follow_replaced_parameters(enabled, device):
    """``module.w = nn.Parameter(new)`` (tying, loading by assignment): the module's prepared object kept the old
    parameter and every call computed from it, on both paths (relative error near 1)."""
    x = torch.randn(5, 16, device=device, dtype=BF16)
    with triton_ops() if enabled else contextlib.nullcontext(), torch.no_grad():
        mlp = ops.SwiGLU(16, 24, device=device, dtype=BF16)
        proj = ops.RMSNormLinear(16, 24, device=device, dtype=BF16)
        mlp(x), proj(x)
        mlp.w_gate = torch.nn.Parameter(torch.randn_like(mlp.w_gate))
        proj.g = torch.nn.Parameter(1 + torch.randn_like(proj.g))
        proj.w = torch.nn.Parameter(torch.randn_like(proj.w))
        for call in range(2):
            _swiglu_ok(mlp(x), x, mlp.w_gate, mlp.w_up, f"SwiGLU call {call}")
            _rl_ok(proj(x), x, proj.g, proj.w, proj.b, f"RMSNormLinear call {call}")
