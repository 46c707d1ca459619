"""The run context: built once per invocation from its options, frozen, and all the runner's phases need."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import kprof.runner as runner
from kprof.context import Arm, ProfileOptions, RunContext, RunPlan, RunWriter, arms_for, quiet
from kprof.envinfo import git_state
from kprof.external import CaptureResult, ProfilerChoice
from kprof.harness import BenchSettings, CaseResult
from kprof.registry import Case, get_family
from kprof.store import RunStore
from tests.conftest import HAS_CUDA

# as `kprof profile rmsnorm -p triton_tuned,torch_eager,torch_compile -s 3x37,5x129 -d fp32 --mode interpreter
# --rep-ms 7 --warmup-ms 5 --no-graph` builds them (seed 0: draw one)
CLI_LIKE = ProfileOptions(
    family="rmsnorm",
    providers=("triton_tuned", "torch_eager", "torch_compile"),
    shapes=((3, 37), (5, 129)),
    dtypes=("fp32",),
    profiler="auto",
    mode="interpreter",
    command="kprof profile rmsnorm ...",
    settings=BenchSettings(warmup_ms=5, rep_ms=7, graph=False, seed=0, mode="cold"),
)


def _in_git_checkout() -> bool:
    cp = subprocess.run(["git", "-C", str(get_family("rmsnorm").package_dir), "rev-parse", "HEAD"], capture_output=True)
    return cp.returncode == 0


def test_a_context_built_from_cli_options_holds_what_every_phase_needs(tmp_path):
    store = RunStore(tmp_path / "s.db")
    ctx = runner.prepare(CLI_LIKE, "interpreter", get_family("rmsnorm"), store, quiet)
    assert ctx.options is CLI_LIKE and ctx.mode == "interpreter" and ctx.store is store and ctx.progress is quiet
    assert ctx.selection.providers == ("triton_tuned", "torch_eager")
    assert [n for n, _ in ctx.selection.skipped] == ["torch_compile"]  # GPU only, said why
    assert ctx.selection.shapes == ((3, 37), (5, 129)) and ctx.selection.dtypes == ("fp32",)
    assert ctx.profiler.name == "none" and "no GPU" in ctx.profiler.reason and ctx.repeats >= 1
    assert 0 < ctx.settings.seed < 2**31  # drawn once, here, and every phase uses this one
    assert dataclasses.replace(ctx.settings, seed=0) == CLI_LIKE.settings
    assert ctx.device.kind in ("cpu", "cuda") and ctx.ceiling is None  # no ceiling in an interpreter run
    [arm] = ctx.arms
    assert arm.family is get_family("rmsnorm") and arm.revision_source is None and "sources" in arm.extra_config
    assert arm.git_commit == git_state(arm.family.package_dir).commit
    unset = [f.name for f in dataclasses.fields(ctx) if getattr(ctx, f.name) is None]
    assert unset == ["ceiling"]
    seeded = runner.prepare(
        dataclasses.replace(CLI_LIKE, settings=BenchSettings(seed=4242)),
        "interpreter",
        get_family("rmsnorm"),
        store,
        quiet,
    )
    assert seeded.settings.seed == 4242  # a seed asked for is kept
    store.close()


def test_the_context_and_its_arms_cannot_be_changed_after_they_are_built(tmp_path):
    store = RunStore(tmp_path / "s.db")
    ctx = runner.prepare(CLI_LIKE, "interpreter", get_family("rmsnorm"), store, quiet)
    for f in dataclasses.fields(ctx):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(ctx, f.name, getattr(ctx, f.name))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.arms[0].revision_source = ("pkg", "/elsewhere")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.settings.seed = 1
    assert isinstance(ctx.arms, tuple) and isinstance(ctx, RunPlan)
    with pytest.raises(AttributeError):
        ctx.something_new = 1  # a frozen dataclass takes no attribute bolted on later either
    store.close()


@pytest.mark.skipif(HAS_CUDA, reason="interpreter-mode run: the kernels must be imported under the interpreter")
def test_one_profile_builds_one_context_and_every_phase_gets_that_one(tmp_path, monkeypatch):
    seen: dict[str, list[int]] = {}

    def spy(name):
        real = getattr(runner, name)

        def wrapper(*args, **kwargs):
            out = real(*args, **kwargs)
            ctx = out if name == "prepare" else args[0]
            assert isinstance(ctx, RunContext)
            seen.setdefault(name, []).append(id(ctx))
            return out

        monkeypatch.setattr(runner, name, wrapper)

    for name in ("prepare", "begin_runs", "measure_cases", "profile_cases", "finish_runs"):
        spy(name)
    opts = dataclasses.replace(
        CLI_LIKE,
        providers=("torch_eager", "triton_tuned"),
        shapes=((3, 37),),
        store=str(tmp_path / "s.db"),
        settings=BenchSettings(seed=11),
    )
    [run_id] = runner.profile_runs(opts)
    assert len(seen["prepare"]) == 1
    assert {k: len(set(v)) for k, v in seen.items()} == dict.fromkeys(seen, 1) and len(seen) == 5
    assert len({v[0] for v in seen.values()}) == 1  # the very object prepare built
    assert RunStore(tmp_path / "s.db").run(run_id)["status"] == "complete"


@pytest.mark.skipif(not _in_git_checkout(), reason="needs the kprof sources in a git checkout")
def test_a_revision_arm_records_where_its_family_was_loaded_and_leaves_the_family_alone(tmp_path):
    today = get_family("rmsnorm")
    opts = ProfileOptions(family="rmsnorm", revisions=("HEAD",))
    [arm] = arms_for(today, opts, tmp_path, git_state(today.package_dir), quiet)
    package, root = arm.revision_source
    assert Path(root, *package.split(".")).is_dir() and arm.family is not today
    assert "revision_source" not in vars(arm.family) and "revision_source" not in vars(today)
    assert arm.extra_config["revision"] == "HEAD" and arm.git_commit == arm.extra_config["revision_commit"]


@pytest.mark.parametrize("source", [None, ("kprof_rev_0_abc", "/revisions/abc")])
def test_the_external_pass_hands_the_arms_revision_source_to_the_replay_child(tmp_path, monkeypatch, source):
    from kprof import external
    from tests.toolkit.run_contexts import context_for
    from tests.toolkit.test_store import record

    got = {}

    def fake_capture(choice, family, cases, workdir, **kw):
        got.update(kw, choice=choice, family=family, ids=[c.id for c in cases])
        return CaptureResult(pd.DataFrame(), [], "fake 1.0", [], [{"case": c.id, "status": "ok"} for c in cases])

    monkeypatch.setattr(external, "capture", fake_capture)
    st = RunStore(tmp_path / "s.db")
    run_id = st.begin_run(record(profiler="nsys"))
    ctx = context_for(
        st,
        get_family("rmsnorm"),
        mode="gpu",
        profiler=ProfilerChoice("nsys", "test"),
        settings=BenchSettings(seed=5),
        repeats=3,
        revision_source=source,
    )
    case = Case("rmsnorm", "torch_eager", (3, 37), "fp32")
    assert runner._external_pass(ctx, ctx.arms[0], run_id, [CaseResult(case, "ok")]) is None
    assert got["family_source"] == source and got["repeats"] == 3 and got["ids"] == [case.id]
    assert got["choice"] is ctx.profiler and got["timeout_s"] == ctx.options.profiler_timeout_s


def test_the_worker_sink_and_the_store_both_take_every_write_of_the_phases():
    from kprof.fanout_worker import Sink

    wanted = {n for n, v in vars(RunWriter).items() if callable(v) and not n.startswith("_")}
    assert {"add_case", "update_cases", "add_launches", "set_fields", "trace_dir", "run"} <= wanted
    for cls in (Sink, RunStore):
        missing = sorted(n for n in wanted if not callable(getattr(cls, n, None)))
        assert not missing, f"{cls.__name__} lacks {missing}"


def test_the_runner_passes_no_untyped_parameters():
    loose = []
    for name, fn in inspect.getmembers(runner, inspect.isfunction):
        if fn.__module__ != runner.__name__:
            continue
        for p in inspect.signature(fn).parameters.values():
            if p.annotation is inspect.Parameter.empty or "Any" in str(p.annotation):
                loose.append(f"{name}({p.name})")
    assert not loose, loose
    assert inspect.signature(runner.measure_cases).parameters["ctx"].annotation == "RunContext"
    assert Arm.__dataclass_params__.frozen and RunContext.__dataclass_params__.frozen
