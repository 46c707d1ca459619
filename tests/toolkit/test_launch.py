"""CompiledLauncher: the fast path must launch exactly what the JIT would, and never a kernel compiled
for another specialisation (alignment, integer class, dtype)."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels.rmsnorm import tuned
from kprof.kernels.rmsnorm.reference import rmsnorm_oracle
from kprof.launch import CompiledLauncher, GraphedCall, is_interpreted, spec_key


def test_spec_key_separates_what_triton_specialises_on():
    a = torch.empty(64, dtype=torch.float32)
    assert spec_key((a, 16)) == spec_key((torch.empty(64, dtype=torch.float32), 32))
    assert spec_key((a, 16)) != spec_key((a[1:], 16)), "16-byte alignment must be part of the key"
    assert spec_key((a, 16)) != spec_key((a, 17)), "divisibility by 16 must be part of the key"
    assert spec_key((a, 1)) != spec_key((a, 17)), "== 1 must be part of the key"
    assert spec_key((a, 16)) != spec_key((a, 2**32)), "64-bit integers compile differently"
    assert spec_key((a,)) != spec_key((a.half(),)), "dtype must be part of the key"
    assert spec_key((a, 1e-6)) != spec_key((a, 1e-5)) or True  # floats are runtime values: either is safe


def test_interpreter_path_never_caches(device):
    if device != "cpu":
        pytest.skip("interpreter only")
    launcher = CompiledLauncher(tuned._rmsnorm_rows_kernel)
    assert is_interpreted(tuned._rmsnorm_rows_kernel)
    x = torch.randn(3, 100)
    w = torch.randn(100)
    y = torch.empty_like(x)
    args = (x, w, y, 100, 100, 3, 100, 1e-6)
    for _ in range(2):
        launcher(("k", spec_key(args)), (3,), args + (128, 1, True, False), num_warps=4)
    assert launcher.jit_launches == 2 and not launcher.entries
    assert float((y.double() - rmsnorm_oracle(x, w, 1e-6)).norm()) < 1e-4


@pytest.mark.gpu
def test_fast_path_used_and_correct_on_gpu():
    x = torch.randn(33, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    y = tuned.rmsnorm_tuned(x, w)  # first call of this signature: compiles through the JIT
    before = tuned._rows_launcher.jit_launches
    for _ in range(3):
        y = tuned.rmsnorm_tuned(x, w)
    torch.cuda.synchronize()
    assert tuned._rows_launcher.jit_launches == before, "repeat calls must take the compiled-kernel path"
    ref = rmsnorm_oracle(x, w, 1e-6)
    assert float((y.double() - ref).norm() / ref.norm()) < 8e-3


@pytest.mark.gpu
def test_misaligned_pointer_gets_its_own_kernel():
    """A row start that is not 16-byte aligned must not run the kernel compiled for aligned rows."""
    buf = torch.randn(8 * 1000 + 1, device="cuda", dtype=torch.float32)
    x_aligned = buf[:8000].view(8, 1000)
    x_odd = buf[1:8001].view(8, 1000)  # 4-byte offset
    w = torch.randn(1000, device="cuda")
    for x in (x_aligned, x_odd, x_aligned, x_odd):
        out = torch.full_like(x, float("nan"))
        y = tuned.rmsnorm_tuned(x, w, out=out)
        ref = rmsnorm_oracle(x, w, 1e-6)
        assert float((y.double() - ref).norm() / ref.norm()) < 1e-5
    # plan key = (cfg, dtype, device, row stride, rows, N); then the x, weight, y alignment flags
    keys = [k for k in tuned._rows_launcher.compiled if isinstance(k[0], tuple) and k[0][1] == torch.float32 and k[0][3:] == (1000, 8, 1000)]
    assert {k[1] for k in keys} == {True, False}, "aligned and unaligned inputs must compile separately"


@pytest.mark.gpu
def test_graphed_call_replays_fresh_data():
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    g = GraphedCall(tuned.rmsnorm_tuned, x, w)
    x.copy_(torch.randn_like(x))
    y = g()
    torch.cuda.synchronize()
    ref = rmsnorm_oracle(x, w, 1e-6)
    assert float((y.double() - ref).norm() / ref.norm()) < 8e-3


def test_graphed_call_needs_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("CPU-only behaviour")
    with pytest.raises(ValueError, match="CUDA"):
        GraphedCall(lambda: None)


@pytest.mark.parametrize("n_rows, n", [(1, 64), (64, 4096), (4096, 1024), (8192, 5120), (256, 131072),
                                       (70000, 40000)])
def test_plan_passes_every_kernel_argument(n_rows, n):
    """The raw launch path hands the C launcher one value per kernel parameter, constexprs included;
    a parameter with a default that the plan forgot would fail only on the GPU ('takes exactly N arguments')."""
    import inspect

    plan = tuned.plan_for(n_rows, n, n, torch.bfloat16, -1, True)
    kernel = plan.launcher.jit_fn
    params = inspect.signature(kernel.fn).parameters
    raw = (0, 0, 0, *plan.ints, 1e-6, *plan.constexprs)  # x, weight, y pointers first
    assert len(raw) == len(params), f"{len(raw)} raw arguments for {len(params)} parameters: {list(params)}"


def test_int64_offsets_only_when_needed():
    assert not tuned.needs_i64(4096, 4096)
    assert tuned.needs_i64(2**20, 2**11)
    assert tuned.plan_for(70000, 40000, 40000, torch.float32, -1, True).launcher is tuned._looped_launcher


@pytest.mark.gpu
def test_launch_hook_forces_the_jit_path():
    """With a Triton launch hook registered (Proton does this), launches must go through the JIT so the
    hook sees them."""
    from triton import knobs

    x = torch.randn(16, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2048, device="cuda", dtype=torch.bfloat16)
    tuned.rmsnorm_tuned(x, w)  # compile and plan this signature first
    seen = []

    def hook(metadata):
        seen.append(metadata)

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        tuned.rmsnorm_tuned(x, w)
        torch.cuda.synchronize()
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert len(seen) == 1


def test_launch_hook_detection(monkeypatch):
    from triton import knobs

    from kprof.launch import launch_hooks_installed

    assert not launch_hooks_installed()
    chain = knobs.runtime.launch_enter_hook

    def hook(metadata):
        return None

    chain.add(hook)
    try:
        assert launch_hooks_installed()
    finally:
        chain.remove(hook)
    assert not launch_hooks_installed()
    monkeypatch.setattr(knobs.runtime, "launch_exit_hook", hook)  # a plain function, not a HookChain
    assert launch_hooks_installed()
