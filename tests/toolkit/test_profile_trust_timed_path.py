"""A timed case is correct in the call its timings repeat, not only in the first call the check made.

The check calls a version taking ``out=`` with poisoned out tensors; the timings call it without ``out=``, again
and again. add_rmsnorm's, silu_mul's and gelu_mul's ``triton_tuned`` then launch as the op does (its plan), and
versions with a plan or a route race run other code from a signature's second call on. A time reported beside
"ok" must be the time of code that was checked.
"""

from __future__ import annotations

import pytest

from kprof import harness
from kprof.harness import BenchSettings, run_case
from kprof.kernels import discover
from kprof.registry import Case, Provider

RMS = discover()["rmsnorm"]
CASE = Case("rmsnorm", "t", (6, 50), "fp32")


def _provider(fn, accepts_out: bool) -> Provider:
    return Provider("rmsnorm", "t", "triton", fn, "test provider", accepts_out=accepts_out)


def _right(x, weight, eps):
    return RMS.providers["torch_eager"].fn(x, weight, eps)


@pytest.fixture
def untimed(monkeypatch):
    """The GPU timers replaced by fixed samples, so that a CPU test reaches the end of a timed case."""
    samples = {"cold": (2.0, 2.0, 2.0), "host": (9.0,)}
    monkeypatch.setattr(harness, "rough_gpu_ms", lambda fn, calls=3: 0.002)
    monkeypatch.setattr(harness, "time_host", lambda fn, settings, gpu_ms=None: [9.0] * settings.host_reps)
    monkeypatch.setattr(harness, "measure_modes", lambda spots, settings, host, rough: (dict(samples), "cupti", []))
    monkeypatch.setattr(harness, "peak_memory", lambda fn: 0)
    return BenchSettings(graph=False)


def _timed(provider: Provider, settings: BenchSettings):
    return run_case(RMS, provider, CASE, device="cpu", settings=settings, timing=True)


def test_a_version_wrong_only_without_out_is_not_timed_as_correct(untimed):
    def into_out_only(x, weight, eps, out=None):
        if out is None:  # the call timed: its own allocation, another path (here off by 1%)
            return _right(x, weight, eps) * 1.01
        return out.copy_(_right(x, weight, eps))

    res = _timed(_provider(into_out_only, accepts_out=True), untimed)
    assert res.status == "fail" and not res.timed and res.gpu_samples_ms == ()
    assert res.note.startswith(harness.AS_TIMED) and "above tolerance" in res.note


def test_a_version_wrong_from_its_second_call_is_not_timed_as_correct(untimed):
    calls = []

    def planned(x, weight, eps):  # checked on the first call; a plan built then launches the later ones
        calls.append(1)
        y = _right(x, weight, eps)
        if len(calls) > 1:
            y[-1] = 0.0  # the plan's launch misses the last row
        return y

    res = _timed(_provider(planned, accepts_out=False), untimed)
    assert res.status == "fail" and not res.timed
    assert res.note.startswith(harness.AS_TIMED) and res.correctness.rel_err > 1e-2


@pytest.mark.parametrize("accepts_out", [True, False])
def test_a_version_right_in_every_call_is_timed(untimed, accepts_out):
    def right(x, weight, eps, out=None):
        y = _right(x, weight, eps)
        return y if out is None else out.copy_(y)

    res = _timed(_provider(right, accepts_out=accepts_out), untimed)
    assert res.status == "ok" and res.timed and res.gpu_samples_ms == (0.002, 0.002, 0.002)
    assert res.correctness.ok and res.correctness.rel_err < 1e-6 and res.note is None


def test_the_stored_error_is_the_worse_of_the_two_calls(untimed):
    calls = []

    def drifts(x, weight, eps):  # both calls within tolerance, the second one less exact
        calls.append(1)
        return _right(x, weight, eps) * (1 + 2e-6 * len(calls))

    res = _timed(_provider(drifts, accepts_out=False), untimed)
    assert res.status == "ok" and res.correctness.rel_err == pytest.approx(4e-6, rel=0.1)
