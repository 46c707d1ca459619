"""The profile flow in-process: selection, interruption keeps finished cases, interpreter mode."""

from __future__ import annotations

import pytest

import kprof.runner as runner
from kprof.external import choose
from kprof.errors import KprofError
from kprof.harness import BenchSettings
from kprof.kernels import discover
from kprof.runner import ProfileOptions, profile, select
from kprof.store import RunStore


def opts(store, **kw) -> ProfileOptions:
    base = dict(family="rmsnorm", shapes=((3, 100), (2, 64)), dtypes=("fp32",), mode="interpreter",
                settings=BenchSettings(seed=7), store=str(store), command="test")
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
