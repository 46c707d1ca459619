"""kprof.kernels.ops on inputs a model gives that the launch plans once answered wrongly: inputs autograd records
(the Triton path records no graph), strided vectors (a bias ``b_all[::2]``, a column ``state[:, 0]`` of a per-seed
table), checked against the float64 oracles."""

from __future__ import annotations

import contextlib

import pytest
import torch

from kprof.kernels import discover, ops
from tests.kernels.ops_paths import triton_ops

F = discover()
OPS = {  # op -> (family, shape, float inputs that may require grad)
    "rms_norm": ("rmsnorm", (3, 40), ("x", "weight")),
    "fused_add_rms_norm": ("add_rmsnorm", (3, 40), ("x", "residual", "weight")),
    "silu_and_mul": ("silu_mul", (3, 40), ("x",)),
    "gelu_tanh_and_mul": ("gelu_mul", (3, 40), ("x",)),
    "swiglu": ("swiglu", (3, 16, 24), ("x", "w_gate", "w_up")),
    "rms_norm_linear": ("rmsnorm_linear", (3, 16, 24), ("x", "g", "w", "b")),
    "kasmina_forward": ("kasmina", (3, 4, 16), ("x", "alpha", "weights", "bias")),
}


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.detach().double() - ref).norm() / ref.norm())


def _grads(op: str, inputs: dict, names: tuple[str, ...]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The op's first output and the gradients of ``names`` for the loss ``sum(out * cos(arange))``."""
    leaves = {
        k: v.detach().clone().requires_grad_(k in names) if isinstance(v, torch.Tensor) else v
        for k, v in inputs.items()
    }
    out = getattr(ops, op)(**leaves)
    out = out[0] if isinstance(out, tuple) else out
    (out.float() * torch.cos(torch.arange(out.numel(), dtype=torch.float32)).view(out.shape)).sum().backward()
    return out, [leaves[k].grad for k in names]


@pytest.mark.parametrize("op", list(OPS))
def test_triton_path_keeps_the_gradients(op, device):
    """With the Triton path on, a call autograd records gives the eager path's output and gradients, and warns that
    it does: before, the Triton path returned an output without ``grad_fn``, so the inputs' gradients were silently
    missing."""
    family, shape, names = OPS[op]
    inputs = F[family].make_inputs(shape, "fp32", device, seed=11)
    want, want_grads = _grads(op, inputs, names)  # the eager path
    with triton_ops():
        with pytest.warns(UserWarning, match="torch.no_grad") as said:  # says why it is not the Triton path
            got, got_grads = _grads(op, inputs, names)
        with torch.no_grad():  # without grad, the Triton path itself (still the oracle's answer)
            plain = getattr(ops, op)(**inputs)
    assert said[0].filename == __file__, f"{op}: the warning names {said[0].filename}, not the caller"
    assert got.grad_fn is not None, op
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), op
    for name, g_, w_ in zip(names, got_grads, want_grads):
        assert g_ is not None and torch.allclose(g_, w_, rtol=1e-5, atol=1e-6), f"{op}: grad of {name}"
    ref = F[family].oracle(**inputs)
    ref = ref[0] if isinstance(ref, tuple) else ref
    plain = plain[0] if isinstance(plain, tuple) else plain
    assert _rel(plain, ref) <= F[family].tolerances["fp32"], op


def test_prepared_objects_keep_the_gradients(device):
    """The modules on the Triton path train: the weights get the eager path's gradients."""
    torch.manual_seed(3)
    x = torch.randn(5, 16, device=device)
    grads = []
    for enabled in (False, True):
        with (
            triton_ops() if enabled else torch.enable_grad(),
            pytest.warns(UserWarning) if enabled else contextlib.nullcontext(),
        ):
            torch.manual_seed(4)
            mlp, proj = ops.SwiGLU(16, 24, device=device), ops.RMSNormLinear(16, 24, device=device)
            (mlp(x).sum() + proj(x).square().sum()).backward()
            grads.append([p.grad for p in (*mlp.parameters(), *proj.parameters())])
    for g_, w_ in zip(*grads):
        assert g_ is not None and torch.allclose(g_, w_, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("prepared", [False, True])
def test_strided_bias(prepared, device):
    """A bias that is a strided view: the kernels' epilogues read it at unit stride, so the prepared object (its
    statistics-first kernels under the interpreter) added other elements to y (relative error near 1)."""
    fam = F["rmsnorm_linear"]
    inp = fam.make_inputs((5, 16, 24), "fp32", device, seed=7)
    x, g, w = inp["x"], inp["g"], inp["w"]
    b = torch.randn(24, 2, device=device)[:, 1]
    ref = fam.oracle(x, g, w, b)
    with triton_ops():
        op = ops.PreparedRMSNormLinear(g, w) if prepared else (lambda x_, b_: ops.rms_norm_linear(x_, g, w, b_))
        for call in range(2):  # the second call launches from the signature's plan
            err = _rel(op(x, b), ref)
            assert err <= fam.tolerances["fp32"], f"call {call}: rel err {err:.2e}"


def test_strided_bias_on_the_triton_product_route(device):
    """The plain op's norm-then-Triton-product route (2-32 rows from 5000 columns: decode sizes on a GPU) reads the
    bias in its product's epilogue: a strided bias gave a relative error of 1.05."""
    fam = F["rmsnorm_linear"]
    inp = fam.make_inputs((2, 16, 5008), "fp32", device, seed=8)
    x, g, w = inp["x"], inp["g"], inp["w"]
    b = torch.randn(5008, 2, device=device)[:, 0]
    with triton_ops():
        err = _rel(ops.rms_norm_linear(x, g, w, b), fam.oracle(x, g, w, b))
    assert err <= fam.tolerances["fp32"], f"rel err {err:.2e}"


@pytest.mark.parametrize("name", ["lifecycle", "blueprint_id", "alpha"])
def test_kasmina_per_seed_columns_of_a_state_table(name, device):
    """Per-seed state read as a column of a table (``state[:, 0]``, stride 2): the kernels read it at unit
    stride and took other seeds' states (relative errors 0.4 to NaN)."""
    fam = F["kasmina"]
    inputs = fam.make_inputs((5, 4, 16), "fp32", device, seed=9)
    ref_y, ref_t = fam.oracle(**inputs)
    v = inputs[name]
    table = torch.zeros(v.shape[0], 2, dtype=v.dtype, device=device)
    table[:, 1] = v
    strided = dict(inputs, **{name: table[:, 1]})
    with triton_ops():
        for call in range(2):
            y, tele = ops.kasmina_forward(**strided)
            assert _rel(y, ref_y) <= fam.tolerances["fp32"], f"{name} call {call}"
            assert _rel(tele, ref_t) <= fam.tolerances["fp32"], f"{name} call {call}"
