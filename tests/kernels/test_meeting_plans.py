"""Launch plans of the wide-row kernels that take a workspace of partial sums (``split_rows.MeetingLaunch``, the
meeting kernels; ``split_rows.SplitLaunch``, the split path's two launches; rmsnorm's ``triton_tuned`` and the ops
API's ``rms_norm`` and ``fused_add_rms_norm``): on the CPU, that a meeting plan passes the kernel the arguments the
checked launch passes and counts the tickets it draws as the checked launch does, that threads on one stream never
share a ticket base nor come between a split plan's two launches, and that the wrappers make a plan once and launch
from it (the launch recorded, not run: the interpreter cannot run a meeting); on a GPU, planned calls of both
families and both kernels, interleaved with checked launches on one stream and another, captured in a CUDA graph and
made from four threads (the split path too), each against the float64 oracle."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.add_rmsnorm import cooperative as add_cooperative
from kprof.kernels.add_rmsnorm import op_plan as add_op_plan
from kprof.kernels.add_rmsnorm import tuned as add_tuned
from kprof.kernels.lib import launching, plans, split_rows
from kprof.kernels.lib.plans import sig
from kprof.kernels.rmsnorm import cooperative as rms_cooperative
from kprof.kernels.rmsnorm import tuned as rms_tuned

RMS, ADD = discover()["rmsnorm"], discover()["add_rmsnorm"]

# (rows, columns, row stride of x, dtype): odd widths, a chunk count that is not a power of two, strided rows
LAYOUTS = [(5, 70001, 70001, torch.bfloat16), (3, 65536, 65544, torch.float16), (2, 131072, 131072, torch.float32)]


def _checked_args(family: str, kernel: str, x: torch.Tensor, chunk: int, splits: int, programs: int) -> tuple:
    """(kernel, positional arguments after ``ticket_base`` with the constexprs in signature order, programs, tickets,
    chunks a row) of the checked launch (``_pipelined_call`` / ``_cooperative_call``) over ``x``'s rows, y and h
    contiguous."""
    module = rms_cooperative if family == "rmsnorm" else add_cooperative
    n_rows, n = x.shape
    y, w = torch.empty((n_rows, n), dtype=x.dtype), torch.empty(n, dtype=x.dtype)
    ws, sync = torch.empty(1, dtype=torch.float32), torch.empty(1, dtype=torch.int32)
    tensors = (x, w, y) if family == "rmsnorm" else (x, x, w, y, y)
    if kernel == "pipelined":
        meta = split_rows.pipelined_meta(n, chunk)
        grid, n_tickets = split_rows.pipelined_programs(n_rows, meta["SPLITS"], programs)
        jit, args, options = module._pipelined_call(*tensors, ws, sync, 0, 1e-5, n_tickets, meta, 8)
        tickets = n_tickets + grid
    else:
        meta = split_rows.cooperative_meta(n, splits)
        jit, args, options = module._cooperative_call(*tensors, ws, sync, 0, 1e-5, meta, 8)
        grid = tickets = n_rows * splits
    after = args[len(tensors) + 3 :]
    names = jit.arg_names[len(tensors) + 3 + len(after) :]
    return jit, after + tuple(options[name] for name in names), grid, tickets, meta["SPLITS"]


@pytest.mark.parametrize("family", ["rmsnorm", "add_rmsnorm"])
@pytest.mark.parametrize("kernel", ["pipelined", "cooperative"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda t: f"{t[0]}x{t[1]}s{t[2]}-{str(t[3])[6:]}")
def test_a_plan_passes_the_checked_launchs_arguments_and_counts_its_tickets(family, kernel, layout):
    """The plan's kernel, arguments after the leading buffers (strides, sizes, eps, constexprs in signature order),
    programs and tickets drawn a call are the checked launch's, for programs fewer and more than the tickets."""
    n_rows, n, stride, dtype = layout
    x = torch.empty((n_rows, stride), dtype=dtype)[:, :n]
    w = torch.empty(n, dtype=dtype)
    template = torch.empty(0)
    for programs in (7, 10_000):
        chunk, splits = 8192, -(-n // 16384)
        if family == "rmsnorm":
            plan = rms_cooperative.meeting_plan(
                kernel, n_rows, n, stride, 1e-5, chunk, splits, programs, 8, (sig(x), sig(w)), template
            )
        else:
            plan = add_cooperative.meeting_plan(
                kernel, n_rows, n, stride, stride, 1e-5, chunk, splits, programs, 8, (sig(x), sig(x), sig(w)), template
            )
        jit, tail, grid, tickets, chunks = _checked_args(family, kernel, x, chunk, splits, programs)
        assert plan.launch.launcher.jit_fn is jit
        assert plan.launch.tail == tail
        assert plan.launch.grid == (grid, 1, 1) and plan.tickets == tickets
        assert plan.ws_shape == (n_rows, chunks) and plan.counters == 1 + n_rows
        assert plan.launch.options == {"num_warps": 8}


class _Recording:
    """Stands in for a plan's compiled launch: records the arguments of each call, or raises ``error``."""

    entry = ("compiled",)

    def __init__(self, error: BaseException | None = None) -> None:
        self.calls: list[tuple] = []
        self.error = error

    def _record(self, *args: Any) -> None:
        self.calls.append(args)
        if self.error is not None:
            raise self.error

    __call__ = fast = _record


@pytest.mark.parametrize("how", ["call", "fast"])
def test_a_planned_launch_takes_the_streams_counters_and_counts_what_it_draws(monkeypatch, how):
    """Each call gets the stream's meeting counters, the ticket counter's value the host has counted so far and the
    float32 workspace kept with them (at least rows x chunks), and moves that count on by the launch's tickets; a
    launch that raises (an interrupt included) leaves its counters behind, and the next call starts on fresh ones at
    0."""
    monkeypatch.setattr(launching, "_MEETINGS", {})
    template = torch.empty(0)
    recording = _Recording()
    plan = split_rows.MeetingLaunch(recording, (3, 9), 40, template)
    leading = (torch.empty(2), torch.empty(2), torch.empty(2)) if how == "call" else (11, 22, 33)
    go = plan if how == "call" else plan.fast
    for i in range(3):
        go(*leading)
        args = recording.calls[-1]
        assert args[:3] == leading
        ws, sync, base = args[3:]
        counters, _, kept = launching.meeting_buffers(template, 4, 27)
        assert kept.dtype == torch.float32 and kept.numel() >= 3 * 9
        if how == "call":
            assert ws is kept and sync is counters
        else:
            assert (ws, sync) == (kept.data_ptr(), counters.data_ptr())
        assert base == 40 * i
    assert launching.meeting_counters(template, 4)[1] == 120
    for error in (RuntimeError("out of resources"), KeyboardInterrupt()):
        plan.launch = _Recording(error)
        with pytest.raises(type(error)):
            go(*leading)
        fresh, base = launching.meeting_counters(template, 4)
        assert fresh is not counters and base == 0
        counters = fresh


@pytest.mark.parametrize("how", ["call", "fast"])
def test_a_slotted_launch_takes_the_streams_slots_a_generation_on_each_call(monkeypatch, how):
    """A slotted plan's call gets the stream's kept int64 slots (at least rows x chunks), the ticket counter and the
    count drawn so far, and a generation one past the last call's; slots grown for more rows start over, zeroed, at
    generation 1, as the kept ones do once the generations reach int32's largest."""
    monkeypatch.setattr(launching, "_MEETINGS", {})
    template = torch.empty(0)
    recording = _Recording()
    plan = split_rows.MeetingLaunch(recording, (3, 9), 40, template, slotted=True)
    leading = (torch.empty(2), torch.empty(2), torch.empty(2)) if how == "call" else (11, 22, 33)
    go = plan if how == "call" else plan.fast
    for i in range(3):
        go(*leading)
        slots, sync, base, generation = recording.calls[-1][3:]
        counters, _ = launching.meeting_counters(template, 1)
        kept = launching._MEETINGS[(-1, 0)].slots
        assert kept.dtype == torch.int64 and kept.numel() >= 3 * 9
        assert (slots, sync) == ((kept, counters) if how == "call" else (kept.data_ptr(), counters.data_ptr()))
        assert (base, generation) == (40 * i, i + 1)
    kept.fill_(-1)
    grown, generation = launching.meeting_slots(template, 10**5)
    assert grown is not kept and grown.numel() >= 10**5 and generation == 1 and not grown.any()
    launching._MEETINGS[(-1, 0)].generation = 2**31 - 2
    assert launching.meeting_slots(template, 5)[1] == 2**31 - 1
    grown.fill_(-1)
    again, generation = launching.meeting_slots(template, 5)
    assert generation == 1 and again is not grown and not again.any()


def test_the_slotted_plan_passes_the_checked_launchs_arguments():
    """rmsnorm's slotted plan: the kernel, the arguments after the generation and the constexprs are those of the
    checked launch (``_slotted_call``), its programs and tickets as the pipelined plan's."""
    n_rows, n, stride, dtype = 5, 70001, 70008, torch.bfloat16
    x = torch.empty((n_rows, stride), dtype=dtype)[:, :n]
    w, y = torch.empty(n, dtype=dtype), torch.empty((n_rows, n), dtype=dtype)
    for programs in (7, 10_000):
        plan = rms_cooperative.meeting_plan(
            "slotted", n_rows, n, stride, 1e-5, 4096, 1, programs, 4, (sig(x), sig(w)), torch.empty(0)
        )
        meta = split_rows.pipelined_meta(n, 4096)
        grid, n_tickets = split_rows.pipelined_programs(n_rows, meta["SPLITS"], programs)
        jit, args, options = rms_cooperative._slotted_call(
            x, w, y, torch.empty(1, dtype=torch.int64), torch.empty(1, dtype=torch.int32), 0, 1, 1e-5, n_tickets,
            meta, 4,
        )  # fmt: skip
        after = args[7:]
        names = jit.arg_names[7 + len(after) :]
        assert plan.slotted and plan.launch.launcher.jit_fn is jit
        assert plan.launch.tail == after + tuple(options[name] for name in names)
        assert plan.launch.grid == (grid, 1, 1) and plan.tickets == n_tickets + grid
        assert plan.ws_shape == (n_rows, meta["SPLITS"]) and plan.launch.options == {"num_warps": 4}


def _in_threads(target: Any, args: list[tuple]) -> None:
    """``target(*a)`` for each ``a`` of ``args``, each in a thread of its own, all started before any is joined."""
    threads = [threading.Thread(target=target, args=a) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("how", ["call", "fast"])
def test_two_threads_on_one_stream_never_start_from_the_same_ticket_base(monkeypatch, how):
    """A launch holds the stream's counters from taking the ticket base until its tickets are counted: threads that
    launch at once on one stream start from bases a launch's tickets apart. Without the lock each of these launches,
    which sleeps (as a launch may, the GIL released) before its tickets are counted, read base 0."""
    monkeypatch.setattr(launching, "_MEETINGS", {})
    bases: list[int] = []

    class Slow:
        entry = ("compiled",)

        def _launch(self, *args: Any) -> None:
            bases.append(args[-1])
            time.sleep(0.02)

        __call__ = fast = _launch

    plan = split_rows.MeetingLaunch(Slow(), (3, 9), 40, torch.empty(0))
    go = plan if how == "call" else plan.fast
    _in_threads(go, [(1, 2, 3)] * 4)
    assert sorted(bases) == [0, 40, 80, 120]


@pytest.mark.parametrize("how", ["call", "fast"])
def test_threads_never_come_between_a_split_launchs_two_launches(monkeypatch, how):
    """The split path's second launch reads the partial sums its first wrote in the stream's one kept workspace, so
    threads launching on one stream must not come between them: each thread's two launches are next to each other,
    with the same workspace, whatever the threads do. Without the lock the first launches (which sleep, as a launch
    may, the GIL released) all ran before any second one."""
    order: list[tuple[str, int, Any]] = []

    class Half:
        entry = ("compiled",)

        def __init__(self, which: str) -> None:
            self.which = which

        def _launch(self, *args: Any) -> None:
            order.append((self.which, threading.get_ident(), args[-1]))
            if self.which == "first":
                time.sleep(0.02)

        __call__ = fast = _launch

    plan = split_rows.SplitLaunch(Half("first"), Half("second"), ((0,), (0, 1, 2)), 12, torch.empty(0))
    go = plan if how == "call" else plan.fast
    _in_threads(go, [(1, 2, 3)] * 4)
    assert [which for which, _, _ in order] == ["first", "second"] * 4
    for first, second in zip(order[::2], order[1::2]):
        assert first[1] == second[1]  # one thread's two launches
        assert first[2] is second[2] if how == "call" else first[2] == second[2]  # one workspace


def test_the_cpu_dispatch_plans_no_meeting():
    """The interpreter cannot run the meeting kernels (one program after another): a CPU call never plans one (its
    few wide rows take the split path, planned as two launches)."""
    x, w = torch.randn(4, 70001, dtype=torch.float32), torch.randn(70001, dtype=torch.float32)
    cfg = rms_tuned.config_for(70001, 4, 4, -1)
    assert cfg.kernel == "split"
    assert isinstance(rms_tuned._make_workspace_plan(cfg, x, w, 1e-5).launch, split_rows.SplitLaunch)
    for rows in (512, 4096):  # rows the GPU gives the meeting kernels
        cfg = rms_tuned.config_for(70001, 4, rows, -1)
        assert cfg.kernel not in ("split", "cooperative", "pipelined")
        assert rms_tuned._make_workspace_plan(cfg, torch.randn(rows, 70001), w, 1e-5) is None


class _Launches:
    """Stands in for ``MeetingLaunch``'s two ways to launch: records (how, plan, arguments) of each call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple] = []
        monkeypatch.setattr(split_rows.MeetingLaunch, "__call__", lambda plan, *a: self.calls.append(("jit", plan, a)))
        monkeypatch.setattr(split_rows.MeetingLaunch, "fast", lambda plan, *a: self.calls.append(("fast", plan, a)))


@pytest.fixture
def pipelined_everywhere(monkeypatch: pytest.MonkeyPatch):
    """Both families' dispatch answers the pipelined kernel, as a GPU's does at many wide rows (the CPU's never:
    these tests check the wrappers' use of the plan, with the launch recorded instead of run). The plans made are
    forgotten after the test: a CPU call that found one would launch a meeting kernel in the interpreter."""
    monkeypatch.setattr(rms_tuned, "config_for", lambda *a: rms_tuned.Config("pipelined", 8192, 1, 8, splits=9,
                                                                              programs_per_sm=4))  # fmt: skip
    add = add_tuned.Config("pipelined", 8192, 1, 8, splits=9, programs_per_sm=2)
    monkeypatch.setattr(add_tuned, "choose_config", lambda *a, **k: add)
    plans.reset()
    yield
    plans.reset()


needs_the_interpreter = pytest.mark.skipif(
    torch.cuda.is_available(), reason="CPU tensors take the Triton path under the interpreter only"
)


@needs_the_interpreter
def test_rmsnorm_plans_a_meeting_once_and_launches_it_from_the_plan(monkeypatch, pipelined_everywhere):
    """rmsnorm_tuned's first call of a signature makes the plan and launches through it (the JIT's launch); once the
    plan's kernel is compiled, calls pass it raw addresses; an ``out`` the plan cannot take and unaligned pointers
    take the checked path, which raises or launches as before."""
    launches = _Launches(monkeypatch)
    checked: list[tuple] = []
    monkeypatch.setattr(rms_tuned, "launch_with_config", lambda cfg, x2d, *a: checked.append((cfg.kernel, x2d)))
    x, w = torch.randn(5, 70001, dtype=torch.bfloat16), torch.randn(70001, dtype=torch.bfloat16)
    y = rms_tuned.rmsnorm_tuned(x, w, 1e-6)
    how, plan, args = launches.calls[-1]
    assert how == "jit" and args[0] is x and args[1] is w and args[2] is y and y.shape == x.shape
    assert len(rms_tuned._workspace_plans.plans) == 1 and not checked
    plan.launch.entry = ("compiled",)  # as after the JIT's first launch
    y = rms_tuned.rmsnorm_tuned(x, w, 1e-6)
    assert launches.calls[-1] == ("fast", plan, (x.data_ptr(), w.data_ptr(), y.data_ptr()))
    out = torch.empty(5, 70001, dtype=torch.bfloat16)
    assert rms_tuned.rmsnorm_tuned(x, w, 1e-6, out=out) is out and launches.calls[-1][2][2] == out.data_ptr()
    with pytest.raises(ValueError, match="out"):
        rms_tuned.rmsnorm_tuned(x, w, 1e-6, out=torch.empty(70001, 5, dtype=torch.bfloat16).t())
    unaligned = torch.randn(5 * 70001 + 1, dtype=torch.bfloat16)[1:].view(5, 70001)
    rms_tuned.rmsnorm_tuned(unaligned, w, 1e-6)
    assert checked[-1][0] == "pipelined" and checked[-1][1].data_ptr() == unaligned.data_ptr()
    assert len(launches.calls) == 3 and len(rms_tuned._workspace_plans.plans) == 1
    rms_tuned.rmsnorm_tuned(x, w, 1e-5)  # another eps: a plan of its own
    assert len(rms_tuned._workspace_plans.plans) == 2 and launches.calls[-1][0] == "jit"


@needs_the_interpreter
def test_fused_add_rms_norm_plans_a_meeting_once_and_launches_it_from_the_plan(monkeypatch, pipelined_everywhere):
    """The op's first call of a signature makes the plan and launches through it; once compiled, calls pass raw
    addresses of x, the residual, the weight and the two new outputs; strided rows get a plan of their own."""
    launches = _Launches(monkeypatch)
    previous = ops.use_triton(True)
    try:
        x, r = torch.randn(3, 65536, dtype=torch.float16), torch.randn(3, 65536, dtype=torch.float16)
        w = torch.randn(65536, dtype=torch.float16)
        y, h = ops.fused_add_rms_norm(x, r, w, 1e-6)
        how, plan, args = launches.calls[-1]
        assert how == "jit" and args[:3] == (x, r, w) and args[3] is y and args[4] is h
        plan.launch.entry = ("compiled",)
        y, h = ops.fused_add_rms_norm(x, r, w, 1e-6)
        assert launches.calls[-1] == ("fast", plan, tuple(t.data_ptr() for t in (x, r, w, y, h)))
        wide = torch.randn(3, 65544, dtype=torch.float16)[:, :65536]
        ops.fused_add_rms_norm(wide, r, w, 1e-6)
        other = launches.calls[-1][1]
        assert other is not plan and other.launch.tail[0] == 65544 and plan.launch.tail[0] == 65536
    finally:
        ops.use_triton(previous)


# ------------------------------------------------------------------------------------------------------------ GPU
def _dispatch(family: str, n_rows: int, n: int, dtype: torch.dtype) -> str:
    es = torch.empty((), dtype=dtype).element_size()
    if family == "rmsnorm":
        return rms_tuned.config_for(n, es, n_rows, 0).kernel
    sms, fast = launching.sm_count_at(0), launching.fast_memory_at(0)
    return add_tuned.choose_config(n, es, n_rows, sms, True, dtype == torch.float16, fast).kernel


MEETINGS = ("pipelined", "slotted", "cooperative")  # the dispatch's meeting kernels (slotted: on an H200)
# (rows, columns, dtype): shapes at which each family's dispatch takes its meeting kernels (MEETING_KERNELS)
SHAPES = [
    (512, 65536, torch.bfloat16),
    (513, 70001, torch.float16),
    (257, 65536, torch.float32),
    (130, 131072, torch.bfloat16),
    (100, 65536, torch.bfloat16),  # 12.5 MiB: add_rmsnorm's cooperative kernel on an H200 (8-16 MiB)
]
# The meeting kernels the dispatch takes at SHAPES, by family and whether the GPU is an H200
# (``launching.fast_memory_at``): an H100 pipelines 16-bit rows and meets float32 ones cooperatively; an H200 meets
# in slots, but for add_rmsnorm's 8-16 MiB, so its rmsnorm has no cooperative kernel left to test. Spelled out so
# that a dispatch change which leaves a kernel untested here fails this test instead of passing it by less.
MEETING_KERNELS = {
    ("rmsnorm", False): {"pipelined", "cooperative"},
    ("rmsnorm", True): {"slotted"},
    ("add_rmsnorm", False): {"pipelined", "cooperative"},
    ("add_rmsnorm", True): {"slotted", "cooperative"},
}


def _close(out: torch.Tensor, ref: torch.Tensor, dtype: str, what: str) -> None:
    assert not out.isnan().any(), what
    err = ((out.double() - ref).norm() / ref.norm()).item()
    assert err < RMS.tolerances[dtype], f"{what}: rel err {err:.2e}"


def _name(dtype: torch.dtype) -> str:
    return {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dtype]


def _planned(family: str) -> list[Any]:
    if family == "rmsnorm":
        return [p.launch for p in rms_tuned._workspace_plans.plans.values()]
    kinds = (split_rows.MeetingLaunch, split_rows.SplitLaunch)
    return [p[0] for p in add_op_plan.PLANS.plans.values() if p and isinstance(p[0], kinds)]


def _checked(family: str, x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> Any:
    """The family's checked launch (through the JIT, no plan) of the same call."""
    if family == "rmsnorm":
        x2d = x.reshape(-1, x.shape[-1])
        y = torch.empty_like(x2d)
        cfg = rms_tuned.config_for(x2d.shape[1], x2d.element_size(), x2d.shape[0], 0)
        rms_tuned.launch_with_config(cfg, x2d, w, y, 1e-6)
        return y.view(x.shape)
    return add_tuned.add_rmsnorm_checked(x, r, w, 1e-6)


@pytest.fixture
def triton_ops():
    """The ops API on its Triton path (off unless ``KPROF_USE_TRITON=1`` at import), as before the test after it."""
    previous = ops.use_triton(True)
    yield
    ops.use_triton(previous)


def _op(family: str, x: torch.Tensor, r: torch.Tensor, w: torch.Tensor) -> Any:
    return ops.rms_norm(x, w, 1e-6) if family == "rmsnorm" else ops.fused_add_rms_norm(x, r, w, 1e-6)


def _check(family: str, out: Any, x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, what: str) -> None:
    dtype = _name(x.dtype)
    if family == "rmsnorm":
        _close(out, RMS.oracle(x=x, weight=w, eps=1e-6), dtype, what)
        return
    ref_y, ref_h = ADD.oracle(x=x, residual=r, weight=w, eps=1e-6)
    _close(out[0], ref_y, dtype, f"{what} y")
    _close(out[1], ref_h, dtype, f"{what} h")


@pytest.mark.gpu
@pytest.mark.parametrize("family", ["rmsnorm", "add_rmsnorm"])
def test_planned_meetings_between_checked_ones_on_two_streams(family, triton_ops):
    """The op called again and again at shapes where the dispatch takes each of its meeting kernels on this GPU
    (MEETING_KERNELS; rows as one strided view of a wider x too), the family's checked launch between planned calls
    on the same stream's counters, once round on a second stream: every output against the oracle, and the plans
    were used (their compiled entries set, a plan for every shape)."""
    kernels = [_dispatch(family, n_rows, n, dtype) for n_rows, n, dtype in SHAPES]
    want = MEETING_KERNELS[family, launching.fast_memory_at(0)]
    assert set(kernels) & set(MEETINGS) == want, f"{family} dispatch: {kernels}, expected every one of {want}"
    before = set(map(id, _planned(family)))  # plans other tests made (some called once, so not yet compiled)
    seed = 0
    for stream in (None, torch.cuda.Stream(), None):
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            for n_rows, n, dtype in SHAPES:
                for strided in (False, True):
                    seed += 1
                    inp = ADD.make_inputs((n_rows, n + 8 if strided else n), _name(dtype), "cuda", seed=seed)
                    x, r, w = inp["x"][:, :n], inp["residual"][:, :n], inp["weight"][:n].contiguous()
                    what = f"{family} {n_rows}x{n}{' strided' if strided else ''} {dtype}"
                    for call in range(3):
                        _check(family, _op(family, x, r, w), x, r, w, f"{what} planned call {call}")
                        _check(family, _checked(family, x, r, w), x, r, w, f"{what} checked after call {call}")
    torch.cuda.synchronize()
    planned = [p for p in _planned(family) if id(p) not in before]
    meetings = sum(k in MEETINGS for k in kernels)
    assert len(planned) >= 2 * meetings and all(p.entry is not None for p in planned)


# (rows, columns) where both families' GPU dispatch takes a meeting kernel, and the split path (bf16)
KEPT_WORKSPACE = {"meeting": (513, 65536 + 7), "split": (3, 65536 + 7)}


def _takes(family: str, path: str) -> tuple[int, int]:
    n_rows, n = KEPT_WORKSPACE[path]
    kernel = _dispatch(family, n_rows, n, torch.bfloat16)
    assert kernel in (("split",) if path == "split" else MEETINGS), (family, path, kernel)
    return n_rows, n


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["meeting", "split"])
@pytest.mark.parametrize("family", ["rmsnorm", "add_rmsnorm"])
def test_a_cuda_graph_captures_a_planned_meeting(family, path, triton_ops):
    """A planned call captured in a CUDA graph gets zeroed counters and a workspace of its own (the counters zeroed
    again on every replay); the stream's counters and workspace go on serving right after: three replays with new
    inputs, then planned calls, against the oracle. The split path's two launches share the graph's workspace."""
    n_rows, n = _takes(family, path)
    inp = ADD.make_inputs((n_rows, n), "bf16", "cuda", seed=3)
    x, r, w = inp["x"].clone(), inp["residual"].clone(), inp["weight"]
    before = set(map(id, _planned(family)))
    for _ in range(2):  # compiled, and planned, before the capture
        _op(family, x, r, w)
    torch.cuda.synchronize()
    assert any(id(p) not in before and p.entry is not None for p in _planned(family))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = _op(family, x, r, w)
    for seed in range(3):
        new = ADD.make_inputs((n_rows, n), "bf16", "cuda", seed=10 + seed)
        x.copy_(new["x"])
        r.copy_(new["residual"])
        graph.replay()
        torch.cuda.synchronize()
        _check(family, out, x, r, w, f"replay {seed}")
        _check(family, _op(family, x, r, w), x, r, w, f"planned call after replay {seed}")


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["meeting", "split"])
@pytest.mark.parametrize("family", ["rmsnorm", "add_rmsnorm"])
def test_threads_launching_meetings_on_one_stream(family, path, triton_ops):
    """Four threads call the op again and again on the default stream, planned and checked launches in turn (one
    lock keeps each meeting launch's ticket base its own, and the split path's two launches together around the
    stream's one workspace): every output against the oracle."""
    n_rows, n = _takes(family, path)
    inputs = [ADD.make_inputs((n_rows, n), "bf16", "cuda", seed=40 + i) for i in range(4)]
    outputs: dict[tuple[int, int], Any] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        x, r, w = inputs[i]["x"], inputs[i]["residual"], inputs[i]["weight"]
        try:
            for call in range(6):
                outputs[(i, call)] = (_op if call % 2 == 0 else _checked)(family, x, r, w)
        except BaseException as exc:  # noqa: BLE001 - reported below, with the thread's index
            errors.append(exc)

    _in_threads(work, [(i,) for i in range(4)])
    torch.cuda.synchronize()
    assert not errors, errors
    for (i, call), out in sorted(outputs.items()):
        x, r, w = inputs[i]["x"], inputs[i]["residual"], inputs[i]["weight"]
        _check(family, out, x, r, w, f"thread {i} call {call}")
