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
    """Repeat calls of rmsnorm_tuned take the compiled kernel's direct C launch, whichever of its launchers the GPU's
    table picks at 33x4096 (the rows kernel on an H100; another on an H200)."""
    launchers = (tuned._rows_launcher, tuned._two_pass_launcher, tuned._looped_launcher)
    x = torch.randn(33, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    y = tuned.rmsnorm_tuned(x, w)  # first call of this signature: compiles through the JIT
    before = [launcher.jit_launches for launcher in launchers]
    for _ in range(3):
        y = tuned.rmsnorm_tuned(x, w)
    torch.cuda.synchronize()
    assert [launcher.jit_launches for launcher in launchers] == before, "repeat calls must take the compiled path"
    used = [launcher for launcher in launchers if launcher.entries]
    assert used, "no launcher of rmsnorm_tuned kept a compiled entry"
    kernel = next(iter(used[0].compiled.values()))
    launch, _, _ = next(iter(used[0].entries.values()))
    assert launch is not kernel.run, "the installed Triton's launcher was not recognised: no direct C launch"
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
    keys = [
        k
        for k in tuned._rows_launcher.compiled
        if isinstance(k[0], tuple) and k[0][1] == torch.float32 and k[0][3:] == (1000, 8, 1000)
    ]
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


@pytest.mark.parametrize("n_rows, n", [(1, 64), (64, 4096), (4096, 1024), (8192, 5120), (256, 131072), (70000, 40000)])
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


def test_a_recording_of_launches_sends_the_fast_paths_through_the_jit():
    """Inside :func:`kprof.specialization.recording` the fast paths launch through Triton's JIT, where the
    recording's patches see them (a direct launch of a kernel compiled earlier went unrecorded on an H100)."""
    from kprof.launch import launch_hooks_installed
    from kprof.specialization import recording

    assert not launch_hooks_installed()
    with recording():
        assert launch_hooks_installed()
        with recording():
            assert launch_hooks_installed()
        assert launch_hooks_installed()
    assert not launch_hooks_installed()


# ------------------------------------------------------------------ direct launches through the C function
def _nvidia_launcher(monkeypatch, scratch: int = 0):
    """The installed Triton's CudaLauncher, built without compiling (its C function replaced by a recorder)."""
    import triton

    driver_mod = pytest.importorskip("triton.backends.nvidia.driver")
    # the wrapper may look up the active driver; without a GPU there is none, and it needs nothing from it
    monkeypatch.setattr(triton.runtime.driver, "_active", object())
    run = object.__new__(driver_mod.CudaLauncher)
    fields = {
        "num_ctas": 1,
        "global_scratch_size": scratch,
        "global_scratch_align": 1,
        "profile_scratch_size": 0,
        "profile_scratch_align": 1,
        "launch_cooperative_grid": False,
        "launch_pdl": True,
        "gsan_enabled": False,
        "arg_annotations": ("ann",),
        "kernel_signature": b"sig",
    }
    for name, value in fields.items():
        setattr(run, name, value)
    calls: list[tuple] = []
    run.launch = lambda *a: calls.append(a)
    return run, calls


def test_direct_launch_passes_the_c_function_what_tritons_wrapper_does(monkeypatch):
    """For the Triton installed here, the direct call and Triton's own wrapper reach the C function with
    identical arguments; and the direct call skips the wrapper."""
    from kprof.launch import direct_launch

    run, calls = _nvidia_launcher(monkeypatch)
    function, packed = 0x7F00DEAD, ("meta", 3)
    launch, prefix = direct_launch(run, function, packed)
    assert launch is not run, "the installed Triton's launcher was not recognised: every launch takes the wrapper"
    args = (0x1000, 0x2000, 4096, 1e-6, 128)
    run(5, 1, 1, 77, function, packed, None, None, None, *args)
    launch(5, 1, 1, 77, *prefix, *args)
    assert len(calls) == 2 and calls[0] == calls[1]
    assert calls[0][:4] == (5, 1, 1, 77) and function in calls[0]
    launch(9, 2, 1, 78, *prefix, *args[::-1])  # grid, stream and arguments are per call, never frozen
    run(9, 2, 1, 78, function, packed, None, None, None, *args[::-1])
    assert calls[2] == calls[3]


def test_direct_launch_keeps_tritons_wrapper_when_the_kernel_needs_scratch(monkeypatch):
    from kprof.launch import direct_launch

    run, _ = _nvidia_launcher(monkeypatch, scratch=256)
    assert direct_launch(run, 1, ("m",)) == (run, (1, ("m",), None, None, None))


def test_direct_launch_keeps_an_unknown_launcher():
    """A launcher that is not Triton's CUDA one (another backend, a test double) is called as it is."""
    from kprof.launch import direct_launch

    seen = []

    class Odd:
        launch = None

        def __call__(self, *a):
            seen.append(a)

    odd = Odd()
    launch, prefix = direct_launch(odd, 5, ("m",))
    launch(1, 1, 1, 0, *prefix, 10, 11)
    assert launch is odd and seen == [(1, 1, 1, 0, 5, ("m",), None, None, None, 10, 11)]

    class Leaky:  # passes the stream inside what would become the prefix: refused
        def __init__(self):
            self.launch = lambda *a: seen.append(a)

        def __call__(self, gx, gy, gz, stream, function, *args):
            self.launch(gx, gy, gz, stream, function, stream, *args)

    leaky = Leaky()
    assert direct_launch(leaky, 5, ("m",))[0] is leaky


# ------------------------------------------------------- launches whose leading arguments are TMA descriptors
class _FakeMap:
    """Stands in for the encoded tensor map the CUDA driver would return (none without a GPU)."""

    def __init__(self, args: tuple) -> None:
        self.args = args

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FakeMap) and self.args == other.args

    __hash__ = None


