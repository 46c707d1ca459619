"""Declared timing modes (kprof.timing) on the CPU: attribution of CUPTI records to calls from traces
recorded on an H100 (tests/data/timing_*.json.gz), the event fallback, per-mode samples through the harness,
the store and the report."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from kprof import harness, timing
from kprof.harness import BenchSettings, run_case
from kprof.kernels import discover
from kprof.metrics import case_row
from kprof.registry import Case
from kprof.report import render
from kprof.store import RunRecord, RunStore
from kprof.timing import FLUSH_KERNEL_NAME, KernelRecord

DATA = Path(__file__).resolve().parents[1] / "data"
EXPECTED = json.loads((DATA / "timing_expected.json").read_text())
SPIN = "spin_kernel(long)"


def recorded(name: str) -> list[KernelRecord]:
    return timing.kernels_from_chrome_trace(DATA / f"timing_{name}.json.gz")


# ------------------------------------------------------------------------------ recorded H100 sessions
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_chrome_trace_path_matches_kineto_path(name):
    """The Chrome-trace reader and the direct Kineto reader (run on the GPU) give the same calls."""
    exp = EXPECTED[name]
    res = timing.from_records(recorded(name), exp["n_cold"], exp["warm_skip"])
    assert res.source == "cupti" and res.note is None
    assert list(res.cold.span_us) == pytest.approx(exp["cold_span_us"], abs=2e-3)
    assert list(res.cold.sum_us) == pytest.approx(exp["cold_sum_us"], abs=2e-3)
    assert list(res.warm.span_us) == pytest.approx(exp["warm_span_us"], abs=2e-3)
    assert list(res.cold.kernel_names) == exp["kernel_names"]


@pytest.mark.parametrize("name,kernels", [("rmsnorm_triton", 1), ("rmsnorm_eager", 9), ("rmsnorm_linear_two", 2)])
def test_multi_kernel_calls_keep_span_and_sum(name, kernels):
    res = timing.from_records(recorded(name), 4, timing.WARM_SKIP)
    assert res.cold.kernels_per_call == kernels
    assert len(res.cold.span_us) == 4 and len(res.warm.span_us) == 4
    for busy, span, total in zip(
        res.cold.busy_us + res.warm.busy_us, res.cold.span_us + res.warm.span_us, res.cold.sum_us + res.warm.sum_us
    ):
        assert busy <= span + 1e-9 and busy <= total + 1e-9
        assert span >= total - 1e-6 if kernels > 1 else span == total == busy
    if kernels > 1:  # these sessions' spins were short of the host time: launch gaps sit inside the span
        assert min(s - t for s, t in zip(res.cold.span_us, res.cold.sum_us)) > 0


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_flush_or_spin_kernel_is_counted_in_a_call(name):
    recs = recorded(name)
    spin, segments = timing.split_at_flushes(recs)
    assert spin is not None and FLUSH_KERNEL_NAME not in spin
    res = timing.from_records(recs, 4, timing.WARM_SKIP)
    for n in res.cold.kernel_names:
        assert FLUSH_KERNEL_NAME not in n and n != spin
    # every record is a flush, a spin or belongs to exactly one call
    flushes = sum(FLUSH_KERNEL_NAME in r.name for r in recs)
    spins = sum(r.name == spin for r in recs)
    k = res.cold.kernels_per_call
    assert flushes == 5 and spins == 5 and len(recs) == flushes + spins + k * (4 + 4 + timing.WARM_SKIP)


def test_a_dropped_record_is_refused_not_misattributed():
    recs = recorded("rmsnorm_eager")
    flush_at = [i for i, r in enumerate(recs) if FLUSH_KERNEL_NAME in r.name]
    del recs[flush_at[2] + 3]  # one kernel of the second cold call lost
    res = timing.from_records(recs, 4, timing.WARM_SKIP)
    assert len(res.cold.span_us) == 3 and "1 of 4 calls" in res.note
    del recs[flush_at[-1] - 1 + 5]  # and one in the warm block (indices shifted by one)
    res = timing.from_records(recs, 4, timing.WARM_SKIP)
    assert res.warm.span_us == () and "warm" in res.note


# ------------------------------------------------------------------------------------- synthetic streams
def stream(n_cold: int, n_warm: int, pattern: list[str], rng: random.Random, gap: int = 0) -> list[KernelRecord]:
    t, out = 0, []

    def add(name: str, dur: int) -> None:
        nonlocal t
        out.append(KernelRecord(name, t, t + dur))
        t += dur + gap + rng.randrange(0, 500)

    for _ in range(n_cold):
        add(SPIN, 9000)
        add(FLUSH_KERNEL_NAME, 40000)
        for p in pattern:
            add(p, rng.randrange(900, 30000))
    add(SPIN, 9000)
    add(FLUSH_KERNEL_NAME, 40000)
    for _ in range(n_warm):
        for p in pattern:
            add(p, rng.randrange(900, 30000))
    return out


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_synthetic_sessions_attribute_every_kernel(seed):
    rng = random.Random(seed)
    pattern = [f"k{rng.randrange(100)}_{i}" for i in range(rng.randrange(1, 7))]
    n_cold, n_warm = rng.randrange(5, 40), rng.randrange(5, 40)
    recs = stream(n_cold, n_warm + 2, pattern, rng)
    res = timing.from_records(recs, n_cold, 2)
    assert res.source == "cupti" and len(res.cold.span_us) == n_cold and len(res.warm.span_us) == n_warm
    # the sums add up to every non-harness record's duration
    calls = [r for r in recs if r.name in pattern]
    total = sum(r.duration_ns for r in calls) / 1e3
    warm_first = sum(r.duration_ns for r in calls[n_cold * len(pattern) :][: 2 * len(pattern)]) / 1e3
    assert sum(res.cold.sum_us) + sum(res.warm.sum_us) + warm_first == pytest.approx(total)


@pytest.mark.parametrize("seed", [5, 17])
def test_each_kernel_of_a_cold_call_keeps_its_own_durations(seed):
    """Per position of the call's kernels, every cold call's duration of that kernel: stored as its own
    samples kind, read back as (name, median) in launch order; pooled placements concatenate them."""
    rng = random.Random(seed)
    pattern = [f"k{i}_{rng.randrange(100)}" for i in range(rng.randrange(2, 6))]
    n_cold = rng.randrange(5, 20)
    recs = stream(n_cold, 4, pattern, rng)
    res = timing.from_records(recs, n_cold, 2)
    assert res.cold.kernel_names == tuple(pattern)
    cold = [r for r in recs if r.name in pattern][: n_cold * len(pattern)]
    for i in range(len(pattern)):
        assert res.cold.kernel_us[i] == tuple(r.duration_ns / 1e3 for r in cold[i :: len(pattern)])
    samples = timing.mode_samples(res, (), (), ())
    assert timing.cold_kernels(samples) == [
        (name, timing.median(res.cold.kernel_us[i])) for i, name in enumerate(pattern)
    ]
    both = timing.pooled([res, res])
    assert both.cold.kernel_us == tuple(v + v for v in res.cold.kernel_us)
    other = timing.ModeSamples(timing.CallTimes((1.0,), (1.0,), (1.0,), 1, ("x",), None, ((1.0,),)), None, "cupti")
    assert timing.pooled([res, other]).cold.kernel_us == ()  # different kernels: no per-kernel samples
    assert timing.cold_kernels({"cold": (1.0,), "cold_kernel/x/y": (2.0,)}) == []


def test_no_records_falls_back_to_events_with_a_reason():
    res = timing.from_records([], 10, 3)
    assert res.source == "events" and res.cold is None and "another profiler" in res.note


def test_wrong_number_of_flushes_falls_back():
    rng = random.Random(5)
    recs = stream(6, 8, ["a", "b"], rng)
    res = timing.from_records(recs, 7, 3)
    assert res.source == "events" and "expected 8" in res.note


def test_profiler_that_cannot_start_falls_back(monkeypatch):
    def boom(run):
        raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")

    import torch

    monkeypatch.setattr(timing, "flush", lambda: _NoFlush())
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    res = timing.measure_cupti(lambda: None, host_us=5, gpu_us=2, rep_ms=1, collect=boom)
    assert res.source == "events" and "MULTIPLE_SUBSCRIBERS" in res.note


@pytest.mark.parametrize("enqueue_ms", [0.0, 3.0])
def test_cold_time_us_spins_for_the_calls_own_host_time(monkeypatch, enqueue_ms):
    # a call slower to enqueue than the spin before it lasts would start its kernels as the host reaches them
    import time

    import torch

    asked = []

    def cupti(fn, *, host_us, gpu_us, rep_ms, idle_us=0.0):
        asked.append(host_us)
        return timing.ModeSamples(None, None, "events", "no CUPTI here")

    monkeypatch.setattr(timing, "measure_cupti", cupti)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr("triton.testing.do_bench", lambda fn, **kw: 0.001)
    timing.cold_time_us(lambda: time.sleep(enqueue_ms / 1e3), rep_ms=1.0)
    assert asked and asked[0] >= max(timing.COLD_HOST_FLOOR_US, enqueue_ms * 1e3)
    assert asked[0] < timing.COLD_HOST_FLOOR_US + enqueue_ms * 1e3 + 50e3  # the enqueue, not a multiple of it


class _NoFlush:
    nbytes = 1 << 20

    def __call__(self) -> None:
        pass


def test_plan_calls_is_bounded():
    assert timing.plan_calls(100.0, 2.0, 100) == (200, 200 + timing.WARM_SKIP)
    assert timing.plan_calls(1e5, 1e5, 100) == (20, 20 + timing.WARM_SKIP)


def test_headline_picks_the_declared_mode_or_says_events():
    s = {"cold": (2.0, 3.0), "warm": (1.0,), "host": (9.0,), "events": (5.0,)}
    assert timing.headline(s, "cold") == ("cold", (2.0, 3.0))
    assert timing.headline(s, "host") == ("host", (9.0,))
    assert timing.headline({"events": (5.0,)}, "warm") == ("events", (5.0,))
    assert timing.headline({"events": (5.0,)}, "graph") == ("graph", ())
    with pytest.raises(ValueError, match="unknown timing mode"):
        timing.headline(s, "fast")


def test_every_mode_has_one_sentence_definition_used_verbatim_in_the_readme():
    assert set(timing.MODE_DEFINITIONS) == set(timing.MODES) and timing.DEFAULT_MODE in timing.MODES
    readme = (DATA.parents[1] / "README.md").read_text()
    for mode, text in timing.MODE_DEFINITIONS.items():
        assert text.startswith(f"{mode}: ") and text.count(". ") == 0 and text.endswith(".")
        assert text in readme


# ------------------------------------------------------------------- harness -> metrics -> store -> report
RMS = discover()["rmsnorm"]


def gpu_run(st: RunStore) -> str:
    return st.begin_run(
        RunRecord(
            family="rmsnorm",
            mode="gpu",
            command="test",
            config={},
            git_commit="abc",
            git_dirty=False,
            git_note=None,
            source_hashes={},
            device={"kind": "cuda", "name": "fake"},
            versions={},
            profiler="none",
            profiler_version=None,
            ceiling_gbps=3000.0,
            ceiling={"method": "device-to-device copy, bytes read + written, median cold time", "tflops": {}},
        )
    )


def fake_timers(monkeypatch, collect_name: str | None):
    """The harness's GPU timers replaced by a replay of a recorded session (or no CUPTI at all)."""
    rng = random.Random(17)
    monkeypatch.setattr(harness, "rough_gpu_ms", lambda fn, calls=3: 0.002)
    monkeypatch.setattr(harness, "time_host", lambda fn, s, gpu_ms=None: [rng.uniform(10, 20) for _ in range(7)])
    monkeypatch.setattr(harness, "time_gpu", lambda fn, s, host_us=None: [rng.uniform(4e-3, 6e-3) for _ in range(9)])
    monkeypatch.setattr(harness, "time_graph", lambda fn, s: ([rng.uniform(1e-3, 2e-3) for _ in range(10)], 5.0, None))
    monkeypatch.setattr(harness, "peak_memory", lambda fn: 1024)

    def cupti(fn, **kw):
        if collect_name is None:
            return timing.from_records([], 4, timing.WARM_SKIP)
        return timing.from_records(recorded(collect_name), 4, timing.WARM_SKIP)

    monkeypatch.setattr(timing, "measure_cupti", cupti)
    left = (7.5, 8.0, 8.5) if collect_name is not None else ()  # write-back left in L2, measured where CUPTI is
    monkeypatch.setattr(timing, "measure_left_behind", lambda fn, **kw: left)


