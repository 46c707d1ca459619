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