def _described_setup(monkeypatch, meta: bool = True):
    """Triton's own CUDA launcher wrapper for a kernel ``(x_desc, y_desc, p, n, BLOCK)``, its C function replaced by a
    recorder and the driver's encoder by ``_FakeMap``; returns (run, calls, encodes, x, y)."""
    import triton

    driver_mod = pytest.importorskip("triton.backends.nvidia.driver")
    descriptor_mod = pytest.importorskip("triton.tools.tensor_descriptor")
    encodes: list[tuple] = []

    def encode(*args):
        encodes.append(args)
        return _FakeMap(args)

    utils = type("Utils", (), {"fill_tma_descriptor": staticmethod(encode)})()
    utils.fill_tma_descriptor_tiled = encode  # the name in later Tritons
    run, calls = _nvidia_launcher(monkeypatch)
    monkeypatch.setattr(triton.runtime.driver, "_active", type("Active", (), {"utils": utils})())
    signature = {
        "x_desc": "tensordesc<bf16[16, 32]>",
        "y_desc": "tensordesc<bf16[16, 32]>",
        "p": "*fp32",
        "n": "i32",
        "BLOCK": "constexpr",
    }
    block = {"swizzle": 2, "elem_size": 2, "elem_type": 10, "block_size": [16, 32], "fp4_padded": False}
    run.launch = driver_mod.wrap_handle_tensordesc(
        lambda *a: calls.append(a), signature, [block, block] if meta else [None, None]
    )
    make = descriptor_mod.TensorDescriptor.from_tensor
    x = torch.randn(64, 96).to(torch.bfloat16)
    y = torch.empty_like(x)
    return run, calls, encodes, lambda a, b: (make(a, [16, 32]), make(b, [16, 32])), x, y