@pytest.mark.parametrize("mode", ["cold", "warm", "graph", "host"])
def test_case_carries_every_mode_and_ranks_by_the_declared_one(monkeypatch, tmp_path, mode):
    fake_timers(monkeypatch, "rmsnorm_triton")
    case = Case("rmsnorm", "torch_eager", (5, 77), "fp32")  # runs on the CPU as it is
    res = run_case(
        RMS, RMS.providers["torch_eager"], case, device="cpu", settings=BenchSettings(mode=mode), timing=True
    )
    assert res.status == "ok" and res.timer == "cupti" and res.timing_mode == mode
    per_kernel = {k for k in res.mode_samples_us if k.startswith("cold_kernel/")}
    assert set(res.mode_samples_us) - per_kernel == {
        "cold",
        "cold_span",
        "cold_sum",
        "warm",
        "warm_span",
        "warm_sum",
        "graph",
        "host",
        timing.WRITEBACK,
    }
    # one kernel a call here: its own cold samples are the call's sum of durations
    ((name, us),) = timing.cold_kernels(res.mode_samples_us)
    assert per_kernel == {timing.cold_kernel_kind(0, name)}
    assert us == pytest.approx(timing.median(res.mode_samples_us["cold_sum"]))
    assert [v * 1e3 for v in res.gpu_samples_ms] == pytest.approx(list(res.mode_samples_us[mode]))
    row = case_row(res, "eager", 3000.0)
    assert row["timing_mode"] == mode and row["timer"] == "cupti"
    assert row["gpu_time_us"] == pytest.approx(timing.median(res.mode_samples_us[mode]))
    assert row["cold_us"] == pytest.approx(timing.median(EXPECTED["rmsnorm_triton"]["cold_span_us"]))
    assert math.isnan(row["events_us"])
    assert row["cold_writeback_us"] == 8.0 and row["cold_with_writeback_us"] == pytest.approx(row["cold_us"] + 8.0)


