"""Declared timing modes: what a case's "time" means, and how each mode is measured.

Four modes, each defined by one sentence (:data:`MODE_DEFINITIONS`, used verbatim by the report, the README
and the dashboard):

* ``cold``  - the call after a flush that leaves L2 cold and clean, kernel time from CUPTI activity records;
* ``warm``  - back-to-back calls, kernel time from CUPTI activity records;
* ``graph`` - per-call time of a CUDA-graph replay of many calls;
* ``host``  - host wall time per call, output allocation included.

``cold`` is the default ranking mode (:data:`DEFAULT_MODE`): it is the kernel's own time with its inputs in
DRAM, which is what the bytes model and the copy ceiling assume. It ends before all of the call's writes reach
DRAM: L2 starts clean, so up to ~30 MB of what the call stored (an H200) is still there, dirty, when it ends,
and the next kernel pays to write it back. That write-back is measured beside the cold time
(:func:`measure_left_behind`, up to 8-9 us a call on an H200) and shown in the report, so a reader sees where
GB/s and % of ceiling count bytes still in L2 as moved. ``warm`` lets a small case read its inputs from the
50 MB L2 left by the previous call and ``graph`` and ``host`` include launch costs the kernel author does not
control.

How ``cold`` and ``warm`` are collected (one profiler session per case, all its calls in it): for each cold
call a GPU spin (covering the call's host time, so its kernels run back to back), then
``kprof_l2_flush_read`` - a dedicated Triton kernel that *reads* a buffer four times the L2 size, so every
line the previous call dirtied is written back during the flush and L2 holds only clean lines - then the
call. After the cold calls one more spin and flush, then the warm calls back to back. The spin waits a known
number of SM cycles, so its recorded duration gives the SM clock each cold call started at; calls the power or
thermal limit slowed are set aside (:func:`settle_clock`). The device activity
records are split at the flush kernels: what lies between a flush and the next spin is exactly one call,
so a flush or spin kernel is never counted in a call. The warm block is cut into calls by the kernel-name
sequence of a cold call and accepted only if it repeats exactly.

Per call three aggregates are kept: the *busy* time (the union of the kernels' execution intervals: the sum of
their durations with overlapping kernels - programmatic dependent launch - counted once), the *span* (first
kernel start to last kernel end) and the *sum* of kernel durations. The busy time is shown: the span of a
multi-kernel call also counts the idle gaps between its kernels, which in back-to-back calls is the host's
launch time whenever the host is slower than the GPU (eager PyTorch at 1x4096: span 23-1600 us, busy 14 us),
and the sum counts overlapping kernels twice.

Where CUPTI gives no records (not built in, or another profiler such as nsys or ncu holds it) the cold
time falls back to CUDA events around each call (:func:`kprof.harness.time_gpu`) and the case is marked
``timer = events``.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODES: tuple[str, ...] = ("cold", "warm", "graph", "host")
# A case timed at several places in memory (kprof.harness.placements) whose cold medians there are further
# apart than this fraction gets a note, and the report shows that spread beside the case's own.
PLACEMENT_NOTE_FRACTION = 0.05
DEFAULT_MODE = "cold"
MODE_DEFINITIONS: dict[str, str] = {
    "cold": "cold: kernel time of one call (the union of its kernels' CUPTI activity intervals) right after a "
    "read-only flush of four times the L2 size that leaves L2 cold and clean, from calls that started at 95% or "
    "more of the GPU's highest SM clock.",
    "warm": "warm: kernel time of one call (the union of its kernels' CUPTI activity intervals) among "
    "back-to-back calls on the same inputs, with whatever the previous call left in L2.",
    "graph": "graph: GPU time per call of a CUDA graph holding many back-to-back calls, replayed and timed "
    "with events (launch gaps inside the graph included, no flush).",
    "host": "host: wall time per call on the host, calls issued back to back without synchronising, "
    "output allocation included.",
}
EVENTS_DEFINITION = (
    "events (fallback): CUDA-event pair around one call after kprof's L2 flush; includes about 3 us "
    "of event overhead (H100) and, for several kernels, the launch gaps between them, so small kernels read "
    "slower than they run."
)
DEFAULT_MODE_WHY = (
    "cold is the default ranking mode: it is the kernel's own GPU time with its data in DRAM, the "
    "state the bytes model and the copy ceiling assume, without launch or event overhead."
)
FLUSH_KERNEL_NAME = "kprof_l2_flush_read"
FLUSH_FACTOR = 4  # flush buffer = FLUSH_FACTOR x L2: replacement is not strict LRU, so read well past 2x
SHOWN = "busy time"  # the per-call aggregate shown: union of the kernels' intervals


@dataclass(frozen=True)
class KernelRecord:
    """One device activity record (kernel, memset or memcpy) from CUPTI, in ns on the device clock."""

    name: str
    start_ns: int
    end_ns: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class CallTimes:
    """Per-call times of one mode (us): busy (the shown one: union of the kernels' execution intervals),
    span (first start -> last end) and sum of kernel durations; ``kernel_us``: for each kernel of
    ``kernel_names``, in order, its duration in each call, and ``clock_mhz``: the SM clock just before each
    call (cold calls only; empty where unknown)."""

    busy_us: tuple[float, ...]
    span_us: tuple[float, ...]
    sum_us: tuple[float, ...]
    kernels_per_call: int
    kernel_names: tuple[str, ...] = ()
    note: str | None = None
    kernel_us: tuple[tuple[float, ...], ...] = ()
    clock_mhz: tuple[float, ...] = ()  # cold calls only: the SM clock in the spin before each call (see spin_clocks)


@dataclass(frozen=True)
class ModeSamples:
    """What :func:`measure_cupti` returns for one case."""

    cold: CallTimes | None
    warm: CallTimes | None
    source: str  # "cupti" | "events"
    note: str | None = None


# ----------------------------------------------------------------------------------- trace -> records
def kernels_from_chrome_trace(trace: str | Path | dict) -> list[KernelRecord]:
    """Device activity records of a torch.profiler / Kineto Chrome trace (path, .gz path or loaded dict)."""
    if not isinstance(trace, dict):
        p = Path(trace)
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt") as f:
            trace = json.load(f)
    out = []
    for ev in trace.get("traceEvents", []):
        if ev.get("ph") != "X" or ev.get("cat") not in ("kernel", "gpu_memset", "gpu_memcpy"):
            continue
        start = round(float(ev["ts"]) * 1e3)
        out.append(KernelRecord(str(ev.get("name", "")), start, start + round(float(ev.get("dur", 0)) * 1e3)))
    return sorted(out, key=lambda r: r.start_ns)


def _kineto_records(results: Any) -> list[KernelRecord]:
    """Device records from a Kineto ``_ProfilerResult`` (older torch: ``start_us``/``duration_us``)."""
    out = []
    for ev in results.events():
        if str(ev.device_type()).split(".")[-1] not in ("CUDA", "PrivateUse1"):
            continue
        if hasattr(ev, "start_ns"):
            start, dur = int(ev.start_ns()), int(ev.duration_ns())
        else:  # torch before start_ns existed
            start, dur = int(ev.start_us() * 1000), int(ev.duration_us() * 1000)
        out.append(KernelRecord(ev.name(), start, start + dur))
    return sorted(out, key=lambda r: r.start_ns)


def collect_device_records(run: Callable[[], None], trace_path: str | Path | None = None) -> list[KernelRecord]:
    """Run ``run`` under one torch.profiler (Kineto -> CUPTI) session; its device activity records.

    The one place kprof touches CUPTI for timing. Reads Kineto's results directly where the torch version
    exposes them (no event-tree building), else goes through an exported Chrome trace. Raises when the
    profiler cannot start; returns [] when CUPTI delivered nothing (e.g. another profiler holds it).
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    if trace_path is not None:  # keep the session's trace (tests/data holds one recorded on an H100)
        prof.export_chrome_trace(str(trace_path))
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is not None and hasattr(results, "events"):
        try:
            return _kineto_records(results)
        except (AttributeError, TypeError):  # an API shape this code does not know: take the slow path
            pass
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        return kernels_from_chrome_trace(path)
    finally:
        os.unlink(path)


# ----------------------------------------------------------------------------------- records -> calls
def _is_flush(name: str) -> bool:
    return FLUSH_KERNEL_NAME in name


def split_at_flushes(records: Sequence[KernelRecord]) -> tuple[str | None, list[list[KernelRecord]]]:
    """(spin kernel name, the segments after each flush): the record stream of one session is
    ``spin flush call spin flush call ... spin flush warm-block``; what comes before the first flush is the
    spin alone, which names it. Each segment but the last must end with that spin, which is removed."""
    idx = [i for i, r in enumerate(records) if _is_flush(r.name)]
    if not idx:
        return None, []
    head = records[: idx[0]]
    spin = head[-1].name if head else None
    segments = [list(records[a + 1 : b]) for a, b in zip(idx, idx[1:] + [len(records)])]
    for seg in segments[:-1]:
        if spin is not None and seg and seg[-1].name == spin:
            seg.pop()
    return spin, segments


def spin_clocks(records: Sequence[KernelRecord], spin_cycles: int) -> list[float]:
    """The SM clock (MHz) in the spin before each flush of one session, in order: the spin waits
    ``spin_cycles`` SM cycles, so cycles over its recorded duration is the clock the power and thermal limits
    left the GPU at just before the call that follows the flush. NaN where the record before a flush is not
    the session's spin kernel."""
    spin, _ = split_at_flushes(records)
    out = []
    for i, r in enumerate(records):
        if _is_flush(r.name):
            before = records[i - 1] if i else None
            ok = before is not None and before.name == spin and before.duration_ns > 0
            out.append(spin_cycles / before.duration_ns * 1e3 if ok else math.nan)
    return out


def busy_ns(call: Sequence[KernelRecord]) -> int:
    """Length of the union of the records' intervals: overlapping kernels (programmatic dependent launch)
    counted once, idle gaps between kernels (launch latency, a host that lags) not counted."""
    total, end = 0, None
    for r in sorted(call, key=lambda r: r.start_ns):
        if end is None or r.start_ns >= end:
            total += r.duration_ns
            end = r.end_ns
        elif r.end_ns > end:
            total += r.end_ns - end
            end = r.end_ns
    return total


def aggregate(calls: Iterable[Sequence[KernelRecord]]) -> tuple[tuple[float, ...], ...]:
    """Per call, in us: busy (union of intervals), span (first start -> last end), sum of durations."""
    busy, span, total = [], [], []
    for c in calls:
        if not c:
            continue
        busy.append(busy_ns(c) / 1e3)
        span.append((max(r.end_ns for r in c) - min(r.start_ns for r in c)) / 1e3)
        total.append(sum(r.duration_ns for r in c) / 1e3)
    return tuple(busy), tuple(span), tuple(total)


def cold_calls(segments: Sequence[Sequence[KernelRecord]], clocks: Sequence[float] = ()) -> CallTimes:
    """The cold calls (all segments but the last): the modal kernel-name sequence defines a call; segments
    that differ (a record CUPTI dropped, a one-off allocation kernel) are left out and counted in the note.
    ``clocks``: the SM clock before each segment (:func:`spin_clocks`), kept for the calls kept."""
    segs = [tuple(s) for s in segments]
    if not segs:
        return CallTimes((), (), (), 0, note="no cold calls recorded")
    names = Counter(tuple(r.name for r in s) for s in segs)
    pattern, _ = names.most_common(1)[0]
    kept = [s for s in segs if tuple(r.name for r in s) == pattern]
    busy, span, total = aggregate(kept)
    note = None
    if len(kept) < len(segs):
        note = f"cold: {len(segs) - len(kept)} of {len(segs)} calls launched other kernels than the usual; left out"
    per_kernel = tuple(tuple(s[i].duration_ns / 1e3 for s in kept) for i in range(len(pattern)))
    kept_clocks = (
        tuple(c for s, c in zip(segs, clocks) if tuple(r.name for r in s) == pattern and s)
        if len(clocks) == len(segs) and not any(math.isnan(c) for c in clocks)
        else ()
    )
    return CallTimes(busy, span, total, len(pattern), pattern, note, per_kernel, kept_clocks)


def warm_calls(block: Sequence[KernelRecord], pattern: Sequence[str], skip: int) -> CallTimes:
    """Cut the back-to-back block into calls of ``pattern``'s kernels; drop the first ``skip`` calls
    (they start from the flushed L2). Refuses (no samples, a note) when the block does not repeat it."""
    k = len(pattern)
    if k == 0 or len(block) % k:
        return CallTimes(
            (),
            (),
            (),
            k,
            tuple(pattern),
            note=f"warm: {len(block)} kernels do not split into calls of {k}; no warm time",
        )
    calls = [block[i : i + k] for i in range(0, len(block), k)]
    if any(tuple(r.name for r in c) != tuple(pattern) for c in calls):
        return CallTimes(
            (),
            (),
            (),
            k,
            tuple(pattern),
            note="warm: the back-to-back kernels do not repeat one cold call's sequence; no warm time",
        )
    busy, span, total = aggregate(calls[skip:])
    return CallTimes(busy, span, total, k, tuple(pattern))


# ------------------------------------------------------------------------------------------ the flush
_FLUSH: dict[str, Any] = {}


def _flush_kernel() -> Any:
    """The read-only L2 flush, compiled on first use (Triton is imported only on GPU machines here)."""
    if "kernel" in _FLUSH:
        return _FLUSH["kernel"]
    import triton
    import triton.language as tl

    @triton.jit
    def kprof_l2_flush_read(src, dst, n, BLOCK: tl.constexpr):
        # every program reads a strided share of the buffer; the store is masked by a sum that is never
        # non-zero (the buffer holds zeros), so nothing is written and no line is dirtied, yet the
        # compiler cannot drop the loads
        pid = tl.program_id(0)
        step = tl.num_programs(0) * BLOCK
        acc = tl.zeros([BLOCK], dtype=tl.int32)
        for start in range(pid * BLOCK, n, step):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(src + offs, mask=offs < n, other=0)
        total = tl.sum(acc, axis=0)
        tl.store(dst + pid, total, mask=total != 0)

    _FLUSH["kernel"] = kprof_l2_flush_read
    return kprof_l2_flush_read


class L2Flush:
    """Reads a zero buffer of ``FLUSH_FACTOR`` x L2 bytes through :data:`FLUSH_KERNEL_NAME`."""

    def __init__(self, l2_bytes: int | None = None, nbytes: int | None = None) -> None:
        import torch

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = l2_bytes or getattr(props, "L2_cache_size", 0) or (50 << 20)
        self.nbytes = nbytes or max(FLUSH_FACTOR * l2, 64 << 20)
        self.buf = torch.zeros(self.nbytes // 4, dtype=torch.int32, device="cuda")
        self.grid = (props.multi_processor_count * 4,)
        self.sink = torch.zeros(self.grid[0], dtype=torch.int32, device="cuda")
        self.kernel = _flush_kernel()

    def __call__(self) -> None:
        self.kernel[self.grid](self.buf, self.sink, self.buf.numel(), BLOCK=4096, num_warps=8)


def flush() -> L2Flush:
    """One flush object per process (the buffer is a few hundred MB)."""
    if "obj" not in _FLUSH:
        _FLUSH["obj"] = L2Flush()
    return _FLUSH["obj"]


# ----------------------------------------------------------------------------------------- measuring
# GPU clock assumed when converting a host-lead time into spin cycles (also harness.time_gpu's spin). A slower
# clock only makes the spin last longer, which is harmless.
SPIN_GHZ = 2.0
WARM_SKIP = 3  # warm calls dropped at the start of the block: they begin from the flushed L2


def _spin_cycles(host_us: float) -> int:
    """The spin before a cold call: 1.5x the call's host time plus 10 us, so all its launches are queued by the
    time the flush after the spin ends and its kernels run back to back."""
    return int((1.5 * host_us + 10.0) * 1e3 * SPIN_GHZ)


def plan_calls(iter_us: float, gpu_us: float, rep_ms: float, lo: int = 20, hi: int = 200) -> tuple[int, int]:
    """(cold calls, warm calls) for a case: the repetition budget spread over iterations of ``iter_us``
    (spin + flush + call) and ``gpu_us`` (a call), kept within [lo, hi] so the CUPTI buffer and its
    processing stay small."""
    cold = int(min(hi, max(lo, rep_ms * 1e3 / max(iter_us, 1e-3))))
    warm = int(min(hi, max(lo, rep_ms * 1e3 / max(gpu_us, 1e-3)))) + WARM_SKIP
    return cold, warm


def measure_cupti(
    fn: Callable[[], Any],
    *,
    host_us: float,
    gpu_us: float,
    rep_ms: float,
    collect: Callable[[Callable[[], None]], list[KernelRecord]] | None = None,
    calls: tuple[int, int] | None = None,
    idle_us: float = 0.0,
) -> ModeSamples:
    """Cold and warm per-call times of ``fn`` in one profiler session (see the module docstring).

    ``idle_us`` lengthens the spin before each cold call, so the GPU idles between calls and its average
    power stays under the cap (:func:`at_full_clock`). ``collect`` is :func:`collect_device_records` unless a
    test passes another. Returns ``source="events"`` with the reason in ``note`` when CUPTI gives nothing
    usable; the caller then times with events."""
    import torch

    collect = collect or collect_device_records
    fl = flush()
    cycles = _spin_cycles(host_us) + int(idle_us * 1e3 * SPIN_GHZ)
    flush_us = fl.nbytes / 2.5e6  # ~2.5 TB/s read: only sizes the budget
    n_cold, n_warm = calls or plan_calls(cycles / SPIN_GHZ / 1e3 + flush_us + gpu_us, gpu_us, rep_ms)

    def session() -> None:
        for _ in range(n_cold):
            torch.cuda._sleep(cycles)
            fl()
            fn()
        torch.cuda._sleep(cycles)
        fl()
        for _ in range(n_warm):
            fn()

    fn()
    torch.cuda._sleep(10)
    fl()
    torch.cuda.synchronize()
    try:
        records = collect(session)
    except Exception as exc:  # noqa: BLE001 - no profiler here (or it refused to start): events instead
        return ModeSamples(
            None, None, "events", f"torch.profiler could not start: {type(exc).__name__}: {str(exc)[:160]}"
        )
    return from_records(records, n_cold, WARM_SKIP, cycles)


# ------------------------------------------------------------------------------ write-back left in L2
# A cold call starts with L2 clean (the read-only flush), so its stores become dirty lines that reach DRAM when
# something evicts them: much of an output under L2's size is still in L2 when the call ends, and the next kernel
# pays to write it back. Measured on an H200 (benchmarks/results/write-back/): the flush after a call took up to
# 8-9 us longer than a flush after a flush (y.fill_ of 32 MiB: cold 10.9 us, 8.0 left behind; rmsnorm 2048x8192
# bf16: 15.8 and 8.1; a read-only x.sum: 0 within 0.4 us); ncu read 4.7 of rmsnorm's 33.5 MB written to DRAM
# during the kernel. The cold time stays the call's own time; this is measured beside it so a reader can tell how
# much of a call's writes it does not include.
WRITEBACK = "writeback"  # the stored samples kind: per repetition, the write-back (us) a cold call left in L2
WRITEBACK_REPS = 12


def measure_left_behind(
    fn: Callable[[], Any],
    *,
    host_us: float,
    reps: int = WRITEBACK_REPS,
    collect: Callable[[Callable[[], None]], list[KernelRecord]] | None = None,
) -> tuple[float, ...]:
    """Per repetition, how much longer (us) the flush right after a cold call of ``fn`` runs than a flush right
    after a flush: the write-back of what the call left dirty in L2, which its cold time does not include. One
    profiler session of ``reps`` x (spin, flush, call, flush, flush); () when CUPTI gives no usable records."""
    import torch

    collect = collect or collect_device_records
    cycles = _spin_cycles(host_us)

    def session(fl: L2Flush) -> None:
        for _ in range(reps):
            torch.cuda._sleep(cycles)
            fl()
            fn()
            fl()
            fl()

    try:
        fl = flush()  # made (and the call run once) before the session: nothing but the repetitions is recorded
        fn()
        torch.cuda.synchronize()
        records = collect(lambda: session(fl))
    except Exception:  # noqa: BLE001 - no profiler (or no GPU) here: the cold time stands without it
        return ()
    return left_behind_from_records(records, reps)


def left_behind_from_records(records: Sequence[KernelRecord], reps: int) -> tuple[float, ...]:
    """:func:`measure_left_behind`'s per-repetition figures from its session's records (CPU-testable): each
    repetition is spin, flush, the call's kernels, flush (the drain), flush (clean); the drain's duration less the
    clean one's. The spin is the kernel before the first flush; what comes before it is not read. () when the
    records do not hold ``reps`` such repetitions."""
    first = next((i for i, r in enumerate(records) if _is_flush(r.name)), 0)
    if first == 0:  # no flush, or none after a spin
        return ()
    spin = records[first - 1].name
    blocks: list[list[KernelRecord]] = []
    for r in records[first - 1 :]:
        if r.name == spin:
            blocks.append([])
        elif blocks:
            blocks[-1].append(r)
    out = []
    for block in blocks:
        flushes = [i for i, r in enumerate(block) if _is_flush(r.name)]
        if len(block) < 4 or flushes != [0, len(block) - 2, len(block) - 1]:
            return ()
        out.append((block[-2].duration_ns - block[-1].duration_ns) / 1e3)
    return tuple(out) if len(out) == reps else ()


def with_writeback(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> float:
    """``a``'s time over ``b``'s (two cases' metrics) with the write-back each cold call left dirty in L2 counted
    (``cold_with_writeback_us``, :func:`measure_left_behind`): the cold time ends before a call's writes reach DRAM,
    and two calls can leave different amounts behind. NaN unless both were ranked by cold time (a case of no
    recorded mode is read as cold: every case that measured the write-back records its mode) and both measured it.
    ``kprof grid`` judges verdicts and targets with it and ``kprof diff`` warns by it."""
    if a is None or b is None:
        return math.nan
    if any(str(c.get("timing_mode") or DEFAULT_MODE) != "cold" for c in (a, b)):
        return math.nan
    wa, wb = (_as_float(c.get("cold_with_writeback_us")) for c in (a, b))
    return wa / wb if wa > 0 and wb > 0 else math.nan


def counted_spread(spread: float, *cases: Mapping[str, Any] | None) -> float:
    """The spread a ratio of times with the write-back counted (:func:`with_writeback`) is judged with: ``spread``
    (what the cold ratio is judged with: ``kprof grid``'s tolerance, ``kprof diff``'s threshold) or, where larger,
    either case's ``cold_with_writeback_noise`` (12 write-back repetitions a case move by 1.5-3.6 µs each on an H200:
    up to 10% of a 20 µs call). Never under 0; NaNs are left out."""
    noises = (_as_float(c.get("cold_with_writeback_noise")) for c in cases if c is not None)
    return max([0.0, *(v for v in (_as_float(spread), *noises) if not math.isnan(v))])


def _as_float(value: object) -> float:
    """A stored metric as a float: NaN for a missing one (None, or pandas' NA)."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def cold_event_times_us(fn: Callable[[], Any], calls: int) -> list[float]:
    """``calls`` cold times of ``fn`` (us) by CUDA events, without a profiler session: each call after a spin
    that covers its host time and kprof's L2 flush, as in the ``cold`` mode, timed from an event recorded after
    the flush to one after the call (its span: kernels and the gaps between them). For a choice made inside a
    process that may be profiled (a route race in the ops API), where CUPTI may be held by another tool.
    ``fn`` must have run once (compiled)."""
    import time

    import torch

    fl = flush()
    t0 = time.perf_counter()
    fn()
    host_us = (time.perf_counter() - t0) * 1e6  # enqueue time: what the spin must cover
    cycles = _spin_cycles(host_us)
    marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
    for start, end in marks:
        torch.cuda._sleep(cycles)
        fl()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [1000.0 * start.elapsed_time(end) for start, end in marks]


def from_records(
    records: Sequence[KernelRecord], n_cold: int, warm_skip: int, spin_cycles: int | None = None
) -> ModeSamples:
    """Cold and warm per-call times from one session's device records (CPU-testable); with ``spin_cycles``
    (the spin's length in SM cycles) each cold call also gets the SM clock it started at."""
    if not records:
        return ModeSamples(
            None,
            None,
            "events",
            "CUPTI delivered no device records (another profiler such as "
            "nsys or ncu may hold it); timed with CUDA events",
        )
    spin, segments = split_at_flushes(records)
    if len(segments) != n_cold + 1:
        return ModeSamples(
            None,
            None,
            "events",
            f"CUPTI records held {len(segments)} flushes, expected "
            f"{n_cold + 1} (records dropped?); timed with CUDA events",
        )
    clocks = spin_clocks(records, spin_cycles)[:n_cold] if spin_cycles else []
    cold = cold_calls(segments[:-1], clocks)
    if not cold.busy_us:
        return ModeSamples(None, None, "events", "no cold call could be attributed; timed with CUDA events")
    warm = warm_calls(segments[-1], cold.kernel_names, warm_skip)
    notes = [n for n in (cold.note, warm.note) if n]
    return ModeSamples(cold, warm, "cupti", "; ".join(notes) or None)


def _pooled_calls(parts: Sequence[CallTimes | None]) -> CallTimes | None:
    have = [c for c in parts if c is not None and c.busy_us]
    if not have:
        return next((c for c in parts if c is not None), None)
    notes = [c.note for c in have if c.note]
    same = len({c.kernel_names for c in have}) == 1
    if not same:
        notes.append("the placements launched different kernel sequences")
    per_kernel = (
        tuple(tuple(v for c in have for v in c.kernel_us[i]) for i in range(len(have[0].kernel_names)))
        if same and all(len(c.kernel_us) == len(c.kernel_names) for c in have)
        else ()
    )
    clocks = (
        tuple(v for c in have for v in c.clock_mhz) if all(len(c.clock_mhz) == len(c.busy_us) for c in have) else ()
    )
    return CallTimes(
        tuple(v for c in have for v in c.busy_us),
        tuple(v for c in have for v in c.span_us),
        tuple(v for c in have for v in c.sum_us),
        have[0].kernels_per_call,
        have[0].kernel_names,
        "; ".join(dict.fromkeys(notes)) or None,
        per_kernel,
        clocks,
    )


def pooled(results: Sequence[ModeSamples]) -> ModeSamples:
    """Sessions of one case (its tensors at several places in memory) as one: their calls' samples
    together. A session that fell back to events makes the case fall back, with its reason."""
    if len(results) == 1:
        return results[0]
    for r in results:
        if r.source != "cupti":
            return r
    notes = [r.note for r in results if r.note]
    return ModeSamples(
        _pooled_calls([r.cold for r in results]),
        _pooled_calls([r.warm for r in results]),
        "cupti",
        "; ".join(dict.fromkeys(notes)) or None,
    )


# ------------------------------------------------------------------------------------------ the SM clock
# A call the power cap slowed is not the kernel's time. On H100s (700 W cap) cuBLAS products of 0.26-1.4 ms,
# timed cold in rounds of one process, ran with the SM clock anywhere from 1390 to 2030 MHz (the clock read
# from each cold call's spin) and their per-round medians 3-18% apart; the calls that started at 95% or more
# of the 1980 MHz clock gave medians 0.1-1.3% apart, and two providers running the same kernels agreed within
# 0.3% (benchmarks/results/power-cap/). Spinning 4x the call between calls let the clock recover in 33-59% of
# the calls, against 0-10% back to back.
CLOCK_FULL_FRACTION = 0.95  # a cold call counts as at full clock from this fraction of the GPU's highest SM clock
CLOCK_MIN_CALLS = 6  # full-clock cold calls a case needs before its time leaves the slowed ones out
CLOCK_IDLE_FACTOR = 4.0  # sessions run to recover the clock spin this many times the call between cold calls
CLOCK_RETRIES = 3  # such sessions at most, per case


def _calls_where(t: CallTimes, keep: Sequence[bool]) -> CallTimes:
    def pick(values: Sequence[float]) -> tuple[float, ...]:
        return tuple(v for v, k in zip(values, keep) if k)

    return CallTimes(
        pick(t.busy_us),
        pick(t.span_us),
        pick(t.sum_us),
        t.kernels_per_call,
        t.kernel_names,
        t.note,
        tuple(pick(k) for k in t.kernel_us),
        pick(t.clock_mhz),
    )


def at_full_clock(t: CallTimes, full_mhz: float) -> CallTimes:
    """The calls of ``t`` that started at :data:`CLOCK_FULL_FRACTION` or more of ``full_mhz``, every per-call
    field filtered alike; ``t`` itself where its clocks are unknown."""
    if not t.clock_mhz:
        return t
    return _calls_where(t, [c >= CLOCK_FULL_FRACTION * full_mhz for c in t.clock_mhz])


def settle_clock(
    first: ModeSamples, again: Callable[[float], ModeSamples], full_mhz: float | None, gpu_us: float
) -> tuple[ModeSamples, str | None]:
    """A case's cold calls at its GPU's full SM clock, and a note when any were set aside.

    ``first`` is the case's measurement; ``again(idle_us)`` measures it once more with ``idle_us`` spun before
    each cold call. While fewer than :data:`CLOCK_MIN_CALLS` calls started at full clock, up to
    :data:`CLOCK_RETRIES` more measurements idle :data:`CLOCK_IDLE_FACTOR` times the call (``gpu_us``) between
    calls, so the power cap lets the clock recover. The cold calls kept are then the full-clock ones of all
    measurements, or - where there are still too few - all of them, and the note says they ran slowed.
    ``first`` is returned as it is where the clocks or ``full_mhz`` are unknown, or every call was at full clock."""
    cold = first.cold
    if full_mhz is None or first.source != "cupti" or cold is None or not cold.clock_mhz:
        return first, None
    found = [cold]
    full = at_full_clock(cold, full_mhz)
    if len(full.busy_us) == len(cold.busy_us):
        return first, None
    while len(full.busy_us) < CLOCK_MIN_CALLS and len(found) <= CLOCK_RETRIES:
        more = again(CLOCK_IDLE_FACTOR * gpu_us).cold
        if more is None or more.kernel_names != cold.kernel_names or len(more.clock_mhz) != len(more.busy_us):
            break
        found.append(more)
        full = _pooled_calls([at_full_clock(c, full_mhz) for c in found])
    every = _pooled_calls(found)
    slowed = [c for c in every.clock_mhz if c < CLOCK_FULL_FRACTION * full_mhz]
    where = (
        f"below {CLOCK_FULL_FRACTION:.0%} of the {full_mhz:.0f} MHz SM clock ({min(slowed):.0f}-{max(slowed):.0f} "
        "MHz: the GPU's power or thermal limit)"
    )
    idled = (
        f"; {len(found) - 1} more measurement(s) spun {CLOCK_IDLE_FACTOR:g}x the call between calls"
        if len(found) > 1
        else ""
    )
    if len(full.busy_us) >= CLOCK_MIN_CALLS:
        kept = full
        note = f"cold: {len(slowed)} of {len(every.busy_us)} calls started {where} and were set aside{idled}"
    else:
        kept = every
        note = (
            f"cold: only {len(full.busy_us)} of {len(every.busy_us)} calls started at full clock{idled}; the time "
            f"pools them all, {len(slowed)} {where}, so it is slower than the kernel at full clock"
        )
    return ModeSamples(kept, first.warm, first.source, first.note), note


def median(values: Sequence[float]) -> float:
    if not values:
        return math.nan
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


COLD_HOST_FLOOR_US = 20.0  # the least host time cold_time_us sizes its spin for


def cold_time_us(fn: Callable[[], Any], rep_ms: float = 200.0) -> tuple[float, str]:
    """Median cold time of ``fn`` (us) and its source: how the ceilings are measured, like every case (the
    calls the power cap slowed set aside, :func:`settle_clock`)."""
    import time

    import torch

    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    # the spin before each cold call covers the call's own host time (a floor of 20 us): a call that takes longer
    # to enqueue than the spin lasts starts its kernels as the host reaches them, and times the host
    host_us = max(COLD_HOST_FLOOR_US, (time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    gpu_us = (time.perf_counter() - t0) * 1e6
    res = measure_cupti(fn, host_us=host_us, gpu_us=gpu_us, rep_ms=rep_ms)
    if res.cold is not None and res.cold.clock_mhz:
        from kprof.device import max_sm_clock_mhz

        def again(idle_us: float) -> ModeSamples:
            return measure_cupti(fn, host_us=host_us, gpu_us=gpu_us, rep_ms=rep_ms, idle_us=idle_us)

        res, _ = settle_clock(res, again, max_sm_clock_mhz(torch.cuda.current_device()), gpu_us)
    if res.cold is not None:
        return median(res.cold.busy_us), "cupti"
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=int(rep_ms), return_mode="median")) * 1e3, "events"


# ------------------------------------------------------------------------------------ samples per mode
def mode_samples(
    res: ModeSamples,
    host_us: Sequence[float],
    graph_ms: Sequence[float],
    events_ms: Sequence[float],
    full_mhz: float | None = None,
) -> dict[str, tuple[float, ...]]:
    """Every mode's per-call samples in us, as stored: cold, cold_span, cold_sum, warm, warm_span, warm_sum,
    graph, host, events (cold and warm are the busy time, the shown one); each kernel of a cold call alone,
    under :func:`cold_kernel_kind`; the SM clock each cold call started at (``cold_clock``, MHz) and the GPU's
    highest SM clock (``sm_clock_max``, one value) where known."""
    out: dict[str, tuple[float, ...]] = {}
    for mode, t in (("cold", res.cold), ("warm", res.warm)):
        if t is not None and t.busy_us:
            out[mode], out[f"{mode}_span"], out[f"{mode}_sum"] = t.busy_us, t.span_us, t.sum_us
    if res.cold is not None and res.cold.busy_us:
        for i, (name, values) in enumerate(zip(res.cold.kernel_names, res.cold.kernel_us)):
            out[cold_kernel_kind(i, name)] = values
        if len(res.cold.clock_mhz) == len(res.cold.busy_us):
            out["cold_clock"] = res.cold.clock_mhz
        if full_mhz:
            out["sm_clock_max"] = (float(full_mhz),)
    if graph_ms:
        out["graph"] = tuple(v * 1e3 for v in graph_ms)
    if host_us:
        out["host"] = tuple(host_us)
    if events_ms:
        out["events"] = tuple(v * 1e3 for v in events_ms)
    return out


COLD_KERNEL = "cold_kernel"  # the stored kind of one kernel's cold samples: cold_kernel/POSITION/NAME


def cold_kernel_kind(position: int, name: str) -> str:
    """The samples kind under which the ``position``-th kernel of a cold call (``name``) keeps its durations."""
    return f"{COLD_KERNEL}/{position}/{name}"


def cold_kernels(samples: Mapping[str, Sequence[float]]) -> list[tuple[str, float]]:
    """(name, median us) of each kernel of a cold call, in launch order, from samples keyed by
    :func:`cold_kernel_kind`; [] when none were kept."""
    found = []
    for kind, values in samples.items():
        parts = kind.split("/", 2)
        if len(parts) == 3 and parts[0] == COLD_KERNEL and parts[1].isdigit() and len(values):
            found.append((int(parts[1]), parts[2], median(values)))
    return [(name, us) for _, name, us in sorted(found)]


def headline(samples: dict[str, Sequence[float]], mode: str) -> tuple[str, tuple[float, ...]]:
    """(what was used, samples in us) for the declared ``mode``: its own samples, else - for cold and warm,
    whose CUPTI records may be missing - the event-timed fallback, named so."""
    if mode not in MODES:
        raise ValueError(f"kprof: unknown timing mode {mode!r} (choose one of {', '.join(MODES)})")
    if samples.get(mode):
        return mode, tuple(samples[mode])
    if mode in ("cold", "warm") and samples.get("events"):
        return "events", tuple(samples["events"])
    return mode, ()
