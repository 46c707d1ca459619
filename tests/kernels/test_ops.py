"""kprof.kernels.ops: both paths (eager PyTorch, and the best Triton kernels) compute the same function, reject
the same bad input with the same message, never answer from stale derived weights, handle meta tensors,
and compile into one graph."""

from __future__ import annotations

import contextlib
import gc
import weakref

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.add_rmsnorm import op_plan as _add_plan
from kprof.kernels.kasmina import op_plan as _kasmina_plan
from kprof.kernels.lib import plans as _plans
from kprof.kernels.rmsnorm_linear import op_plan as _rl_plan
from kprof.kernels.swiglu import op_plan as _swiglu_plan
from kprof.kernels.swiglu import tuned as sw_tuned
from kprof.launch import DescribedLaunch

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
PATHS = [False, True]  # use_triton


@contextlib.contextmanager
def triton_path(enabled: bool):
    previous = ops.use_triton(enabled)
    try:
        yield
    finally:
        ops.use_triton(previous)


def _as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref).norm() / ref.norm())


def _seed() -> int:
    return torch.seed() % 2**31


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("op", list(OPS))
def test_both_paths_match_the_oracle(op, dtype, device):
    family, shape = OPS[op]
    fam = F[family]
    inputs = fam.make_inputs(shape, dtype, device, seed=_seed())
    refs = _as_tuple(fam.oracle(**inputs))
    for enabled in PATHS:
        with triton_path(enabled):
            assert ops.triton_enabled(inputs["x"]) == enabled
            for call in range(2):  # the second call with a signature goes through its launch plan
                outs = _as_tuple(getattr(ops, op)(**inputs))
                for o, r in zip(outs, refs):
                    assert o.dtype == inputs["x"].dtype or o.dtype == torch.float32
                    err = _rel(o, r)
                    assert err <= fam.tolerances[dtype], f"{op} triton={enabled} call {call}: rel err {err:.2e}"


@pytest.mark.parametrize("enabled", PATHS)
def test_bad_input_same_error_both_ways(enabled, device):
    x = torch.randn(4, 8, device=device)
    with triton_path(enabled):
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
        with pytest.raises(ValueError, match="dtype"):  # a plan exists for fp32 now: a bf16 weight must not use it
            ops.rms_norm(x, torch.randn(8, device=device))
            ops.rms_norm(x, torch.randn(8, device=device, dtype=torch.bfloat16))


def test_kasmina_check_ids(device):
    inputs = F["kasmina"].make_inputs((4, 3, 16), "fp32", device, seed=5)
    ops.kasmina_forward(**inputs, check_ids=True)
    inputs["blueprint_id"][1] = 99
    with pytest.raises(ValueError, match="outside"):
        ops.kasmina_forward(**inputs, check_ids=True)


@pytest.mark.parametrize("bad_id", [8, 1000, -1, -7])
def test_kasmina_out_of_range_ids_are_flagged_the_same_both_ways(bad_id, device):
    """An id outside the registry reads nothing out of bounds: the seed's outputs are NaN on both paths and
    every other seed is exact."""
    fam = F["kasmina"]
    inputs = fam.make_inputs((5, 4, 16), "fp32", device, seed=_seed())
    good = dict(inputs, blueprint_id=inputs["blueprint_id"].clone())
    inputs["blueprint_id"][2] = bad_id
    ref_y, ref_t = fam.oracle(**good)
    for enabled in PATHS:
        with triton_path(enabled):
            y, tele = ops.kasmina_forward(**inputs)
        ys = y.view(5, 4, 16)
        assert ys[:, 2].isnan().all() and tele[2].isnan().all(), f"triton={enabled}"
        others = [0, 1, 3]
        assert torch.allclose(ys[:, others].double(), ref_y.view(5, 4, 16)[:, others], rtol=1e-4, atol=1e-5)
        assert torch.allclose(tele[others].double(), ref_t[others], rtol=1e-4, atol=1e-5)


def test_kasmina_planned_call_runs_the_launch_it_planned(device):
    """The ops API's second call (its saved launch plan) gives the first call's outputs bit for bit, where the
    launch configuration branches by seed state (fp32 from 64 rows) and where its rows are split."""
    from kprof.kernels.kasmina import branch_free

    fam = F["kasmina"]
    for shape in ((260, 5, 32), (64, 3, 16), (20, 3, 16)):
        inputs = fam.make_inputs(shape, "fp32", device, seed=_seed())
        cfg = branch_free.config_for(inputs["x"], shape[1], shape[2], True)
        with triton_path(True):
            _plans.reset()
            first = ops.kasmina_forward(**inputs)
            second = ops.kasmina_forward(**inputs)
        assert cfg.by_state == (shape[0] >= 64)
        assert torch.equal(first[0], second[0]) and torch.equal(first[1], second[1]), shape
        ref_y, ref_t = fam.oracle(**inputs)
        assert _rel(second[0], ref_y) <= fam.tolerances["fp32"]
        assert _rel(second[1], ref_t) <= fam.tolerances["fp32"]