def test_no_cupti_falls_back_to_events_and_the_report_says_so(monkeypatch, tmp_path):
    fake_timers(monkeypatch, None)
    st = RunStore(tmp_path / "s.db")
    rid = gpu_run(st)
    for i, prov in enumerate(("torch_F", "torch_eager")):
        case = Case("rmsnorm", prov, (5, 77), "fp32")
        res = run_case(RMS, RMS.providers[prov], case, device="cpu", settings=BenchSettings(), timing=True)
        assert res.timer == "events" and "another profiler" in res.note
        assert set(res.mode_samples_us) == {"events", "graph", "host"}
        row = case_row(res, RMS.providers[prov].kind, 3000.0)
        st.add_case(rid, i, row, {**res.mode_samples_us, "gpu": res.gpu_samples_ms, "host": res.host_samples_us})
    md = render(st.run(rid), st.metrics(rid))
    assert "| cold µs |" in md and "| timer |" in md and "2 case(s) fell back" in md
    assert timing.MODE_DEFINITIONS["warm"] in md and timing.EVENTS_DEFINITION in md
    # per-mode samples come back by case and mode, in us
    cid = "rmsnorm/torch_F/5x77/fp32"
    ev = st.mode_samples_us(rid, cid, "events")
    assert len(ev) == 9 and all(4 <= v <= 6 for v in ev)
    assert st.mode_samples_us(rid, cid, "gpu") == pytest.approx(ev)
    assert st.samples(rid, cid, "cold").empty and set(st.samples(rid)["kind"]) >= {"gpu", "host", "events", "graph"}


