"""Per-case measurement: correctness against the float64 oracle first, then GPU time (all samples),
CUDA-graph replay time, host time per call and peak device memory.

A case that fails correctness is not timed: its numbers would look valid in a table and they are not.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import random
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from kprof import timing as modes
from kprof.device import max_sm_clock_mhz
from kprof.errors import UnsupportedConfig
from kprof.registry import YARDSTICK_KINDS, Case, Family, Inputs, Provider
from kprof.runtime import route_choices_made, route_choices_since
from kprof.specialization import recording


@dataclass(frozen=True)
class BenchSettings:
    warmup_ms: int = 25
    rep_ms: int = 100
    """do_bench's repetition budget; each call is one sample (L2 flushed before it)."""
    host_calls: int = 100
    """Calls per host-time sample, issued back to back without synchronising."""
    host_reps: int = 7
    graph: bool = True
    seed: int = 0
    """Base seed; each case draws its own inputs from (seed, case shape, dtype)."""
    mode: str = "cold"
    """Declared timing mode whose samples are the case's headline time (kprof.timing.MODES)."""
    events: bool = False
    """Also time with CUDA events around each call (the method before declared modes), for comparison."""
    placements: int = 4
    """Places in device memory a small case's tensors are timed at (:data:`PLACEMENT_MAX_BYTES`)."""


@dataclass(frozen=True)
class Correctness:
    ok: bool
    rel_err: float
    """||out - ref|| / ||ref|| in float64; the largest over the outputs of a multi-output provider."""
    max_abs_err: float
    unwritten: int
    """Output elements still holding the poison value (NaN) after the call."""
    tolerance: float
    note: str | None = None


@dataclass(frozen=True)
class CaseResult:
    case: Case
    status: str  # "ok" | "fail" (wrong result) | "skipped" (cannot run here) | "error" (raised)
    note: str | None = None
    correctness: Correctness | None = None
    gpu_samples_ms: tuple[float, ...] = ()
    graph_time_ms: float | None = None
    graph_host_us: float | None = None
    host_samples_us: tuple[float, ...] = ()
    mode_samples_us: dict = field(default_factory=dict)
    """Per-call samples (us) of every mode measured: cold, cold_sum, warm, warm_sum, graph, host, events."""
    timing_mode: str = ""
    """The declared mode of ``gpu_samples_ms`` (settings.mode)."""
    timer: str = ""
    """Where the cold/warm times came from: "cupti" (activity records) or "events" (the fallback)."""
    peak_mem_bytes: int | None = None
    bytes: int = 0
    flops: int = 0
    timed: bool = False
    extra: dict = field(default_factory=dict)


OUT_OF_MEMORY = "CUDA out of memory twice, the allocator's cache emptied in between: "  # such a case's note


def case_seed(base: int, case: Case) -> int:
    """Seed for a case's inputs: every provider of one (shape, dtype) sees the same data."""
    digest = hashlib.sha256(f"{base}/{case.family}/{case.shape}/{case.dtype}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def _as_tuple(value: Any) -> tuple[torch.Tensor, ...]:
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, torch.Tensor) for v in value):
        return tuple(value)
    raise TypeError(f"a provider must return a tensor or a tuple of tensors, got {type(value).__name__}")


def _poison_(t: torch.Tensor) -> None:
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    else:
        t.fill_(-(2**31) if t.dtype == torch.int32 else -1)


def _poison_allocator(shapes: Sequence[tuple[int, ...]], device: torch.device, dtype: torch.dtype) -> None:
    """Leave NaN-filled blocks of the outputs' sizes in PyTorch's caching allocator.

    Providers that allocate their own output get one of these blocks back, so an element the kernel
    never writes reads as NaN instead of whatever happened to be there (often a correct earlier answer).
    """
    if device.type != "cuda":
        return
    blocks = [torch.full(s, float("nan"), dtype=dtype, device=device) for s in shapes]
    del blocks


# Elements of a family's row inputs above which the check runs the oracle a block of rows at a time. The
# rmsnorm oracle holds about three float64 copies of x at once: at 32768 x 131072 that is 96 GiB whole,
# more than an H100 has; in blocks of 2**26 elements it is 1.5 GiB.
ORACLE_BLOCK_ELEMENTS = 1 << 26