def test_described_launch_passes_the_c_function_what_tritons_wrapper_does(monkeypatch):
    """A DescribedLaunch hands the C function what Triton's wrapper hands it for fresh descriptors, encodes a pair of
    addresses once, and takes the stream and the other arguments from each call."""
    import kprof.launch as kl

    run, calls, encodes, describe, x, y = _described_setup(monkeypatch)
    monkeypatch.setattr(kl, "_raw_stream", lambda device: 77)
    function, packed = 0x7F00DEAD, ("meta", 3)
    described = kl.DescribedLaunch.of(
        type("K", (), {"run": run, "function": function, "packed_metadata": packed}), (5,), 0
    )
    assert described is not None and described.c_launch is not None
    made = []

    def fresh(a, b):
        made.append((a.data_ptr(), b.data_ptr()))
        return describe(a, b)

    rest = (0x3000, 64, 16)
    for _ in range(3):
        described((x.data_ptr(), y.data_ptr()), lambda: fresh(x, y), rest)
    run(5, 1, 1, 77, function, packed, None, None, None, *describe(x, y), *rest)
    assert len(calls) == 4 and calls[0] == calls[1] == calls[2] == calls[3]
    assert made == [(x.data_ptr(), y.data_ptr())], "the pair's descriptors were made again on a call that had them"
    assert [e[0] for e in encodes] == [x.data_ptr(), y.data_ptr()] * 2  # our one miss, then the wrapper's own call
    z = torch.empty_like(x)
    monkeypatch.setattr(kl, "_raw_stream", lambda device: 78)
    described((x.data_ptr(), z.data_ptr()), lambda: fresh(x, z), rest[::-1])
    run(5, 1, 1, 78, function, packed, None, None, None, *describe(x, z), *rest[::-1])
    assert calls[4] == calls[5] and calls[4] != calls[0]
    assert made[-1] == (x.data_ptr(), z.data_ptr())


def test_described_launch_forgets_its_pairs_together_at_its_bound(monkeypatch):
    import kprof.launch as kl

    run, calls, _, describe, x, _ = _described_setup(monkeypatch)
    monkeypatch.setattr(kl, "_raw_stream", lambda device: 77)
    described = kl.DescribedLaunch.of(type("K", (), {"run": run, "function": 1, "packed_metadata": ("m",)}), (3,), 0)
    described.keep = 2
    outs = [torch.empty_like(x) for _ in range(3)]
    for out in outs:
        described((x.data_ptr(), out.data_ptr()), lambda out=out: describe(x, out), (0x10, 64, 16))
    assert len(described.kept) == 1 and (x.data_ptr(), outs[2].data_ptr()) in described.kept
    assert len(calls) == 3


def test_described_launch_keeps_no_tensor(monkeypatch):
    """Without encoding metadata Triton passes each descriptor's tensor itself: nothing is kept (it would keep the
    tensor's memory), and each call hands the C function what the wrapper does."""
    import kprof.launch as kl

    run, calls, _, describe, x, y = _described_setup(monkeypatch, meta=False)
    monkeypatch.setattr(kl, "_raw_stream", lambda device: 77)
    described = kl.DescribedLaunch.of(type("K", (), {"run": run, "function": 1, "packed_metadata": ("m",)}), (3,), 0)
    made = []
    for _ in range(2):
        described((x.data_ptr(), y.data_ptr()), lambda: made.append(1) or describe(x, y), (0x10, 64, 16))
    run(3, 1, 1, 77, 1, ("m",), None, None, None, *describe(x, y), 0x10, 64, 16)
    assert not described.kept and len(made) == 2
    assert calls[0] == calls[1] == calls[2] and any(a is x for a in _flat(calls[0]))


def _flat(call: tuple) -> list:
    return [v for a in call for v in (a if isinstance(a, (tuple, list)) else (a,))]


def test_described_launch_calls_a_wrapper_it_does_not_know_with_fresh_descriptors(monkeypatch):
    """A launcher wrapper without Triton's C function among its free variables runs as it is, every call."""
    import kprof.launch as kl

    monkeypatch.setattr(kl, "_raw_stream", lambda device: 77)
    seen = []

    class Plain:
        def __init__(self):
            self.launch = lambda *a: seen.append(a)

        def __call__(self, gx, gy, gz, stream, function, packed, *rest):
            self.launch(gx, gy, gz, stream, function, packed, *rest[3:])

    described = kl.DescribedLaunch.of(type("K", (), {"run": Plain(), "function": 1, "packed_metadata": 2}), (4,), 0)
    assert described is not None and described.c_launch is None
    made = []
    for _ in range(2):
        described((10, 20), lambda: made.append(1) or ("dx", "dy"), (5, 6))
    assert len(made) == 2 and seen == [(4, 1, 1, 77, 1, 2, "dx", "dy", 5, 6)] * 2