def test_report_headers_name_the_mode(monkeypatch, tmp_path):
    fake_timers(monkeypatch, "rmsnorm_eager")
    st = RunStore(tmp_path / "s.db")
    rid = gpu_run(st)
    case = Case("rmsnorm", "torch_eager", (5, 77), "fp32")
    res = run_case(RMS, RMS.providers["torch_eager"], case, device="cpu", settings=BenchSettings(), timing=True)
    st.add_case(rid, 0, case_row(res, "eager", 3000.0), {**res.mode_samples_us, "gpu": res.gpu_samples_ms})
    md = render(st.run(rid), st.metrics(rid))
    header = next(line for line in md.splitlines() if line.startswith("| provider |"))
    assert (
        "| cold µs |" in header
        and "| warm µs |" in header
        and "| graph µs |" in header
        and "| host µs |" in header
        and "timer" not in header
    )
    assert "`cold` ranks" in md and timing.DEFAULT_MODE_WHY in md and "span" in md
    m = st.metrics(rid)
    # eager: 9 kernels with gaps between them; shown is the busy time, which has no overlap to remove here
    assert (
        m.loc[0, "cold_us"] == pytest.approx(m.loc[0, "cold_sum_us"]) and m.loc[0, "cold_span_us"] > m.loc[0, "cold_us"]
    )


