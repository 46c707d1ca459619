"""The wide-row kernels' meeting counters (``launching.meeting_counters``, ``kernels/lib/split_rows.py``): kept per
device and stream and never zeroed by a launch of their own. On the CPU, the host's count of the tickets drawn;
on a GPU, launch after launch of both families at other row counts, chunk counts and dtypes on one stream, on a
second stream, from counters about to wrap around int32, and in a CUDA graph replayed, each against the float64
oracle."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import torch

from kprof.kernels import discover
from kprof.kernels.add_rmsnorm import cooperative as add_cooperative
from kprof.kernels.lib import launching, split_rows
from kprof.kernels.lib.split_rows import GENERATION
from kprof.kernels.rmsnorm import cooperative as rms_cooperative

RMS, ADD = discover()["rmsnorm"], discover()["add_rmsnorm"]


def test_the_host_counts_the_tickets_drawn_from_one_base_per_device_and_stream(monkeypatch):
    """A fresh buffer starts at base 0; each launch's tickets move the base on, wrapping as the int32 counter does
    (the base is passed as the int32 the kernel subtracts); a bigger buffer starts again at 0; counters the host
    did not hand out (a CUDA graph's own) are not counted."""
    monkeypatch.setattr(launching, "_MEETINGS", {})
    t = torch.empty(1)
    counters, base = launching.meeting_counters(t, 10)
    assert base == 0 and counters.dtype == torch.int32 and counters.numel() >= 10 and not counters.any()
    launching.meeting_tickets_drawn(counters, 2**31 - 3)
    assert launching.meeting_counters(t, 10) == (counters, 2**31 - 3)
    launching.meeting_tickets_drawn(counters, 5)  # past 2**31 - 1: the int32 counter reads -2**31 + 1
    assert launching.meeting_counters(t, 10)[1] == -(2**31) + 2
    launching.meeting_tickets_drawn(counters, 2**31 - 2)  # once round: back at 0
    assert launching.meeting_counters(t, 10)[1] == 0
    launching.meeting_tickets_drawn(torch.zeros(10, dtype=torch.int32), 7)  # not a buffer the host handed out
    assert launching.meeting_counters(t, 10)[1] == 0
    launching.meeting_tickets_drawn(counters, 7)
    bigger, base = launching.meeting_counters(t, counters.numel() + 1)
    assert bigger is not counters and base == 0 and not bigger.any()
    # apart from the zero-between-calls ticket counters of the split-K kernels
    assert launching.ticket_counters(t, 10) is not bigger


def test_the_workspace_of_partial_sums_is_kept_with_the_counters(monkeypatch):
    """The partial sums' workspace comes with the counters of the same device and stream: the same float32 buffer call
    after call while it is big enough, a bigger one (and the same counters, the same base) when a launch needs more,
    and a fresh one with fresh counters once a failed launch dropped them."""
    monkeypatch.setattr(launching, "_MEETINGS", {})
    t = torch.empty(1)
    counters, base, ws = launching.meeting_buffers(t, 10, 40)
    assert (base, ws.dtype, ws.device) == (0, torch.float32, t.device) and ws.numel() >= 40 and ws.is_contiguous()
    launching.meeting_tickets_drawn(counters, 6)
    again = launching.meeting_buffers(t, 10, 40)
    assert again[0] is counters and again[1] == 6 and again[2] is ws
    assert launching.meeting_counters(t, 10) == (counters, 6)  # the counters alone: the same record
    more = ws.numel() + 1
    grown, base, bigger = launching.meeting_buffers(t, 10, more)
    assert grown is counters and base == 6 and bigger is not ws and bigger.numel() >= more
    assert launching.meeting_buffers(t, 10, 40)[2] is bigger  # not shrunk back
    launching.meeting_forget(counters)
    fresh, base, ws = launching.meeting_buffers(t, 10, 40)
    assert fresh is not counters and base == 0 and ws is not bigger


def test_the_split_paths_workspace_is_new_for_each_interpreter_call(monkeypatch):
    """On the CPU (Triton's interpreter runs a launch on the calling thread, so threads share no stream order) the split
    path's workspace is a new float32 buffer each call, and no stream's record is made for it."""
    monkeypatch.setattr(launching, "_MEETINGS", {})
    t = torch.empty(1)
    first, second = launching.partials_workspace(t, 40), launching.partials_workspace(t, 40)
    assert first is not second and first.dtype == torch.float32 and first.numel() == 40
    assert launching._MEETINGS == {}


def test_a_launch_that_raises_leaves_its_counters_and_the_next_starts_fresh(monkeypatch):
    """A launch that raises may or may not have drawn its tickets, so the host's count of them cannot be trusted:
    its counters are dropped, and the next call on the stream gets fresh ones from base 0. A launch that returns is
    counted."""
    monkeypatch.setattr(launching, "_MEETINGS", {})
    t = torch.empty(1)

    class Kernel:
        def __init__(self, error: BaseException | None) -> None:
            self.error = error

        def __getitem__(self, grid: tuple[int]) -> Any:
            def launch(*args: Any, **options: Any) -> str:
                if self.error is not None:
                    raise self.error
                return "compiled"

            return launch

    counters, base = launching.meeting_counters(t, 10)
    assert split_rows.launch_meeting(Kernel(None), (3,), (), {}, counters, 5) == "compiled"
    assert launching.meeting_counters(t, 10) == (counters, 5)
    for error in (RuntimeError("out of resources"), KeyboardInterrupt()):
        with pytest.raises(type(error)):
            split_rows.launch_meeting(Kernel(error), (3,), (), {}, counters, 5)
        fresh, base = launching.meeting_counters(t, 10)
        assert fresh is not counters and base == 0 and not fresh.any()
        counters = fresh


def test_a_register_cap_reaches_the_launch_only_where_one_is_given(monkeypatch):
    """``maxnreg`` (the wide-row kernels' ``launch_slotted``): passed to the launch as ptxas's cap where it is not 0,
    left out where it is (the compiler's choice), the caller's options untouched."""
    monkeypatch.setattr(launching, "_MEETINGS", {})
    seen = []

    class Kernel:
        def __getitem__(self, grid: tuple[int]) -> Any:
            return lambda *args, **options: seen.append(options)

    counters, _ = launching.meeting_counters(torch.empty(1), 10)
    options = {"num_warps": 8}
    split_rows.launch_meeting(Kernel(), (3,), (), options, counters, 5, maxnreg=48)
    split_rows.launch_meeting(Kernel(), (3,), (), options, counters, 5)
    assert seen == [{"num_warps": 8, "maxnreg": 48}, {"num_warps": 8}] and options == {"num_warps": 8}


def _rmsnorm(x: torch.Tensor, w: torch.Tensor, kernel: str) -> torch.Tensor:
    y = torch.empty_like(x)
    if kernel in ("pipelined", "slotted"):
        launch = rms_cooperative.launch_pipelined if kernel == "pipelined" else rms_cooperative.launch_slotted
        launch(x, w, y, 1e-6, 4096, 3 * torch.cuda.get_device_properties(0).multi_processor_count, 8)
    else:
        rms_cooperative.launch_cooperative(x, w, y, 1e-6, -(-x.shape[1] // 8192), 8)
    return y


def _add_rmsnorm(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, kernel: str) -> tuple[torch.Tensor, torch.Tensor]:
    y, h = torch.empty_like(x), torch.empty_like(x)
    if kernel in ("pipelined", "slotted"):  # add_rmsnorm has no slotted kernel
        add_cooperative.launch_pipelined(
            x, r, w, y, h, 1e-6, 8192, 2 * torch.cuda.get_device_properties(0).multi_processor_count, 8
        )
    else:
        add_cooperative.launch_cooperative(x, r, w, y, h, 1e-6, -(-x.shape[1] // 16384), 16)
    return y, h


def _close(out: torch.Tensor, ref: torch.Tensor, dtype: str, what: str) -> None:
    assert not out.isnan().any(), what
    err = ((out.double() - ref).norm() / ref.norm()).item()
    assert err < RMS.tolerances[dtype], f"{what}: rel err {err:.2e}"


# (rows, columns, dtype, kernel): rows and chunk counts that differ from one launch to the next
SEQUENCE = [
    (300, 65536, "bf16", "pipelined"),
    (77, 100003, "fp16", "slotted"),
    (129, 131072, "fp32", "cooperative"),
    (5, 70001, "bf16", "pipelined"),
    (513, 40000, "fp32", "cooperative"),
    (300, 65536, "bf16", "slotted"),
    (77, 100003, "fp16", "pipelined"),
    (3, 70001, "bf16", "slotted"),
]


def _one_launch(rows: int, n: int, dtype: str, kernel: str, seed: int, what: str) -> None:
    inp = ADD.make_inputs((rows, n), dtype, "cuda", seed=seed)
    x, r, w = inp["x"], inp["residual"], inp["weight"]
    _close(_rmsnorm(x, w, kernel), RMS.oracle(x=x, weight=w, eps=1e-6), dtype, f"rmsnorm {what}")
    y, h = _add_rmsnorm(x, r, w, kernel)
    ref_y, ref_h = ADD.oracle(x=x, residual=r, weight=w, eps=1e-6)
    _close(y, ref_y, dtype, f"add_rmsnorm y {what}")
    _close(h, ref_h, dtype, f"add_rmsnorm h {what}")  # the families' tolerances are the same


@pytest.mark.gpu
def test_launch_after_launch_on_one_stream_and_another():
    """Both families, both kernels, rows and chunks a row changing every launch, twice round on the default
    stream and once on a second one (counters of its own), then once more on the first."""
    for round_, stream in enumerate([None, None, torch.cuda.Stream(), None]):
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            for i, (rows, n, dtype, kernel) in enumerate(SEQUENCE):
                _one_launch(
                    rows, n, dtype, kernel, seed=100 * round_ + i, what=f"round {round_} {rows}x{n} {dtype} {kernel}"
                )
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_counters_about_to_wrap_around_int32():
    """The stream's ticket counter a few tickets short of 2**31 and its rows' counters at the last multiples of
    GENERATION before 2**31 and 2**32, as a long-running process leaves them: every launch still right."""
    x = torch.empty(1, device="cuda")
    counters, _ = launching.meeting_counters(x, 1 + 1024)
    torch.cuda.synchronize()
    have = next(m for m in launching._MEETINGS.values() if m.counters is counters)
    have.drawn = 2**31 - 7
    counters[0] = 2**31 - 7
    rows = torch.arange(counters.numel() - 1, device="cuda")
    counters[1:] = torch.where(rows % 2 == 1, 2**31 - GENERATION.value, -GENERATION.value).to(torch.int32)
    for i, (rows_, n, dtype, kernel) in enumerate(SEQUENCE[:3]):
        _one_launch(rows_, n, dtype, kernel, seed=7 + i, what=f"wrapping {rows_}x{n} {dtype} {kernel}")
    torch.cuda.synchronize()
    assert have.drawn >= 2**31  # the int32 counter went past 2**31 - 1
    assert int(counters[0]) == have.drawn - (1 << 32 if have.drawn >= 1 << 31 else 0)
    assert not (counters[1:] % GENERATION.value).any()


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["pipelined", "cooperative", "slotted"])
def test_a_cuda_graph_replays_the_meeting(kernel):
    """Captured in a CUDA graph the launch gets zeroed counters of its own (the slotted kernel: zeroed slots and a
    generation of its own), zeroed again on every replay: three replays with new inputs each, against the oracle,
    and a launch outside the graph on the stream's kept buffers after each."""
    rows, n, dtype = 257, 65536 + 7, "bf16"
    inp = ADD.make_inputs((rows, n), dtype, "cuda", seed=3)
    x, w = inp["x"].clone(), inp["weight"]
    _rmsnorm(x, w, kernel)  # compiled before the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = _rmsnorm(x, w, kernel)
    for seed in range(3):
        x.copy_(ADD.make_inputs((rows, n), dtype, "cuda", seed=10 + seed)["x"])
        graph.replay()
        torch.cuda.synchronize()
        ref = RMS.oracle(x=x, weight=w, eps=1e-6)
        _close(y, ref, dtype, f"replay {seed}")
        _close(_rmsnorm(x, w, kernel), ref, dtype, f"outside the graph after replay {seed}")