def test_best_names_real_providers():
    targets = [(op, t) for op, t in ops.BEST.items()] + [(op, t) for op, ts in ops.PREPARED.items() for t in ts]
    for op, target in targets:
        family, provider = target.split("/")
        assert F[family].providers[provider].is_triton, op


def test_use_triton_returns_previous_and_is_not_read_from_the_environment(monkeypatch, device):
    with triton_path(False):
        monkeypatch.setenv("KPROF_USE_TRITON", "1")  # read once at import, never per call
        assert not ops.triton_enabled(torch.randn(2, device=device))
        assert ops.use_triton(True) is False
        assert ops.triton_enabled(torch.randn(2, device=device))


# ------------------------------------------------------------------------------------- stale weights
def _swiglu_case(device, d=24, ff=40, rows=9):
    inp = F["swiglu"].make_inputs((rows, d, ff), "bf16", device, seed=_seed())
    return inp["x"], inp["w_gate"], inp["w_up"]


def _rl_case(device, k=24, n=40, rows=9):
    inp = F["rmsnorm_linear"].make_inputs((rows, k, n), "bf16", device, seed=_seed())
    return inp["x"], inp["g"], inp["w"], inp["b"]


def _check_swiglu(out, x, wg, wu, tag):
    err = _rel(out, F["swiglu"].oracle(x, wg, wu))
    assert err <= F["swiglu"].tolerances["bf16"], f"{tag}: rel err {err:.2e}"


def _check_rl(out, x, g, w, b, tag):
    err = _rel(out, F["rmsnorm_linear"].oracle(x, g, w, b))
    assert err <= F["rmsnorm_linear"].tolerances["bf16"], f"{tag}: rel err {err:.2e}"


@pytest.mark.parametrize("enabled", PATHS)
def test_in_place_copy_is_seen(enabled, device):
    """``w.data.copy_(new)`` bypasses the version counter: plain ops read the new weights; prepared objects
    refuse until refreshed (contents checked under the interpreter), then read them."""
    x, wg, wu = _swiglu_case(device)
    xr, g, w, b = _rl_case(device)
    checking = ops.check_prepared(True)  # on by default under the interpreter only
    with triton_path(enabled), contextlib.ExitStack() as stack:
        stack.callback(ops.check_prepared, checking)
        prep_s, prep_r = ops.PreparedSwiGLU(wg, wu), ops.PreparedRMSNormLinear(g, w)
        _check_swiglu(ops.swiglu(x, wg, wu), x, wg, wu, "swiglu before")
        _check_swiglu(prep_s(x), x, wg, wu, "prepared swiglu before")
        _check_rl(prep_r(xr, b), xr, g, w, b, "prepared rms_norm_linear before")
        wg.data.copy_(torch.randn_like(wg) * 0.3)
        w.data.copy_(torch.randn_like(w) * 0.3)
        _check_swiglu(ops.swiglu(x, wg, wu), x, wg, wu, "swiglu after copy")
        _check_rl(ops.rms_norm_linear(xr, g, w, b), xr, g, w, b, "rms_norm_linear after copy")
        for prep, derived, call in (
            (prep_s, prep_s.w_int, lambda: prep_s(x)),
            (prep_r, prep_r.wf, lambda: prep_r(xr, b)),
        ):
            if derived is not None:
                with pytest.raises(ops.StaleWeightsError, match="refresh"):
                    call()
            prep.refresh()
        _check_swiglu(prep_s(x), x, wg, wu, "prepared swiglu after refresh")
        _check_rl(prep_r(xr, b), xr, g, w, b, "prepared rms_norm_linear after refresh")


@pytest.mark.parametrize("enabled", PATHS)
def test_optimizer_steps_are_seen_after_refresh_on_step(enabled, device):
    """A fused AdamW step where this torch has one for the device (CPU in torch 2.13 does), else foreach;
    the modules refresh through ``refresh_on_step`` and every forward matches the oracle."""
    torch.manual_seed(_seed())
    mlp = ops.SwiGLU(24, 40, device=device, dtype=torch.bfloat16)
    proj = ops.RMSNormLinear(24, 40, device=device, dtype=torch.bfloat16)
    params = list(mlp.parameters()) + list(proj.parameters())
    try:
        opt = torch.optim.AdamW(params, lr=0.05, fused=True)
    except (RuntimeError, ValueError):
        opt = torch.optim.AdamW(params, lr=0.05, foreach=True)
    ops.refresh_on_step(opt, mlp, proj)
    x = torch.randn(9, 24, device=device, dtype=torch.bfloat16)
    with triton_path(enabled):
        for step in range(3):
            for p in params:
                p.grad = torch.randn_like(p)
            opt.step()
            with torch.no_grad():
                _check_swiglu(mlp(x), x, mlp.w_gate, mlp.w_up, f"SwiGLU step {step}")
                _check_rl(proj(x), x, proj.g, proj.w, proj.b, f"RMSNormLinear step {step}")