def test_busy_time_counts_overlap_once_and_skips_gaps():
    rng = random.Random(41)
    a0 = rng.randrange(1000, 5000)
    call = [
        KernelRecord("norm", a0, a0 + 3000),
        KernelRecord("gemm", a0 + 2500, a0 + 9000),  # PDL overlap
        KernelRecord("tail", a0 + 20000, a0 + 21000),
    ]  # after an idle gap
    busy, span, total = timing.aggregate([call])
    assert busy == (9.0 + 1.0,) and span == (21.0,) and total == (3.0 + 6.5 + 1.0,)
    assert timing.busy_ns([KernelRecord("x", 0, 50), KernelRecord("y", 10, 20)]) == 50  # nested


# ------------------------------------------------------------------------------------------ the SM clock
def clocked_stream(clocks_mhz: list[float], call_ns: list[int], cycles: int) -> list[KernelRecord]:
    """A session whose n-th spin runs ``cycles`` at ``clocks_mhz[n]`` before a flush and a one-kernel call
    of ``call_ns[n]``; then the spin, flush and warm block."""
    t, out = 0, []
    for mhz, dur in [*zip(clocks_mhz, call_ns), (2000.0, None)]:
        spin = round(cycles / mhz * 1e3)
        out += [KernelRecord(SPIN, t, t + spin), KernelRecord(FLUSH_KERNEL_NAME, t + spin, t + spin + 40000)]
        t += spin + 40000
        for d in [dur] if dur else [5000] * 6:
            out.append(KernelRecord("k", t, t + d))
            t += d
    return out


