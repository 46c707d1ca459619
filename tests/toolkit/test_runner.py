"""The profile flow in-process: selection, interruption keeps finished cases, interpreter mode."""

from __future__ import annotations

import pytest

import kprof.runner as runner
from kprof.errors import KprofError
from kprof.external import choose
from kprof.harness import BenchSettings
from kprof.kernels import discover
from kprof.runner import ProfileOptions, profile, select
from kprof.store import RunStore


def opts(store, **kw) -> ProfileOptions:
    base = dict(
        family="rmsnorm",
        shapes=((3, 100), (2, 64)),
        dtypes=("fp32",),
        mode="interpreter",
        settings=BenchSettings(seed=7),
        store=str(store),
        command="test",
    )
    base.update(kw)
    return ProfileOptions(**base)


def test_interpreter_run_records_correctness_only(store_path, device):
    if device != "cpu":
        pytest.skip("interpreter run on a CPU-only machine")
    rid = profile(opts(store_path))
    st = RunStore(store_path)
    run = st.run(rid)
    assert run["mode"] == "interpreter" and run["status"] == "complete" and run["profiler"] == "none"
    m = st.metrics(rid)
    assert m["ok"].all() and m["gpu_time_us"].isna().all()
    assert "correctness only" in run["report_md"]
    assert "torch_compile: GPU only" in run["notes"]
    assert "## Providers not run" in run["report_md"] and "`torch_compile`: GPU only" in run["report_md"]
    assert set(run["source_hashes"]) >= {"kernels/rmsnorm/tuned.py", "kernels/rmsnorm/sweep.yaml"}


def test_interrupted_run_keeps_finished_cases(store_path, monkeypatch):
    real = runner.run_case
    calls = {"n": 0}

    def flaky(*a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(runner, "run_case", flaky)
    with pytest.raises(KeyboardInterrupt):
        profile(opts(store_path, mode="auto"))
    st = RunStore(store_path)
    run = st.run("latest")
    assert run["status"] == "incomplete" and "KeyboardInterrupt" in run["error"]
    assert len(st.metrics(run["id"])) == 2
    assert "incomplete" in run["report_md"]


def test_selection_skips_unavailable_providers_with_reasons():
    fam = discover()["rmsnorm"]
    sel = select(fam, ProfileOptions(family="rmsnorm"), "interpreter")
    skipped = dict(sel.skipped)
    assert "torch_compile" in skipped and "triton_tuned" in sel.providers
    with pytest.raises(KprofError, match="no provider of 'rmsnorm' can run here"):
        select(fam, ProfileOptions(family="rmsnorm", providers=("torch_compile",)), "interpreter")


def test_bad_mode_and_profiler():
    with pytest.raises(KprofError, match="--mode"):
        runner.resolve_mode("fast")
    with pytest.raises(KprofError, match="--profiler"):
        choose("vtune", "gpu")


def test_interleaved_arms_alternate_round_by_round(tmp_path, monkeypatch):
    """Two revisions on a GPU: ROUNDS timing rounds per case, order A B / B A, samples of all rounds kept."""
    import kprof.harness as harness
    from kprof.harness import CaseResult
    from kprof.registry import Case

    calls = []

    def fake_run_case(family, provider, case, *, device, settings, timing):
        calls.append((id(family), "run", case.id))
        return CaseResult(
            case,
            "ok",
            gpu_samples_ms=(1.0,),
            host_samples_us=(5.0,),
            timed=True,
            bytes=1,
            flops=1,
            timing_mode="cold",
            timer="cupti",
        )

    def fake_more(family, provider, case, *, device, settings, host_us):
        calls.append((id(family), "more", case.id))
        return harness.MoreSamples((2.0,), "cupti")

    monkeypatch.setattr(runner, "run_case", fake_run_case)
    monkeypatch.setattr(harness, "more_gpu_samples", fake_more)
    fam = discover()["rmsnorm"]
    other = discover()["rmsnorm"].__class__.__new__(fam.__class__)
    other.__dict__.update(fam.__dict__)
    st = RunStore(tmp_path / "s.db")
    from tests.toolkit.test_store import record

    ids = [st.begin_run(record()), st.begin_run(record())]
    cases = [Case("rmsnorm", "triton_tuned", (4, 64), "fp32"), Case("rmsnorm", "torch_F", (4, 64), "fp32")]
    from tests.toolkit.run_contexts import context_for

    ctx = context_for(st, fam, other, mode="gpu", settings=BenchSettings(rep_ms=100))
    res = runner.measure_cases(ctx, ids, cases)
    first_case = [c[0] for c in calls if c[2] == cases[0].id]
    a, b = id(fam), id(other)
    assert first_case == [a, b, b, a, a, b, b, a][: 2 * runner.ROUNDS]
    assert [c[1] for c in calls if c[2] == cases[0].id][:2] == ["run", "run"]
    assert len(res[0][0].gpu_samples_ms) == runner.ROUNDS  # one sample per round in this fake
    assert st.samples(ids[1])["value"].tolist().count(2.0) == 2 * (runner.ROUNDS - 1)