def oracle_row_blocks(family: Family, inputs: Inputs, limit: int | None = None) -> list[slice] | None:
    """Blocks of rows to run the oracle on (each with at most ``limit`` elements of row inputs, by default
    ``ORACLE_BLOCK_ELEMENTS``), or None where the case is small enough to check whole (or the family does
    not declare its row inputs)."""
    limit = ORACLE_BLOCK_ELEMENTS if limit is None else limit
    names = [k for k in family.row_inputs if isinstance(inputs.get(k), torch.Tensor) and inputs[k].dim() > 0]
    if not names:
        return None
    rows = inputs[names[0]].shape[0]
    per_row = sum(inputs[k][0].numel() for k in names) if rows else 0
    if rows <= 1 or per_row * rows <= limit:
        return None
    step = max(1, limit // max(per_row, 1))
    return [slice(a, min(a + step, rows)) for a in range(0, rows, step)]


def _rows_of(family: Family, inputs: Inputs, block: slice) -> Inputs:
    return {k: v[block] if k in family.row_inputs and isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _fingerprint(family: Family, inputs: Inputs, blocks: list[slice]) -> list[float]:
    """Float64 sums of the row inputs, block by block: the blocked check runs the oracle after the provider,
    so it must know the provider left its inputs as they were."""
    return [float(inputs[k][b].double().sum()) for k in family.row_inputs if k in inputs for b in blocks]


def _error_sums(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, float, int]:
    """(sum of squared errors, sum of squared truth, largest error, elements left NaN) of one output."""
    o = out.double()
    unwritten = int((torch.isnan(o) & ~torch.isnan(ref)).sum())
    diff = o - ref
    return float(diff.pow(2).sum()), float(ref.pow(2).sum()), float(diff.abs().max()), unwritten


def _nan_max(a: float, b: float) -> float:
    return max(a, b, key=lambda v: (math.isnan(v), v))


def check_correctness(family: Family, provider: Provider, case: Case, inputs: Inputs) -> Correctness:
    """Call the provider once on poisoned outputs and compare with the float64 oracle: ||out - ref|| /
    ||ref|| per output, the largest of them. A case with more than ``ORACLE_BLOCK_ELEMENTS`` elements of
    row inputs is compared a block of rows at a time (same sums, a fraction of the memory)."""
    if provider.kind in YARDSTICK_KINDS:
        provider.fn(**inputs)  # it must at least run
        return Correctness(True, math.nan, math.nan, 0, family.tolerances[case.dtype], None)
    return _check_call(family, provider, case, inputs, provider.accepts_out and family.make_outputs is not None)


AS_TIMED = "as timed (a later call, no out=): "  # the note of a case whose timed call fails the check


def check_as_timed(family: Family, provider: Provider, case: Case, inputs: Inputs) -> Correctness:
    """The check of :func:`check_correctness` on the call the timings repeat: ``provider.fn(**inputs)``, without
    ``out=``, after a first call (its outputs taken from an allocator left holding NaN, on a GPU).

    That call can run other code than the first one: a version taking ``out=`` is checked on it, while the call
    timed allocates its own (add_rmsnorm's, silu_mul's and gelu_mul's ``triton_tuned`` then launch as the op
    does, from its plan); a version builds a launch plan or races its routes on a signature's first call and
    launches from that plan, or the route the race picked, from the second on. A time is only reported for code
    that was checked."""
    if provider.kind in YARDSTICK_KINDS:
        return check_correctness(family, provider, case, inputs)
    corr = _check_call(family, provider, case, inputs, use_out=False)
    return corr if corr.ok else replace(corr, note=AS_TIMED + str(corr.note))


def worse(a: Correctness, b: Correctness) -> Correctness:
    """Two passing checks of one case as one: the larger errors of the two."""
    return replace(a, rel_err=_nan_max(a.rel_err, b.rel_err), max_abs_err=_nan_max(a.max_abs_err, b.max_abs_err))


def _check_call(family: Family, provider: Provider, case: Case, inputs: Inputs, use_out: bool) -> Correctness:
    """One call of the provider (``use_out``: into poisoned ``out=`` tensors, else on a poisoned allocator)
    against the oracle."""
    tol = family.tolerances[case.dtype]
    blocks = oracle_row_blocks(family, inputs)
    if blocks is None:
        refs = _as_tuple(family.oracle(**inputs))
        shapes = [tuple(r.shape) for r in refs]
        before = None
    else:
        refs = None
        first = _as_tuple(family.oracle(**_rows_of(family, inputs, slice(0, 1))))
        shapes = [(blocks[-1].stop, *r.shape[1:]) for r in first]
        before = _fingerprint(family, inputs, blocks)
    if use_out:
        outs = _as_tuple(family.make_outputs(**inputs))
        for o in outs:
            _poison_(o)
        result = _as_tuple(provider.fn(**inputs, out=outs[0] if len(outs) == 1 else outs))
        if any(r.data_ptr() != o.data_ptr() for r, o in zip(result, outs)):
            return Correctness(False, math.nan, math.nan, 0, tol, "provider ignored out= and returned a new tensor")
    else:
        _poison_allocator(shapes, _device_of(inputs), inputs_dtype(inputs))
        result = _as_tuple(provider.fn(**inputs))
    if len(result) != len(shapes):
        return Correctness(False, math.nan, math.nan, 0, tol, f"returned {len(result)} outputs, expected {len(shapes)}")
    for out, shape in zip(result, shapes):
        if tuple(out.shape) != shape:
            return Correctness(False, math.nan, math.nan, 0, tol, f"output shape {tuple(out.shape)}, expected {shape}")
    if blocks is None:
        sums = [_error_sums(out, ref) for out, ref in zip(result, refs)]
    else:
        if _fingerprint(family, inputs, blocks) != before:
            return Correctness(False, math.nan, math.nan, 0, tol, "provider changed its inputs")
        sums = [(0.0, 0.0, 0.0, 0)] * len(result)
        for b in blocks:
            part = _as_tuple(family.oracle(**_rows_of(family, inputs, b)))
            for i, (out, ref) in enumerate(zip(result, part)):
                n, d, m, u = _error_sums(out[b], ref)
                sums[i] = (sums[i][0] + n, sums[i][1] + d, _nan_max(sums[i][2], m), sums[i][3] + u)
            del part
    return _verdict(sums, tol)


def _verdict(sums: Sequence[tuple[float, float, float, int]], tol: float) -> Correctness:
    """The check's verdict from each output's error sums (:func:`_error_sums`)."""
    rel = max_abs = 0.0
    unwritten = 0
    for num, den, worst, lost in sums:
        # each output on its own scale: a small output (per-seed statistics beside a large activation)
        # must not hide its errors inside the large one's norm
        rel = _nan_max(rel, math.sqrt(num / den) if den > 0 else math.sqrt(num))
        max_abs = _nan_max(max_abs, worst)
        unwritten += lost
    note = None
    if unwritten:
        note = f"{unwritten} output elements never written"
    elif not math.isfinite(rel):
        note = "output has NaN or Inf"
    elif rel > tol:
        note = f"relative error {rel:.2e} above tolerance {tol:.0e}"
    ok = note is None
    return Correctness(ok, rel, max_abs, unwritten, tol, note)


def _device_of(inputs: Inputs) -> torch.device:
    for v in inputs.values():
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device("cpu")


def inputs_dtype(inputs: Inputs) -> torch.dtype:
    for v in inputs.values():
        if isinstance(v, torch.Tensor) and v.dtype.is_floating_point:
            return v.dtype
    return torch.float32


# --------------------------------------------------------------------------------------------- timing


def time_gpu(fn: Callable[[], Any], settings: BenchSettings, host_us: float | None = None) -> list[float]:
    """All per-call GPU times (ms): ``triton.testing.do_bench``'s method, with a guard for small kernels and
    kprof's flush.

    As in do_bench: one CUDA event pair per call, the L2 flushed before each call, warm-up and repetition
    budgets in ms. Unlike it, a GPU spin (``torch.cuda._sleep``) is queued after each flush, long enough to
    cover the call's host time, so the GPU never waits on the host between the start event and the kernel.
    Without it, a call whose host cost approaches the flush time measures its own launch overhead: on an
    H100, Liger's rms_norm at 64x4096 bf16 read 52.6 us (IQR 36% of median) under do_bench while its kernel
    takes 1.8 us in a CUDA graph. And the flush is kprof's read-only one (:func:`kprof.timing.flush`), as in
    the ``cold`` mode: do_bench zeroes a 256 MB buffer, which leaves the L2 full of dirty lines that the timed
    call then writes back. On an H100 that read 8.5-16.4 us over the CUPTI cold time for kernels of 17-250 us,
    against 2.7-4.2 us with the read-only flush (``benchmarks/results/timing-modes/events-fallback/``).
    """
    fl = modes.flush()
    fn()
    torch.cuda.synchronize()
    lead_us = 1.5 * host_us + 20.0 if host_us else 100.0
    cycles = int(lead_us * 1e3 * modes.SPIN_GHZ)

    def one(start: torch.cuda.Event, end: torch.cuda.Event) -> None:
        fl()
        torch.cuda._sleep(cycles)
        start.record()
        fn()
        end.record()

    # budget in GPU time per iteration, flush and spin included (as do_bench's estimate includes its flush)
    s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(5):
        one(s0, s1)
    t1.record()
    torch.cuda.synchronize()
    iter_ms = max(t0.elapsed_time(t1) / 5, 1e-3)
    n_warmup = max(1, int(settings.warmup_ms / iter_ms))
    n_repeat = max(5, int(settings.rep_ms / iter_ms))
    for _ in range(n_warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for s, e in zip(starts, ends):
        one(s, e)
    torch.cuda.synchronize()
    return [float(s.elapsed_time(e)) for s, e in zip(starts, ends)]


def time_graph(fn: Callable[[], Any], settings: BenchSettings) -> tuple[list[float], float | None, str | None]:
    """(GPU ms per call of each replay of a CUDA graph holding many calls, host us per replay, note).
    No L2 flush in between."""
    import triton.testing

    try:
        got = triton.testing.do_bench_cudagraph(fn, rep=max(20, settings.rep_ms // 2), return_mode="all")
        ms = [float(v) for v in got] if isinstance(got, (list, tuple)) else [float(got)]
    except Exception as exc:  # noqa: BLE001 - some providers cannot be captured; say why, keep going
        return [], None, f"CUDA graph capture failed: {type(exc).__name__}: {str(exc)[:200]}"
    finally:
        torch.cuda.synchronize()
    # host cost of one replay of a graph holding one call
    try:
        from kprof.launch import GraphedCall

        graphed = GraphedCall(fn)
        for _ in range(10):
            graphed()
        torch.cuda.synchronize()
        n = 200
        t0 = time.perf_counter_ns()
        for _ in range(n):
            graphed.graph.replay()
        t1 = time.perf_counter_ns()
        torch.cuda.synchronize()
        host_us = (t1 - t0) / n / 1e3
    except Exception as exc:  # noqa: BLE001
        return ms, None, f"graph replay timing failed: {type(exc).__name__}: {str(exc)[:200]}"
    return ms, host_us, None


def rough_gpu_ms(fn: Callable[[], Any], calls: int = 3) -> float:
    """A quick GPU time per call (ms), only to size later measurements."""
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def time_host(fn: Callable[[], Any], settings: BenchSettings, gpu_ms: float | None = None) -> list[float]:
    """Host wall time per call (us): calls issued back to back, no synchronisation; one sample per batch.

    This is what a caller's thread pays per call (argument checks, allocation, launch). It is only the
    launch overhead while the GPU keeps up; when the GPU is slower, calls queue up and block. Batches
    are kept to ~20 ms of GPU work (``gpu_ms`` per call) so the launch queue never fills.
    """
    cuda = torch.cuda.is_available()
    calls = settings.host_calls
    if gpu_ms and gpu_ms > 0:
        calls = max(5, min(calls, int(20.0 / gpu_ms)))
    for _ in range(min(10, calls)):
        fn()
    samples = []
    for _ in range(settings.host_reps):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter_ns()
        samples.append((t1 - t0) / calls / 1e3)
    if cuda:
        torch.cuda.synchronize()
    return samples


def race(fns: dict[str, Callable[[], Any]], settings: BenchSettings, rounds: int = 3) -> dict[str, list[float]]:
    """Median GPU time (us) of each function in each of ``rounds`` interleaved rounds (A B C A B C ...),
    so drift of the machine hits every contender alike; ratios between them are taken in one process."""
    host = {name: sorted(time_host(fn, settings))[settings.host_reps // 2] for name, fn in fns.items()}
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            samples = sorted(time_gpu(fn, settings, host_us=host[name]))
            times[name].append(samples[len(samples) // 2] * 1e3)
    return times


def peak_memory(fn: Callable[[], Any]) -> int:
    """Device memory the call allocates at its peak (outputs and temporaries), in bytes."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    result = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del result
    return int(peak)


# -------------------------------------------------------------------------------------------- one case
@dataclass(frozen=True)
class MoreSamples:
    """One more round of a case's headline samples (:func:`more_gpu_samples`): the samples (ms), what timed
    them (:func:`kprof.metrics.headline_source`) and what the round's measurement noted (calls the SM clock
    slowed, a fallback)."""

    samples_ms: tuple[float, ...]
    source: str
    notes: tuple[str, ...] = ()


def more_gpu_samples(
    family: Family,
    provider: Provider,
    case: Case,
    *,
    device: str,
    settings: BenchSettings,
    host_us: float,
) -> MoreSamples:
    """Another round of the headline samples of a case already checked by :func:`run_case` (same inputs:
    same seed), measured anew in the declared mode.

    Interleaved comparisons (``kprof profile --rev A --rev B``) time each revision in several short rounds,
    A B B A ..., so a transient on the machine lands in one round of each instead of all of one side. Each
    round measures what the headline is: host and graph times too (the CUPTI session below gives neither,
    and a round that repeated round 0's host median would pass one window per arm as alternated)."""
    inputs = family.make_inputs(case.shape, case.dtype, device, case_seed(settings.seed, case))
    call = functools.partial(provider.fn, **inputs)
    if settings.mode == "host":
        host = time_host(call, settings, gpu_ms=rough_gpu_ms(call))
        return MoreSamples(tuple(v / 1e3 for v in host), "host")
    if settings.mode == "graph":
        graph_ms, _, note = time_graph(call, settings)
        return MoreSamples(tuple(graph_ms), "graph", (note,) if note else ())
    with placements(provider, inputs, settings) as where:
        samples, timer, notes = measure_modes(where, settings, (host_us,), rough_gpu_ms(where[0].call))
    used, values = modes.headline(samples, settings.mode)
    from kprof.metrics import headline_source

    source = headline_source(settings.mode, used if used == "events" else timer)  # as run_case records it
    return MoreSamples(tuple(v / 1e3 for v in values), source, tuple(notes))


# Where a call's tensors lie in device memory moves a small kernel's cold time, and one session sees one
# placement. On an H100 (rmsnorm bf16, 512 rows, 3-6 us a call) the same call read 2.88 or 3.39 us for
# triton_tuned at 512x3072 and 5.31 or 5.98 for torch.compile at 512x8192, depending on the allocation of its
# tensors: stable within a session, flipping between allocations and between processes, each provider on
# its own. Loading the kernel's code again, another flush buffer, or warming the address translations
# changed nothing (benchmarks/results/cold-placement/). A case whose tensors total at most this many bytes
# is therefore also timed on copies of its inputs in memory pools of their own (new device allocations),
# ``settings.placements`` sessions in all, its outputs allocated in the same pool past a spacer of a random
# size; the samples are pooled. Above it a call takes 40 us and more, where half a microsecond is under 2%.
PLACEMENT_MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class Placement:
    """One place in memory a case is timed at: the call on inputs there, the memory pool its outputs come
    from (None: PyTorch's default pool, the inputs as the case made them), and what holds that memory (the
    spacers and copies) until the placement is dropped."""

    call: Callable[[], Any]
    pool: Any = None
    keep: tuple = ()

    def there(self) -> contextlib.AbstractContextManager:
        """The block in which the call's outputs come from this placement's pool (the default pool's: none)."""
        return torch.cuda.use_mem_pool(self.pool) if self.pool is not None else contextlib.nullcontext()


def _tensor_bytes(inputs: Inputs) -> int:
    return sum(v.untyped_storage().nbytes() for v in inputs.values() if isinstance(v, torch.Tensor))


def relocated(inputs: Inputs, spacer_bytes: int, after_bytes: int = 0) -> tuple[Inputs, list[Any]]:
    """The same inputs - values, sizes, strides, storage offsets, tensors sharing storage still sharing it -
    in storage allocated anew between spacers of ``spacer_bytes`` and ``after_bytes`` (so what the call
    allocates next lands that far past them); (the inputs, what must outlive them)."""
    device = _device_of(inputs)
    keep: list[Any] = [torch.empty(spacer_bytes, dtype=torch.uint8, device=device)]
    copies: dict[int, Any] = {}
    out: Inputs = {}
    for name, value in inputs.items():
        if not isinstance(value, torch.Tensor):
            out[name] = value
            continue
        storage = value.untyped_storage()
        if storage.data_ptr() not in copies:
            fresh = torch.UntypedStorage(storage.nbytes(), device=storage.device)
            fresh.copy_(storage)
            copies[storage.data_ptr()] = fresh
        moved = value.new_empty(0).set_(
            copies[storage.data_ptr()], value.storage_offset(), value.size(), value.stride()
        )
        out[name] = moved.requires_grad_(value.requires_grad)
    keep.extend(copies.values())
    if after_bytes:
        keep.append(torch.empty(after_bytes, dtype=torch.uint8, device=device))
    return out, keep


def random_spacer(rng: random.Random) -> int:
    """1-32 MiB plus a multiple of 512 bytes (the allocator's granule) below 2 MiB."""
    return (rng.randint(1, 32) << 20) + 512 * rng.randrange(4096)


@contextlib.contextmanager
def placements(provider: Provider, inputs: Inputs, settings: BenchSettings) -> Iterator[list[Placement]]:
    """Where to time a case: ``inputs`` as they are, then - for a small case on a GPU - copies in
    ``settings.placements - 1`` memory pools of their own (:data:`PLACEMENT_MAX_BYTES`). The pools' memory
    goes back to the device when the block ends."""
    made = [Placement(functools.partial(provider.fn, **inputs))]
    small = _device_of(inputs).type == "cuda" and _tensor_bytes(inputs) <= PLACEMENT_MAX_BYTES
    rng = random.Random(settings.seed)
    try:
        for _ in range(settings.placements - 1 if small else 0):
            made.append(_pooled_placement(provider, inputs, rng))
        yield made
    finally:
        pooled = len(made) > 1
        made.clear()
        if pooled:
            torch.cuda.empty_cache()


def _pooled_placement(provider: Provider, inputs: Inputs, rng: random.Random) -> Placement:
    """A copy of ``inputs`` in a memory pool of its own, between spacers. Built in a function of its own so
    that no local of :func:`placements`' frame still holds the last pool or its tensors when the block ends
    and the pools' memory is given back (a GPU test found 80 MiB still reserved that way)."""
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        moved, held = relocated(inputs, random_spacer(rng), random_spacer(rng))
    return Placement(functools.partial(provider.fn, **moved), pool, tuple(held))


def measure_modes(
    spots: Sequence[Placement], settings: BenchSettings, host_us: Sequence[float], rough_ms: float
) -> tuple[dict[str, tuple[float, ...]], str, list[str]]:
    """(samples per mode in us, timer "cupti" | "events", notes): cold and warm from one CUPTI session per
    placement (:func:`placements`; ``Placement(call)`` times a call where its inputs lie), their samples
    pooled, the cold calls the power cap slowed set aside (:func:`kprof.timing.settle_clock`); CUDA events
    when CUPTI gives nothing usable (or ``settings.events`` asks for them too). With CUPTI, also the write-back
    a cold call leaves in L2 (:func:`kprof.timing.measure_left_behind`, samples kind ``writeback``)."""
    host_med = sorted(host_us)[len(host_us) // 2]
    rep_ms = settings.rep_ms / len(spots)

    def sessions(idle_us: float = 0.0) -> list[modes.ModeSamples]:
        got = []
        for spot in spots:
            with spot.there():
                got.append(
                    modes.measure_cupti(
                        spot.call, host_us=host_med, gpu_us=rough_ms * 1e3, rep_ms=rep_ms, idle_us=idle_us
                    )
                )
            if got[-1].source != "cupti":
                break
        return got

    rounds = [sessions()]  # a round: one session per placement

    def again(idle_us: float) -> modes.ModeSamples:
        rounds.append(sessions(idle_us))
        return modes.pooled(rounds[-1])

    res = modes.pooled(rounds[0])
    clocked = res.source == "cupti" and res.cold is not None and bool(res.cold.clock_mhz)
    full_mhz = max_sm_clock_mhz(torch.cuda.current_device()) if clocked else None
    res, clock_note = modes.settle_clock(res, again, full_mhz, rough_ms * 1e3)
    no_warm = settings.mode == "warm" and (res.warm is None or not res.warm.busy_us)
    events = (
        time_gpu(spots[0].call, settings, host_us=host_med)
        if (res.source == "events" or settings.events or no_warm)
        else []
    )
    notes = [n for n in (res.note, clock_note) if n]
    samples = modes.mode_samples(res, host_us, (), events, full_mhz)
    if res.source == "cupti":  # the write-back the cold call leaves in L2, which its cold time does not include
        with spots[0].there():
            left = modes.measure_left_behind(spots[0].call, host_us=host_med)
        if left:
            samples[modes.WRITEBACK] = left
    full_only = full_mhz is not None and res.cold is not None and res.cold == modes.at_full_clock(res.cold, full_mhz)
    at = _placement_medians(rounds, full_mhz if full_only else None)
    if res.source == "cupti" and len(at) > 1:
        samples["cold_placements"] = tuple(at)
        if max(at) > (1 + modes.PLACEMENT_NOTE_FRACTION) * min(at):
            notes.append(
                f"cold moved {max(at) / min(at) - 1:.0%} with where its tensors lie in memory "
                f"({len(at)} placements, medians {min(at):.3g}-{max(at):.3g} us); the samples of all are pooled"
            )
    return samples, res.source, notes


def _placement_medians(rounds: Sequence[Sequence[modes.ModeSamples]], full_mhz: float | None) -> list[float]:
    """The median cold time at each placement, over every round's session there; with ``full_mhz`` (the case
    kept only its full-clock calls) of the calls at full clock, so the clock is not mistaken for where the
    tensors lie. A placement without any such call is left out."""
    out = []
    for i in range(len(rounds[0])):
        calls = modes.pooled([r[i] for r in rounds if i < len(r)]).cold
        if calls is not None and full_mhz is not None:
            calls = modes.at_full_clock(calls, full_mhz)
        if calls is not None and calls.busy_us:
            out.append(modes.median(calls.busy_us))
    return out


def run_case(
    family: Family,
    provider: Provider,
    case: Case,
    *,
    device: str,
    settings: BenchSettings,
    timing: bool,
) -> CaseResult:
    """Check one case and, when ``timing`` and correct, time it. Never raises for a provider's failure.

    A case that runs out of GPU memory is measured once more after emptying the allocator's cache, which
    often holds what earlier, larger cases freed (on an H100 a rmsnorm grid lost triton_tuned at
    32768x65536 bf16 with 12 GiB reserved by the cache but unallocated, while other providers of that shape
    ran); out of memory twice is recorded as such."""
    once = functools.partial(_run_case_once, family, provider, case, device=device, settings=settings, timing=timing)
    try:
        return once()
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
    try:
        return once()
    except torch.cuda.OutOfMemoryError as exc:
        torch.cuda.empty_cache()
        tail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        note = OUT_OF_MEMORY + tail[-(500 - len(OUT_OF_MEMORY)) :]  # the reason first, the sizes after
        nbytes, flops = family.bytes_model(case.shape, case.dtype), family.flops_model(case.shape, case.dtype)
        return CaseResult(case, "error", note, bytes=nbytes, flops=flops)


def _run_case_once(
    family: Family,
    provider: Provider,
    case: Case,
    *,
    device: str,
    settings: BenchSettings,
    timing: bool,
) -> CaseResult:
    """:func:`run_case` without the retry: raises ``torch.cuda.OutOfMemoryError``, records anything else."""
    nbytes = family.bytes_model(case.shape, case.dtype)
    flops = family.flops_model(case.shape, case.dtype)
    reason = provider.unsupported_reason(case.shape, case.dtype)
    if reason:
        return CaseResult(case, "skipped", reason, bytes=nbytes, flops=flops)
    extra: dict = {"params": dict(provider.config)} if provider.config else {}
    try:
        inputs = family.make_inputs(case.shape, case.dtype, device, case_seed(settings.seed, case))
        # the correctness call also records which Triton specialisation ran (under @triton.autotune,
        # only the picked config's launch is kept)
        raced = route_choices_made()
        with recording() as rec:
            corr = check_correctness(family, provider, case, inputs)
        races = route_choices_since(raced)  # routes a version chose by timing them on this case's first call
        extra["recording"] = rec
        extra["specializations"] = [s.to_dict() for s in rec.launches]
        if not corr.ok:
            note = "; ".join(n for n in (corr.note, *races) if n) or None
            return CaseResult(case, "fail", note, corr, bytes=nbytes, flops=flops, extra=extra)
        if not timing:
            return CaseResult(case, "ok", "; ".join(races) or None, corr, bytes=nbytes, flops=flops, extra=extra)
        timed_corr = check_as_timed(family, provider, case, inputs)  # the code the timings below measure
        if not timed_corr.ok:
            note = "; ".join(n for n in (timed_corr.note, *races) if n)
            return CaseResult(case, "fail", note, timed_corr, bytes=nbytes, flops=flops, extra=extra)
        corr = worse(corr, timed_corr)

        def call() -> Any:
            return provider.fn(**inputs)

        # host time first (it sizes the GPU timer's spin), in batches bounded by a rough GPU time
        rough_ms = rough_gpu_ms(call)
        host = time_host(call, settings, gpu_ms=rough_ms)
        with placements(provider, inputs, settings) as where:
            samples, timer, notes = measure_modes(where, settings, host, rough_ms)
        notes = races + notes
        graph_host = None
        if settings.graph:
            graph_ms, graph_host, graph_note = time_graph(call, settings)
            samples.update(modes.mode_samples(modes.ModeSamples(None, None, timer), (), graph_ms, ()))
            if graph_note:
                notes.append(graph_note)
        peak = peak_memory(call)
        used, gpu = modes.headline(samples, settings.mode)
        graph = samples.get("graph")
        return CaseResult(
            case,
            "ok",
            "; ".join(notes) or None,
            corr,
            gpu_samples_ms=tuple(v / 1e3 for v in gpu),
            graph_time_ms=modes.median(graph) / 1e3 if graph else None,
            graph_host_us=graph_host,
            host_samples_us=tuple(host),
            peak_mem_bytes=peak,
            bytes=nbytes,
            flops=flops,
            timed=True,
            extra=extra,
            mode_samples_us=samples,
            timing_mode=settings.mode,
            timer=used if used == "events" else timer,
        )
    except UnsupportedConfig as exc:  # a sweep's configuration this version cannot take: skipped, with why
        return CaseResult(case, "skipped", str(exc)[:500], bytes=nbytes, flops=flops, extra=extra)
    except Exception as exc:  # noqa: BLE001 - one broken provider must not end the run; record why
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            raise  # run_case empties the allocator's cache and tries once more
        tail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return CaseResult(case, "error", tail[-500:], bytes=nbytes, flops=flops)