def test_each_cold_call_gets_the_clock_of_the_spin_before_it():
    clocks = [1980.0, 1500.0, 1750.0, 1990.0]
    recs = clocked_stream(clocks, [1000, 1300, 1100, 1000], cycles=80_000)
    assert timing.spin_clocks(recs, 80_000) == pytest.approx(clocks + [2000.0], rel=1e-4)
    res = timing.from_records(recs, 4, timing.WARM_SKIP, 80_000)
    assert res.cold.clock_mhz == pytest.approx(clocks, rel=1e-4)
    assert timing.from_records(recs, 4, timing.WARM_SKIP).cold.clock_mhz == ()  # spin length unknown: no clocks
    # a flush not preceded by the session's spin has no clock, and then no call of the session has one
    odd = [r if i != 6 else KernelRecord("other", r.start_ns, r.end_ns) for i, r in enumerate(recs)]  # 3rd spin
    assert math.isnan(timing.spin_clocks(odd, 80_000)[2])
    assert timing.from_records(odd, 4, timing.WARM_SKIP, 80_000).cold.clock_mhz == ()


def test_a_call_left_out_of_the_cold_calls_takes_its_clock_with_it():
    recs = clocked_stream([1980.0, 1500.0, 1970.0], [1000, 1300, 1000], cycles=50_000)
    extra = recs[5]  # the second call's kernel
    recs.insert(6, KernelRecord("one_off_alloc", extra.end_ns, extra.end_ns + 10))
    res = timing.from_records(recs, 3, timing.WARM_SKIP, 50_000)
    assert res.cold.busy_us == (1.0, 1.0) and res.cold.clock_mhz == pytest.approx((1980.0, 1970.0), rel=1e-4)


def calls_at(clocks: list[float], us: list[float]) -> timing.CallTimes:
    return timing.CallTimes(tuple(us), tuple(us), tuple(us), 1, ("k",), None, (tuple(us),), tuple(clocks))


def test_at_full_clock_filters_every_per_call_field_alike():
    t = calls_at([1980, 1500, 1900, 1880], [1.0, 1.3, 1.01, 1.05])
    full = timing.at_full_clock(t, 1980.0)  # 95% of 1980 is 1881
    assert full.busy_us == full.span_us == full.sum_us == full.kernel_us[0] == (1.0, 1.01)
    assert full.clock_mhz == (1980, 1900)
    unknown = timing.CallTimes((1.0,), (1.0,), (1.0,), 1, ("k",))
    assert timing.at_full_clock(unknown, 1980.0) is unknown


def settle(first: timing.CallTimes, more: list[timing.CallTimes], full_mhz: float | None = 1980.0):
    asked = []

    def again(idle_us: float) -> timing.ModeSamples:
        asked.append(idle_us)
        return timing.ModeSamples(more[len(asked) - 1], None, "cupti")

    res, note = timing.settle_clock(timing.ModeSamples(first, None, "cupti"), again, full_mhz, gpu_us=300.0)
    return res, note, asked


def test_calls_all_at_full_clock_are_left_as_they_are():
    first = calls_at([1980.0] * 12, [1.0] * 12)
    res, note, asked = settle(first, [])
    assert res.cold is first and note is None and asked == []
    res, note, asked = settle(calls_at([1500.0] * 12, [1.3] * 12), [], full_mhz=None)  # no reference: as is
    assert note is None and asked == [] and res.cold.busy_us == (1.3,) * 12


def test_slowed_calls_are_set_aside_when_enough_ran_at_full_clock():
    rng = random.Random(7)
    clocks = [rng.choice([1980.0, 1960.0, 1500.0, 1600.0]) for _ in range(40)]
    us = [300.0 * 1980.0 / c for c in clocks]  # a compute-bound call: time scales with 1/clock
    res, note, asked = settle(calls_at(clocks, us), [])
    n_full = sum(c >= 1881 for c in clocks)
    assert asked == [] and len(res.cold.busy_us) == n_full >= timing.CLOCK_MIN_CALLS
    assert max(res.cold.busy_us) < 300.0 * 1.011
    assert f"{40 - n_full} of 40 calls started below 95% of the 1980 MHz SM clock" in note
    assert "set aside" in note and "more measurement" not in note


