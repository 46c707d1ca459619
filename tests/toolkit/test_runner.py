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


def test_a_profiler_pass_stores_each_cases_waves_on_the_runs_gpu(tmp_path):
    """``runner._store_launches`` hands the run's GPU's SM count to the launch metrics: a persistent launch of 396
    programs of 16 warps at 52 registers a thread (2 fit an SM) on 132 SMs is stored at 1.5 waves; on a device with
    no SM count (the CPU) at none."""
    import dataclasses
    from types import SimpleNamespace

    import pandas as pd

    from kprof import launch_table
    from kprof.device import DeviceInfo
    from tests.toolkit.run_contexts import context_for
    from tests.toolkit.test_store import record

    case = "rmsnorm/triton_tuned/1024x98304/bf16"
    launches = launch_table.validate(
        pd.DataFrame(
            {"case": [case] * 2, "kernel": ["_slotted_kernel"] * 2, "kind": ["kernel"] * 2, "count": [1, 1],
             "start_ns": [0, 10_000], "end_ns": [5_000, 15_000], "duration_ns": [5_000, 5_000], "grid_x": [396] * 2,
             "grid_y": [1] * 2, "grid_z": [1] * 2, "block_x": [512] * 2, "block_y": [1] * 2, "block_z": [1] * 2,
             "registers_per_thread": [52] * 2, "shared_mem_bytes": [0] * 2, "source": ["test"] * 2}
        ),
        source="test",
    )  # fmt: skip
    results = [SimpleNamespace(case=SimpleNamespace(id=case), bytes=4.0 * 1024 * 98304, extra={})]
    gpu = DeviceInfo(kind="cuda", name="NVIDIA H200", cc_major=9, cc_minor=0, sm_count=132)
    for device, expect in ((gpu, 1.5), (DeviceInfo(kind="cpu", name="cpu"), None)):
        st = RunStore(tmp_path / f"{device.kind}.db")
        run_id = st.begin_run(record(mode="gpu", profiler="test"))
        st.add_case(run_id, 0, {"case": case, "family": "rmsnorm", "provider": "triton_tuned", "status": "ok"}, {})
        ctx = dataclasses.replace(context_for(st, discover()["rmsnorm"], mode="gpu", repeats=2), device=device)
        runner._store_launches(ctx, run_id, launches, results)
        waves = st.metrics(run_id).set_index("case").at[case, "waves"]
        assert (waves == pytest.approx(expect)) if expect is not None else pd.isna(waves), (device.kind, waves)