@pytest.mark.slow  # 200 interpreted launches: about 45 s on a 2-core CPU
@pytest.mark.parametrize("enabled", PATHS)
def test_fifty_freed_and_reallocated_weights(enabled, device):
    """Weights of one shape made, used once and freed, 50 times over (their addresses get reused): every
    answer is computed from that call's weights."""
    with triton_path(enabled):
        for i in range(50):
            x, wg, wu = _swiglu_case(device, d=16, ff=24, rows=5)
            _check_swiglu(ops.swiglu(x, wg, wu), x, wg, wu, f"swiglu {i}")
            _check_swiglu(ops.PreparedSwiGLU(wg, wu)(x), x, wg, wu, f"prepared swiglu {i}")
            xr, g, w, b = _rl_case(device, k=16, n=24, rows=5)
            _check_rl(ops.rms_norm_linear(xr, g, w, b), xr, g, w, b, f"rms_norm_linear {i}")
            _check_rl(ops.PreparedRMSNormLinear(g, w)(xr, b), xr, g, w, b, f"prepared rms_norm_linear {i}")
            del x, wg, wu, xr, g, w, b


def test_version_bump_without_refresh_raises(device):
    x, wg, wu = _swiglu_case(device)
    with triton_path(True):
        prep = ops.PreparedSwiGLU(wg, wu)
        if prep.w_int is None:
            pytest.skip("no interleaved weights on this device (not Hopper)")
        with torch.no_grad():
            wu.mul_(1.5)
        with pytest.raises(ops.StaleWeightsError):
            prep(x)
        prep.refresh()
        _check_swiglu(prep(x), x, wg, wu, "after refresh")


def test_modules_refresh_on_load_state_dict(device):
    x = torch.randn(3, 16, device=device, dtype=torch.bfloat16)
    with triton_path(True), torch.no_grad():
        a = ops.SwiGLU(16, 24, device=device, dtype=torch.bfloat16)
        b = ops.SwiGLU(16, 24, device=device, dtype=torch.bfloat16)
        b(x)
        b.load_state_dict(a.state_dict())  # copies into b's parameters in place, then refreshes
        _check_swiglu(b(x), x, a.w_gate, a.w_up, "loaded")
        b.to(torch.float32)  # moved: refreshed from the converted parameters
        xf = x.float()
        err = _rel(b(xf), F["swiglu"].oracle(xf, b.w_gate, b.w_up))
        assert err <= F["swiglu"].tolerances["fp32"], err


# --------------------------------------------------------------------------------------- meta tensors
@pytest.mark.parametrize("enabled", PATHS)
@pytest.mark.parametrize("op", list(OPS))
def test_meta_tensors_both_paths(op, enabled, device):
    family, shape = OPS[op]
    fam = F[family]
    inputs = fam.make_inputs(shape, "bf16", device, seed=3)
    real = _as_tuple(getattr(ops, op)(**inputs))
    meta = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    with triton_path(enabled):
        outs = _as_tuple(getattr(ops, op)(**meta))
    for o, r in zip(outs, real):
        assert o.is_meta and o.shape == r.shape and o.dtype == r.dtype


def test_meta_tensors_still_checked():
    with pytest.raises(ValueError, match="expected \\(8,\\)"):
        ops.rms_norm(torch.empty(4, 8, device="meta"), torch.empty(7, device="meta"))