def test_too_few_full_clock_calls_idle_between_calls_to_let_the_clock_recover():
    n = timing.CLOCK_MIN_CALLS
    first = calls_at([1500.0] * 19 + [1980.0], [396.0] * 19 + [300.0])
    more = [
        calls_at([1600.0] * (22 - n) + [1970.0] * (n - 2), [371.0] * (22 - n) + [301.0] * (n - 2)),
        calls_at([1980.0] * 20, [300.0] * 20),
    ]
    res, note, asked = settle(first, more)
    # 1 full-clock call, then n - 1 after one more measurement: a second one, n + 19; each idles 4x the call
    assert asked == [timing.CLOCK_IDLE_FACTOR * 300.0] * 2
    assert sorted(res.cold.busy_us) == [300.0] * 21 + [301.0] * (n - 2)
    assert f"{41 - n} of 60 calls started below 95%" in note and "(1500-1600 MHz" in note
    assert "2 more measurement(s) spun 4x the call between calls" in note
    res, note, asked = settle(first, [more[1]])  # 1 + 20: one was enough
    assert len(asked) == 1 and len(res.cold.busy_us) == 21 and "19 of 40" in note


def test_the_clock_that_never_recovers_is_said_and_every_call_kept():
    first = calls_at([1500.0] * 20, [396.0] * 20)
    more = [calls_at([1550.0] * 19 + [1980.0], [383.0] * 19 + [300.0])] * timing.CLOCK_RETRIES
    assert timing.CLOCK_RETRIES < timing.CLOCK_MIN_CALLS  # one full-clock call a measurement is never enough
    res, note, asked = settle(first, more)
    assert len(asked) == timing.CLOCK_RETRIES
    assert len(res.cold.busy_us) == 20 * (1 + timing.CLOCK_RETRIES)
    assert f"only {timing.CLOCK_RETRIES} of {20 * (1 + timing.CLOCK_RETRIES)} calls started at full clock" in note
    assert "1500-1550 MHz" in note and "slower than the kernel at full clock" in note


def test_a_recovery_measurement_of_other_kernels_is_not_pooled():
    first = calls_at([1500.0] * 20, [396.0] * 20)
    other = timing.CallTimes((1.0,) * 20, (1.0,) * 20, (1.0,) * 20, 1, ("x",), None, (), (1980.0,) * 20)
    res, note, asked = settle(first, [other])
    assert len(asked) == 1 and res.cold.busy_us == first.busy_us and "only 0 of 20" in note


def test_the_case_stores_its_clocks_and_the_row_says_how_near_full_they_were(monkeypatch):
    rng = random.Random(3)
    clocks = [rng.choice([1980.0, 1500.0]) for _ in range(30)]

    def cupti(fn, **kw):
        return timing.ModeSamples(calls_at(clocks, [300.0 * 1980.0 / c for c in clocks]), None, "cupti")

    monkeypatch.setattr(timing, "measure_cupti", cupti)
    monkeypatch.setattr(harness, "max_sm_clock_mhz", lambda index: 1980.0)
    monkeypatch.setattr(harness.torch.cuda, "current_device", lambda: 0)
    samples, timer, notes = harness.measure_modes([harness.Placement(lambda: None)], BenchSettings(), [10.0], 0.3)
    n_full = clocks.count(1980.0)
    assert timer == "cupti" and samples["cold"] == (300.0,) * n_full and samples["cold_clock"] == (1980.0,) * n_full
    assert samples["sm_clock_max"] == (1980.0,) and f"{30 - n_full} of 30 calls" in notes[0]
    from kprof.metrics import mode_fields

    row = mode_fields(harness.CaseResult(Case("f", "p", (1,), "fp16"), "ok", mode_samples_us=samples))
    assert row["cold_clock_mhz"] == 1980.0 and row["cold_clock_pct"] == pytest.approx(100.0)