def test_described_launch_keeps_to_the_wrapper_where_its_recording_is_not_as_expected(monkeypatch):
    """A wrapper with a C function among its free variables that does not pass the arguments after the descriptors
    through unchanged: the launch is left to the wrapper, from the first call on."""
    import kprof.launch as kl

    monkeypatch.setattr(kl, "_raw_stream", lambda device: 77)
    seen = []

    def wrap(launcher):
        def inner(*args):
            launcher(*args[:-1], list(reversed(args[-1])))

        return inner

    class Reordering:
        def __init__(self):
            self.launch = wrap(lambda *a: seen.append(a))

        def __call__(self, gx, gy, gz, stream, function, packed, *rest):
            self.launch(gx, gy, gz, stream, function, packed, rest[3:])

    kernel = type("K", (), {"run": Reordering(), "function": 1, "packed_metadata": 2})
    described = kl.DescribedLaunch.of(kernel, (4,), 0)
    assert described is not None and described.c_launch is not None
    made = []
    for _ in range(2):
        described((10, 20), lambda: made.append(1) or ("dx", "dy"), (5, 6))
    assert described.recording is None and not described.kept and len(made) == 2
    assert seen == [(4, 1, 1, 77, 1, 2, [6, 5, "dy", "dx"])] * 2


def test_described_launch_encodes_in_two_threads_at_once(monkeypatch):
    """A second thread that encodes and launches while the first is inside Triton's wrapper (started from the encoder
    itself) leaves the first its own encoding: each launch gets its own descriptors'. (The recording is read per
    thread; a thread switch between a recording and its read cannot be forced from here, so this checks the
    interleaving that can.)"""
    import threading

    import triton

    import kprof.launch as kl

    run, calls, _, describe, x, y = _described_setup(monkeypatch)
    monkeypatch.setattr(kl, "_raw_stream", lambda device: 77)
    kernel = type("K", (), {"run": run, "function": 1, "packed_metadata": ("m",)})
    described = kl.DescribedLaunch.of(kernel, (3,), 0)
    described((x.data_ptr(), y.data_ptr()), lambda: describe(x, y), (0x10, 64, 16))  # learns the layout
    z = torch.empty_like(x)
    utils = triton.runtime.driver.active.utils  # the stand-in encoder, which Triton's wrapper reaches through it
    inner_encode, interleaved = utils.fill_tma_descriptor_tiled, []

    def encode_and_interleave(*args):
        if not interleaved:  # once, inside the first thread's recording: another thread encodes (x, z) to the end
            interleaved.append(1)
            other = threading.Thread(
                target=described, args=((x.data_ptr(), z.data_ptr()), lambda: describe(x, z), (0x20, 64, 16))
            )
            other.start()
            other.join()
        return inner_encode(*args)

    monkeypatch.setattr(utils, "fill_tma_descriptor_tiled", encode_and_interleave)
    monkeypatch.setattr(utils, "fill_tma_descriptor", encode_and_interleave, raising=False)
    described((y.data_ptr(), x.data_ptr()), lambda: describe(y, x), (0x30, 64, 16))
    run(3, 1, 1, 77, 1, ("m",), None, None, None, *describe(x, z), 0x20, 64, 16)
    run(3, 1, 1, 77, 1, ("m",), None, None, None, *describe(y, x), 0x30, 64, 16)
    assert interleaved and calls[1] == calls[3] and calls[2] == calls[4], "a thread launched another's encoding"


def test_a_plans_launch_asks_for_its_described_launch_once(monkeypatch):
    """``plans.Launch.described``: None until the kernel is compiled (no entry), then made once and kept, including
    the answer that Triton's wrapper must run as it is (asked again, nothing is made again)."""
    import kprof.launch as kl
    from kprof.kernels.lib import plans

    made = []
    answers = iter([None, "described"])

    def of(kernel, grid, device):
        made.append((kernel, grid, device))
        return next(answers)

    monkeypatch.setattr(kl.DescribedLaunch, "of", staticmethod(of))
    launcher = type("L", (), {"compiled": {("k",): "kernel", ("j",): "other"}})()
    wrapper_only, kept = plans.Launch(launcher, ("k",), (4,), (), {}), plans.Launch(launcher, ("j",), (2, 3), (), {})
    assert wrapper_only.described() is None and not made  # not compiled yet: not asked
    wrapper_only.entry = kept.entry = (None, (), 5)
    assert wrapper_only.described() is None and wrapper_only.described() is None
    assert kept.described() == "described" and kept.described() == "described"
    assert made == [("kernel", (4, 1, 1), 5), ("other", (2, 3, 1), 5)]