# ----------------------------------------------------------------------------------------- compile
class _Block(torch.nn.Module):
    """A decoder-ish block calling every op (kasmina on the side)."""

    def __init__(self, device, d=32, ff=48):
        super().__init__()
        self.norm_w = torch.nn.Parameter(1 + 0.1 * torch.randn(d, device=device))
        self.proj = ops.RMSNormLinear(d, 2 * ff, device=device)
        self.mlp = ops.SwiGLU(d, ff, device=device)
        self.g2 = torch.nn.Parameter(1 + 0.1 * torch.randn(ff, device=device))
        self.w2 = torch.nn.Parameter(ff**-0.5 * torch.randn(ff, d, device=device))
        self.kas = F["kasmina"].make_inputs((1, 2, d // 2), "fp32", device, seed=1)

    def forward(self, x, r):
        y, h = ops.fused_add_rms_norm(x, r, self.norm_w)
        y = ops.rms_norm(y, self.norm_w)
        a = ops.silu_and_mul(self.proj(y)) + ops.gelu_tanh_and_mul(self.proj(h))
        a = a + self.mlp(y) + ops.swiglu(y, self.mlp.w_gate, self.mlp.w_up)
        z = ops.rms_norm_linear(a, self.g2, self.w2)
        k = self.kas
        zk, tele = ops.kasmina_forward(z, k["lifecycle"], k["blueprint_id"], k["alpha"], k["weights"], k["bias"])
        return zk + h, tele


@pytest.mark.parametrize("enabled", PATHS)
def test_compile_fullgraph_over_every_op(enabled, device):
    """``torch.compile(fullgraph=True, backend="aot_eager")`` over a block calling every op: no graph break,
    the compiled block's outputs equal the eager block's."""
    torch._dynamo.reset()
    torch.manual_seed(_seed())
    x, r = torch.randn(3, 32, device=device), torch.randn(3, 32, device=device)
    with triton_path(enabled), torch.no_grad():
        block = _Block(device)  # prepared weights are derived only where the Triton path is on
        want = block(x, r)
        got = torch.compile(block, fullgraph=True, backend="aot_eager")(x, r)
    for g_, w_ in zip(got, want):
        assert torch.allclose(g_, w_, rtol=1e-4, atol=1e-4)


def test_custom_ops_are_registered_with_fake_kernels():
    for name in ops.registered_ops():
        assert hasattr(torch.ops.kprof, name)
    x = torch.empty(2, 5, 8, device="meta")
    assert torch.ops.kprof.silu_and_mul(x).shape == (2, 5, 4)


def test_plans_are_per_signature(device):
    """A plan is never used for another signature (shape, stride, dtype, alignment): a strided view, a
    different dtype and an offset view all compute correctly after the plan for the plain tensor exists."""
    fam = F["silu_mul"]
    base = fam.make_inputs((6, 64), "fp32", device, seed=_seed())["x"]
    with triton_path(True):
        _plans.reset()
        for x in (
            base,
            base,
            base[::2],
            base.to(torch.bfloat16),
            base.reshape(-1)[1:].reshape(-1)[:320].view(5, 64),
            torch.cat([base, base], dim=1)[:, 32:96],
        ):
            err = _rel(ops.silu_and_mul(x), fam.oracle(x))
            assert err <= fam.tolerances["bf16"], tuple(x.shape)


def test_fused_optimizer_step_without_refresh_is_refused(device):
    """A fused AdamW step (available on the CPU in torch 2.13) writes the weights without moving their version
    counters; with checking on, a prepared object that was not refreshed refuses rather than answer from the
    old derived weights."""
    x, wg, wu = _swiglu_case(device)
    xr, g, w, b = _rl_case(device)
    wg, wu, g, w = (torch.nn.Parameter(t) for t in (wg, wu, g, w))
    checking, enabled = ops.check_prepared(True), ops.use_triton(True)
    try:
        prep_s, prep_r = ops.PreparedSwiGLU(wg, wu), ops.PreparedRMSNormLinear(g, w)
        if prep_s.w_int is None or prep_r.wf is None:
            pytest.skip("no derived weights on this device (not Hopper)")
        opt = torch.optim.AdamW([wg, wu, g, w], lr=0.05, fused=True)
        for p in (wg, wu, g, w):
            p.grad = torch.randn_like(p)
        opt.step()
        with torch.no_grad():
            with pytest.raises(ops.StaleWeightsError):
                prep_s(x)
            with pytest.raises(ops.StaleWeightsError):
                prep_r(xr, b)
            _check_swiglu(prep_s.refresh()(x), x, wg, wu, "swiglu after refresh")
            _check_rl(prep_r.refresh()(xr, b), xr, g, w, b, "rms_norm_linear after refresh")
    finally:
        ops.check_prepared(checking)
        ops.use_triton(enabled)


@pytest.mark.gpu
def test_decode_step_in_a_cuda_graph_and_compiled_launches():
    """On a GPU: after warm-up every plan launches through its compiled kernel (not the JIT), and a decode
    step (norm, projection with gated activation) captured in a CUDA graph replays correctly on new input."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    fam = F["swiglu"]
    inp = fam.make_inputs((8, 256, 512), "bf16", "cuda", seed=_seed())
    x, wg, wu = inp["x"], inp["w_gate"], inp["w_up"]
    g = (1 + 0.1 * torch.randn(256, device="cuda")).to(torch.bfloat16)
    with triton_path(True):

        def step():
            return ops.swiglu(ops.rms_norm(x, g), wg, wu)

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        xn = ops.rms_norm(x, g)
        launch, _, _ = _swiglu_plan.PLANS.get((_plans.sig(xn), _plans.sig(wg), _plans.sig(wu)))
        assert launch.entry is not None, "the swiglu plan never reached its compiled launch"
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = step()
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        xn = F["rmsnorm"].oracle(x, g).to(torch.bfloat16)
        err = _rel(out, fam.oracle(xn, wg, wu))
        assert err <= fam.tolerances["bf16"], err


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_kasmina_compiled_launches_on_the_gpu(dtype):
    """On a GPU: kasmina_forward's plan reaches its compiled launch (raw addresses) and gives the checked first
    call's outputs bit for bit, with one program per seed and with rows split over programs (whose ticket
    counters the compiled launches leave at zero: a later call still merges every part)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    fam = F["kasmina"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for shape in ((3, sms + 7, 64), (80, 5, 48)):
        inp = fam.make_inputs(shape, dtype, "cuda", seed=_seed())
        with triton_path(True):
            _plans.reset()
            first = ops.kasmina_forward(**inp)
            calls = [ops.kasmina_forward(**inp) for _ in range(4)]
            ((launch, _, cfg, _, _),) = _kasmina_plan.PLANS.plans.values()
        assert launch.entry is not None, "the kasmina plan never reached its compiled launch"
        assert cfg.split == (shape[1] < sms)
        for y, tele in calls:
            assert torch.equal(y, first[0]) and torch.equal(tele, first[1]), shape
        ref_y, ref_t = fam.oracle(**inp)
        assert _rel(first[0], ref_y) <= fam.tolerances[dtype] and _rel(first[1], ref_t) <= fam.tolerances[dtype]
    _plans.reset()


class _RecordingLauncher:
    """Stands in for Triton's C launcher: records the pointer arguments a compiled launch would get (entries
    are ``(launch, prefix, device)``; this one's prefix is the two values below)."""

    prefix = ("function", "packed")

    def __init__(self):
        self.calls = []

    def __call__(self, g0, g1, g2, stream, function, packed, *args):
        assert (function, packed) == self.prefix
        self.calls.append(args)


def test_compiled_launches_get_raw_addresses_of_fresh_contiguous_outputs(device, monkeypatch):
    """Once a plan is compiled, fused_add_rms_norm and rms_norm_linear hand the C launcher the addresses of
    their inputs and of new contiguous outputs (no tensors: a tensor costs the launcher a driver query per
    pointer), and the kernel's other arguments as planned; for a strided-row x too."""
    from kprof.kernels.rmsnorm import tuned as rms_tuned
    from kprof.kernels.rmsnorm_linear import tuned as rl_tuned

    if device != "cpu":
        pytest.skip("drives the plans with a stand-in launcher (the CPU interpreter builds them)")
    rec = _RecordingLauncher()
    monkeypatch.setattr(_plans, "_stream", lambda d: 0)
    wide = torch.randn(5, 2 * 67)
    for x in (torch.randn(5, 67), wide[:, 3:70]):
        r, w = torch.randn_like(x), torch.randn(67)
        with triton_path(True):
            _plans.reset()
            ops.fused_add_rms_norm(x, r, w)  # builds the plan through the checked path
            ((launch, shape, strides),) = _add_plan.PLANS.plans.values()
            launch.entry = (rec, rec.prefix, 0)
            y, h = ops.fused_add_rms_norm(x, r, w)
        assert y.shape == h.shape == x.shape and y.is_contiguous() and h.is_contiguous() and y.dtype == x.dtype
        assert rec.calls[-1] == (x.data_ptr(), r.data_ptr(), w.data_ptr(), y.data_ptr(), h.data_ptr(), *launch.tail)
        assert launch.tail[0] == x.stride(0)  # the row stride, as the kernel reads x

    x, g, wl, b = torch.randn(3, 7, 24), torch.randn(24), torch.randn(24, 40), torch.randn(40)
    monkeypatch.setattr(rl_tuned, "cublas_product", lambda m, k, n: False)  # the Triton product's plan
    for bias in (b, None):
        with triton_path(True):
            _plans.reset()
            ops.rms_norm_linear(x, g, wl, bias)
            ((key, (norm, product, xn_layout, y_layout)),) = _rl_plan.PLANS.plans.items()
            p = rms_tuned.plan_for(21, 24, 24, x.dtype, -1, True)  # the CPU has no rmsnorm plan of its own
            norm = _plans.Launch(p.launcher, ("test",), p.grid, (*p.ints, 1e-6, *p.constexprs), {})
            norm.entry = product.entry = (rec, rec.prefix, 0)
            _rl_plan.PLANS.plans[key] = (norm, product, xn_layout, y_layout)
            out = ops.rms_norm_linear(x, g, wl, bias)
        assert out.shape == (3, 7, 40) and out.is_contiguous()
        norm_call, product_call = rec.calls[-2:]
        assert norm_call[:2] == (x.data_ptr(), g.data_ptr()) and norm_call[3:] == norm.tail
        xn_ptr = norm_call[2]  # the normalised rows: written by the norm, read by the product
        assert product_call[:5] == (
            xn_ptr,
            wl.data_ptr(),
            (wl if bias is None else bias).data_ptr(),
            wl.data_ptr(),
            out.data_ptr(),
        )
        assert product_call[5:] == product.tail and xn_ptr not in (x.data_ptr(), out.data_ptr())
        assert all(type(a) is not torch.Tensor for call in rec.calls for a in call)
    _plans.reset()


def test_kasmina_compiled_launch_gets_raw_addresses(device, monkeypatch):
    """Once its plan is compiled, kasmina_forward hands the C launcher the six inputs' addresses, new contiguous y
    and telemetry, then (rows split over programs) a new parts buffer and the stream's ticket counters, or else y's
    address twice (the kernel reads neither slot), and the kernel's other arguments as planned."""
    from kprof.kernels.lib import launching

    if device != "cpu":
        pytest.skip("drives the plan with a stand-in launcher (the CPU interpreter builds it)")
    rec = _RecordingLauncher()
    monkeypatch.setattr(_plans, "_stream", lambda d: 0)
    fam = F["kasmina"]
    for shape, split in (((2, 140, 16), False), ((40, 3, 16), True)):  # 140 seeds: one program each (132 SMs)
        inp = fam.make_inputs(shape, "fp32", device, seed=_seed())
        with triton_path(True):
            _plans.reset()
            ops.kasmina_forward(**inp)  # builds the plan through the checked path
            ((launch, n_seeds, cfg, _, _),) = _kasmina_plan.PLANS.plans.values()
            launch.entry = (rec, rec.prefix, 0)
            y, tele = ops.kasmina_forward(**inp)
        args = rec.calls[-1]
        assert cfg.split == split and n_seeds == shape[1]
        assert y.shape == inp["x"].shape and y.is_contiguous() and y.dtype == inp["x"].dtype
        assert tele.shape == (shape[1], 2) and tele.is_contiguous() and tele.dtype == torch.float32
        p = {name: t.data_ptr() for name, t in inp.items()}
        inputs = (p["lifecycle"], p["blueprint_id"], p["alpha"], p["weights"], p["bias"])
        assert args[:8] == (p["x"], y.data_ptr(), *inputs, tele.data_ptr())
        parts, counts = args[8:10]
        if split:
            assert parts not in (y.data_ptr(), tele.data_ptr())
            assert counts == launching.ticket_counters(inp["x"], n_seeds).data_ptr()
        else:
            assert parts == counts == y.data_ptr()
        assert args[10:] == launch.tail and all(type(a) is int for a in args[:10])
    _plans.reset()


def test_a_cublas_plan_launches_the_norm_then_multiplies_its_rows(device, monkeypatch):
    """Where the rule picks cuBLAS's product, the plan launches only the norm kernel (raw addresses, into new
    rows) and hands cuBLAS exactly those rows and w, with the bias where there is one."""
    from kprof.kernels.rmsnorm import tuned as rms_tuned
    from kprof.kernels.rmsnorm_linear import tuned as rl_tuned

    if device != "cpu":
        pytest.skip("drives the plan with a stand-in launcher (the CPU interpreter builds it)")
    monkeypatch.setattr(_plans, "_stream", lambda d: 0)
    monkeypatch.setattr(rl_tuned, "cublas_product", lambda m, k, n: True)
    x, g, wl, b = torch.randn(3, 7, 24), torch.randn(24), torch.randn(24, 40), torch.randn(40)
    for bias in (b, None):
        rec, seen = _RecordingLauncher(), []
        with triton_path(True):
            _plans.reset()
            ops.rms_norm_linear(x, g, wl, bias)
            ((key, (norm, product, xn_layout, y_layout)),) = _rl_plan.PLANS.plans.items()
            assert product is _plans.CUBLAS
            p = rms_tuned.plan_for(21, 24, 24, x.dtype, -1, True)
            norm = _plans.Launch(p.launcher, ("test",), p.grid, (*p.ints, 1e-6, *p.constexprs), {})
            norm.entry = (rec, rec.prefix, 0)
            _rl_plan.PLANS.plans[key] = (norm, product, xn_layout, y_layout)
            with monkeypatch.context() as m:
                mm, addmm = torch.Tensor.__matmul__, torch.addmm
                m.setattr(torch.Tensor, "__matmul__", lambda r, w, s=seen, f=mm: s.append((None, r, w)) or f(r, w))
                m.setattr(torch, "addmm", lambda bb, r, w, s=seen, f=addmm: s.append((bb, r, w)) or f(bb, r, w))
                out = ops.rms_norm_linear(x, g, wl, bias)
        ((x_ptr, g_ptr, xn_ptr, *tail),) = rec.calls
        assert (x_ptr, g_ptr, tuple(tail)) == (x.data_ptr(), g.data_ptr(), norm.tail)
        ((bb, rows, w),) = seen
        assert rows.data_ptr() == xn_ptr and rows.shape == (21, 24) and w is wl and bb is bias
        assert xn_ptr not in (x.data_ptr(), out.data_ptr()) and out.shape == (3, 7, 40)
    _plans.reset()


def test_a_launch_hook_sends_planned_calls_through_the_jit(device, monkeypatch):
    """With a launch hook installed (profilers), a compiled plan launches through the JIT, which computes."""
    fam = F["add_rmsnorm"]
    inp = fam.make_inputs((3, 5, 129), "fp32", device, seed=_seed())
    with triton_path(True):
        _plans.reset()
        ops.fused_add_rms_norm(inp["x"], inp["residual"], inp["weight"])
        ((launch, _, _),) = _add_plan.PLANS.plans.values()
        direct = _RecordingLauncher()
        monkeypatch.setattr(launch, "entry", (direct, None, None, 0))
        monkeypatch.setattr(_add_plan, "launch_hooks_installed", lambda: True)
        monkeypatch.setattr(_plans, "launch_hooks_installed", lambda: True)
        outs = ops.fused_add_rms_norm(inp["x"], inp["residual"], inp["weight"])
        _plans.reset()
    assert direct.calls == []  # not launched directly (on a GPU the JIT's launch may set a new entry)
    for o, ref in zip(outs, fam.oracle(**inp)):
        assert _rel(o, ref) <= fam.tolerances["fp32"]


@pytest.mark.parametrize("enabled", PATHS)
def test_non_tensor_inputs_raise_the_same_error_both_ways(enabled, device):
    x = torch.randn(4, 8, device=device)
    with triton_path(enabled):
        with pytest.raises(ValueError, match="residual must be a torch tensor"):
            ops.fused_add_rms_norm(x, None, torch.randn(8, device=device))
        with pytest.raises(ValueError, match="w must be a torch tensor"):
            ops.rms_norm_linear(x, torch.randn(8, device=device), [[1.0] * 3] * 8)


@pytest.mark.parametrize("rows, k, n", [(37, 72, 40), (37, 72, 96), (20, 64, 48), (112, 296, 32)])
@pytest.mark.parametrize("bias", [True, False])
def test_prepared_rms_norm_linear_launches_from_its_plan(rows, k, n, bias, device, monkeypatch):
    """``PreparedRMSNormLinear`` on the TMA route checks and plans a signature on its first call, then launches both
    kernels from the plan (W''s descriptors kept, x's and y's made per call; under the interpreter with 4 programs
    37x72x40 leaves its last tiles to halves, 37x72x96 to quarters, 20x64x48 has no partial wave, 112x296x32 shares
    its last wave of 3 tiles out along K, with a workspace and ticket counters per call). Every call, with new x and
    bias of the same signature (3-D x), matches the float64 oracle; after the first, the checked path is never
    taken."""
    from kprof.kernels.lib.launching import interpreting
    from kprof.kernels.rmsnorm_linear import rstd_epilogue

    if device == "cuda" or not interpreting():
        pytest.skip("the TMA route from 1000 rows on a GPU: test_prepared_plans_on_the_gpu")
    with triton_path(True):
        _plans.reset()
        _, g, w, _ = _rl_case(device, k=k, n=n, rows=rows)
        prepared = ops.PreparedRMSNormLinear(g, w)
        for i in range(3):
            x, _, _, b = _rl_case(device, k=k, n=n, rows=rows)
            b = b if bias else None
            out = prepared(x.view(1, rows, k), b)
            assert out.shape == (1, rows, n)
            _check_rl(out.view(rows, n), x, g, w, b, f"call {i}")
            if i == 0:
                assert len(_rl_plan.PREPARED_PLANS.plans) == 1
                (plan,) = _rl_plan.PREPARED_PLANS.plans.values()
                assert (plan.plan.parts > 0) == (rows == 112)
                monkeypatch.setattr(rstd_epilogue, "rmsnorm_linear_folded", None)  # the plan must not need it
        folded = weakref.ref(prepared.wf)
        prepared.refresh()  # a new fold: the plan must not keep the old one alive
        gc.collect()
        assert folded() is None
        _plans.reset()


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("layout", ["2-D", "3-D", "slice"])
@pytest.mark.parametrize("bias", [True, False])
def test_prepared_rms_norm_linear_launches_the_pointer_route_from_its_plan(dtype, layout, bias, device, monkeypatch):
    """Where no TMA descriptor can address x (fp32; 16-bit rows of K 45, not 16-byte aligned) the statistics-first
    route is the rstd kernel and the pointer product (on a GPU also where the objects' race takes it under 1000 rows:
    tests/kernels/test_routes.py). ``PreparedRMSNormLinear`` checks and plans a signature on its first call, then
    launches both kernels from the plan, with 2-D x, 3-D x and a slice of a wider buffer (row stride K + 2). Every
    call, with new x and bias of the same signature, matches the float64 oracle; after the first, the checked path is
    never taken."""
    from kprof.kernels.lib.launching import interpreting
    from kprof.kernels.rmsnorm_linear import rstd_epilogue

    if device == "cuda" or not interpreting():
        pytest.skip("on a GPU the objects race this route under 1000 rows: tests/kernels/test_routes.py")
    rows, k, n = 37, 45, 40
    fam = F["rmsnorm_linear"]
    with triton_path(True):
        _plans.reset()
        held = fam.make_inputs((rows, k, n), dtype, device, seed=_seed())
        prepared = ops.PreparedRMSNormLinear(held["g"], held["w"])
        for i in range(3):
            new = fam.make_inputs((rows, k, n), dtype, device, seed=_seed() + i)
            x, b = new["x"], new["b"] if bias else None
            if layout == "3-D":
                x = x.view(1, rows, k)
            elif layout == "slice":
                x = torch.cat([x, x[:, :2]], dim=1)[:, :k]
            out = prepared(x, b, new["eps"])
            assert out.shape == (*x.shape[:-1], n)
            ref = fam.oracle(x.reshape(rows, k), held["g"], held["w"], b, new["eps"])
            err = _rel(out.reshape(rows, n), ref)
            assert err <= fam.tolerances[dtype], f"{dtype} {layout} call {i}: rel err {err:.2e}"
            if i == 0:
                (plan,) = _rl_plan.PREPARED_PLANS.plans.values()
                assert type(plan) is _rl_plan.PreparedPointerPlan
                monkeypatch.setattr(rstd_epilogue, "folded_launches", None)  # the plan must not need it
        assert len(_rl_plan.PREPARED_PLANS.plans) == 1
        _plans.reset()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "m, k, n",
    [(2048, 256, 5504), (2048, 256, 11008), (1000, 1000, 3000), (2048, 256, 768), (4096, 256, 768), (1000, 256, 768)],
)
def test_prepared_plans_on_the_gpu(m, k, n):
    """On a GPU, from 1000 rows: the plans' compiled launches (raw addresses, the descriptors' encoding kept by address
    once compiled, PDL where the GPU has it) give the oracle's answer for new inputs on every call, for
    PreparedRMSNormLinear (the last wave of 128x256 tiles whole at 2048x5504, 88 tiles left on an H100; in quarters at
    11008, 28 left; in halves at 1000x3000, 60 left) and PreparedSwiGLU (at 768 columns on 132 SMs, one wave of tiles
    of 128 + 64 rows: full at 2048 and 4096 rows; 55% full at 1000, which takes cuBLAS's product and the pairs
    pass). Two sets of inputs take turns, so later calls find their addresses kept, and the bias and x's values
    change between them."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    with triton_path(True):
        _plans.reset()
        inp = F["rmsnorm_linear"].make_inputs((m, k, n), "bf16", "cuda", seed=_seed())
        prepared = ops.PreparedRMSNormLinear(inp["g"], inp["w"])
        _, wg, wu = _swiglu_case("cuda", d=k, ff=n, rows=m)
        swiglu = ops.PreparedSwiGLU(wg, wu)
        sets = [F["rmsnorm_linear"].make_inputs((m, k, n), "bf16", "cuda", seed=_seed() + i) for i in range(2)]
        for i in range(8):
            new = sets[i % 2]
            if i >= 4:  # the same addresses, new values
                new["x"].copy_(torch.randn_like(new["x"]))
                new["b"].copy_(torch.randn_like(new["b"]))
            out = prepared(new["x"], new["b"])
            _check_rl(out, new["x"], inp["g"], inp["w"], new["b"], f"rms_norm_linear call {i}")
            _check_swiglu(swiglu(new["x"]), new["x"], wg, wu, f"swiglu call {i}")
        ((plan),) = _rl_plan.PREPARED_PLANS.plans.values()
        assert plan.product.entry is not None and plan.rstd.entry is not None  # the compiled launches ran
        described = plan.product.described()
        assert isinstance(described, DescribedLaunch) and described.kept, "the product took the wrapper"
        # from 1000 rows each route of the pair is planned: the TMA kernel, or cuBLAS's one product then the pairs
        # kernel (raced where the width is not a multiple of 16, as at 3000)
        (plan,) = _swiglu_plan.PREPARED_PLANS.plans.values()
        assert plan.launch.entry is not None  # the compiled launch ran
        if type(plan) is _swiglu_plan.PreparedSwiGLUPlan:
            described = plan.launch.described()
            assert isinstance(described, DescribedLaunch) and described.kept
            taller = sw_tuned.one_wave_config(m, n, torch.cuda.get_device_properties(0).multi_processor_count)
            assert plan.plan.lower == (taller[6] if taller else 0)
        else:
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            assert type(plan) is _swiglu_plan.PreparedPairsPlan and (n % 16 or sw_tuned.underfilled_wave(m, k, n, sms))
        _plans.reset()


@pytest.mark.parametrize("route", ["interleaved", "cublas_pairs"])
@pytest.mark.parametrize("rows, k, n", [(37, 72, 40), (20, 40, 48), (5, 24, 56)])
def test_prepared_swiglu_launches_from_its_plan(rows, k, n, route, device, monkeypatch):
    """``PreparedSwiGLU`` checks and plans a signature on its first call, then launches from the plan: on the
    interleaved TMA kernel (the interleaved weight's descriptors kept, x's and y's made per call; under the interpreter
    with 4 programs 37x72x40 makes 9 tiles, its last in quarters, 20x40x48 makes 6, the last two in halves), or where
    the route is cuBLAS's one product of the pair (raced on a GPU where the width is not a multiple of 16; forced
    here) that product, then the pairs kernel. Every call, with new x of the same signature (3-D x), matches the
    float64 oracle; after the first, the checked path is never taken."""
    from kprof.kernels.lib.launching import interpreting
    from kprof.kernels.swiglu import tuned as sw

    if device == "cuda" or not interpreting():
        pytest.skip("the interleaved kernel from 1000 rows on a GPU: test_prepared_plans_on_the_gpu")
    monkeypatch.setattr(sw, "interleaved_route", lambda x2d, wi, y: route)
    kind = _swiglu_plan.PreparedSwiGLUPlan if route == "interleaved" else _swiglu_plan.PreparedPairsPlan
    with triton_path(True):
        _plans.reset()
        _, wg, wu = _swiglu_case(device, d=k, ff=n, rows=rows)
        prepared = ops.PreparedSwiGLU(wg, wu)
        for i in range(3):
            x, _, _ = _swiglu_case(device, d=k, ff=n, rows=rows)
            out = prepared(x.view(1, rows, k))
            assert out.shape == (1, rows, n)
            _check_swiglu(out.view(rows, n), x, wg, wu, f"call {i}")
            if i == 0:
                (plan,) = _swiglu_plan.PREPARED_PLANS.plans.values()
                assert type(plan) is kind
                monkeypatch.setattr(sw, "swiglu_with", None)  # the plan must not need it
        interleaved = weakref.ref(prepared.w_int)
        prepared.refresh()  # a new copy: the plan must not keep the old one alive
        gc.collect()
        assert interleaved() is None
        _swiglu_plan.PREPARED_PLANS.plans.clear()