def test_placements_are_compared_at_full_clock_not_blamed_for_the_clock(monkeypatch):
    """Placement 1's session happened to run mostly slowed: over all its calls it reads 14% slower than
    placement 0, which the case would put down to where its tensors lie. At full clock the two agree."""
    per_spot = [
        calls_at([1980.0] * 10 + [1500.0] * 10, [300.0] * 10 + [396.0] * 10),
        calls_at([1980.0] * 10 + [1500.0] * 30, [301.0] * 10 + [396.0] * 30),
    ]
    seen = []

    def cupti(fn, **kw):
        seen.append(kw["idle_us"])
        return timing.ModeSamples(per_spot[(len(seen) - 1) % 2], None, "cupti")

    monkeypatch.setattr(timing, "measure_cupti", cupti)
    monkeypatch.setattr(harness, "max_sm_clock_mhz", lambda index: 1980.0)
    monkeypatch.setattr(harness.torch.cuda, "current_device", lambda: 0)
    spots = [harness.Placement(lambda: None)] * 2
    samples, _, notes = harness.measure_modes(spots, BenchSettings(), [10.0], 0.3)
    assert seen == [0.0, 0.0] and samples["cold_placements"] == (300.0, 301.0)
    assert sorted(samples["cold"]) == [300.0] * 10 + [301.0] * 10
    assert len(notes) == 1 and "40 of 60 calls" in notes[0] and "where its tensors lie" not in notes[0]


def test_a_recorded_power_capped_session_gives_each_call_its_clock():
    """A session recorded on an H100 (benchmarks/power_cap.py --trace): cuBLAS's 8192x4096x14336 fp16 product
    back to back after other large products, with the software power cap holding the SM clock well under its
    1980 MHz. The Chrome-trace path gives the clocks and times the direct Kineto path gave on the GPU, no call
    is at full clock, and a call's time follows the clock it started at."""
    exp = json.loads((DATA / "timing_power_capped_expected.json").read_text())
    res = timing.from_records(recorded("power_capped"), exp["n_cold"], timing.WARM_SKIP, exp["spin_cycles"])
    assert list(res.cold.busy_us) == pytest.approx(exp["cold_busy_us"], abs=2e-3)
    assert list(res.cold.clock_mhz) == pytest.approx(exp["clock_mhz"], rel=1e-4)
    assert timing.at_full_clock(res.cold, exp["sm_clock_max"]).busy_us == ()
    clocks, times = res.cold.clock_mhz, res.cold.busy_us
    slow = [t for c, t in zip(clocks, times) if c < min(clocks) + 20]
    fast = [t for c, t in zip(clocks, times) if c > max(clocks) - 20]
    assert min(slow) > max(fast)  # the calls at the lowest clock are all slower than those at the highest
    settled, note = timing.settle_clock(res, lambda idle: res, exp["sm_clock_max"], max(times))
    assert settled.cold.busy_us == times * (1 + timing.CLOCK_RETRIES) and note.startswith("cold: only 0 of")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_sessions_of_small_calls_ran_at_full_clock(name):
    """The small calls recorded on an H100 (benchmarks/capture_timing_trace.py spins host_us=60 before each)
    read their spins at full clock: kprof does not set such calls aside for a clock it misread."""
    exp = EXPECTED[name]
    res = timing.from_records(recorded(name), exp["n_cold"], exp["warm_skip"], timing._spin_cycles(60.0))
    assert len(res.cold.clock_mhz) == exp["n_cold"]
    assert timing.at_full_clock(res.cold, 1980.0) == res.cold
    assert max(res.cold.clock_mhz) < 1.02 * 1980.0
