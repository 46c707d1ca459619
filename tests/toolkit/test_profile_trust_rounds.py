"""Interleaved ``--rev`` arms: every timing round after the first measures the headline anew, in the declared mode
and with the same timer, or its samples are not pooled.

``kprof diff`` judges the ``gpu`` samples of two interleaved arms as alternated round by round, on their spread
alone. A round that repeats round 0's host median, or pools CUDA-event times (3 us of overhead on an H100) into
one arm's CUPTI busy times, would make that judgement on samples that were never alternated or not one
measurement.
"""

from __future__ import annotations

import pytest

import kprof.harness as harness
import kprof.runner as runner
from kprof.harness import BenchSettings, CaseResult
from kprof.kernels import discover
from kprof.registry import Case
from kprof.store import RunStore
from tests.toolkit.run_contexts import context_for
from tests.toolkit.test_store import record

CASE = Case("rmsnorm", "torch_eager", (4, 64), "fp32")
ROUND0_HOST_US = (30.0, 31.0, 32.0, 33.0, 34.0)


def _arms():
    """Two arms of one family whose inputs are made on the CPU whatever device the runner asks for."""
    fam = discover()["rmsnorm"]
    made = []
    for _ in range(2):
        arm = fam.__class__.__new__(fam.__class__)
        arm.__dict__.update(fam.__dict__)
        arm.make_inputs = lambda shape, dtype, device, seed: fam.make_inputs(shape, dtype, "cpu", seed)
        made.append(arm)
    return made


def cupti_session(spots, settings, host_us, rough_ms):
    """What :func:`kprof.harness.measure_modes` gives: cold and warm from CUPTI, the host samples as given."""
    return {"cold": (1.0,), "warm": (1.0,), "host": tuple(host_us)}, "cupti", []


def _measure(tmp_path, monkeypatch, mode: str, session=cupti_session, timer: str = "cupti"):
    def round0(family, provider, case, *, device, settings, timing):
        gpu = tuple(v / 1e3 for v in ROUND0_HOST_US) if mode == "host" else (0.001, 0.001)
        return CaseResult(
            case,
            "ok",
            gpu_samples_ms=gpu,
            host_samples_us=ROUND0_HOST_US,
            timed=True,
            timing_mode=mode,
            timer=timer,
            bytes=1,
            flops=1,
        )

    monkeypatch.setattr(runner, "run_case", round0)
    monkeypatch.setattr(harness, "rough_gpu_ms", lambda fn, calls=3: 0.001)
    monkeypatch.setattr(harness, "measure_modes", session)
    st = RunStore(tmp_path / "s.db")
    ids = [st.begin_run(record()), st.begin_run(record())]
    ctx = context_for(st, *_arms(), mode="gpu", settings=BenchSettings(mode=mode, rep_ms=100))
    return runner.measure_cases(ctx, ids, [CASE])


def test_host_rounds_time_the_host_again(tmp_path, monkeypatch):
    """Each later round's host samples are measured in that round, not round 0's median over again."""
    fresh = iter(range(1000))
    monkeypatch.setattr(
        harness, "time_host", lambda fn, settings, gpu_ms=None: [50.0 + next(fresh) for _ in range(settings.host_reps)]
    )
    res = _measure(tmp_path, monkeypatch, "host")
    for arm in res:
        gpu_us = [round(v * 1e3, 6) for v in arm[0].gpu_samples_ms]
        assert gpu_us[: len(ROUND0_HOST_US)] == list(ROUND0_HOST_US)
        later = gpu_us[len(ROUND0_HOST_US) :]
        assert len(later) == (runner.ROUNDS - 1) * BenchSettings().host_reps and min(later) >= 50.0
        assert gpu_us.count(32.0) == 1  # round 0's median is one sample, not one per round


def test_graph_rounds_replay_the_graph_again(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "time_graph", lambda fn, settings: ([0.004, 0.005], 1.0, None))
    res = _measure(tmp_path, monkeypatch, "graph")
    for arm in res:
        assert arm[0].gpu_samples_ms == (0.001, 0.001) + (0.004, 0.005) * (runner.ROUNDS - 1)


def test_a_round_that_fell_back_to_events_is_not_pooled_with_cupti_samples(tmp_path, monkeypatch):
    fallback = "CUPTI records held 3 flushes, expected 21 (records dropped?); timed with CUDA events"

    def measured(spots, settings, host_us, rough_ms):
        return {"events": (5.0, 5.0), "host": tuple(host_us)}, "events", [fallback]

    res = _measure(tmp_path, monkeypatch, "cold", measured)
    for arm in res:
        assert arm[0].gpu_samples_ms == (0.001, 0.001)  # the 5 us event times are not this arm's cold samples
        assert "timed by events, not cupti" in arm[0].note and fallback in arm[0].note


def test_a_later_rounds_clock_note_is_kept(tmp_path, monkeypatch):
    slowed = "cold: only 2 of 20 calls started at full clock; the time pools them all"

    def measured(spots, settings, host_us, rough_ms):
        return {"cold": (1.5, 1.5)}, "cupti", [slowed]

    res = _measure(tmp_path, monkeypatch, "cold", measured)
    for arm in res:
        assert arm[0].gpu_samples_ms == (0.001, 0.001) + (0.0015, 0.0015) * (runner.ROUNDS - 1)
        assert arm[0].note == slowed  # said once, however many rounds said it


@pytest.mark.parametrize("mode", ["cold", "warm"])
def test_cupti_rounds_are_pooled_as_before(tmp_path, monkeypatch, mode):
    res = _measure(
        tmp_path, monkeypatch, mode, lambda spots, settings, host_us, rough_ms: ({mode: (2.0,)}, "cupti", [])
    )
    for arm in res:
        assert arm[0].gpu_samples_ms == (0.001, 0.001) + (0.002,) * (runner.ROUNDS - 1) and arm[0].note is None
