"""Driving external profilers without them: choosing, command lines, and a whole capture through a fake nsys.

The fake nsys runs the real replay child (Triton's interpreter on the CPU) exactly as nsys would, and
"exports" the real H100 SQLite from tests/data, so everything between the runner and the parser is
exercised: spec and progress files, process group, exit codes, failures and timeouts.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from kprof import external
from kprof.errors import KprofError
from kprof.external import ProfilerChoice, capture, choose, replay_cases
from kprof.tools import ToolLocation, ToolNotFoundError
from tests.conftest import DEVICE

FAKE_NSYS = """#!{python}
import os, shutil, subprocess, sys, time
args = sys.argv[1:]
if args and args[0] == "--version":
    print("NVIDIA Nsight Systems version 2099.1.0 (fake)")
    sys.exit(0)
if args[0] == "profile":
    if os.environ.get("FAKE_NSYS_HANG"):
        time.sleep(120)
    out = args[args.index("--output") + 1]
    child = args[args.index("--force-overwrite=true") + 1:]
    rc = subprocess.call(child)
    open(out + ".nsys-rep", "wb").write(b"fake report")
    if os.environ.get("FAKE_NSYS_FAIL"):
        print("fake nsys: CUPTI error 39", file=sys.stderr)
        sys.exit(7)
    sys.exit(rc)
if args[0] == "export":
    shutil.copy(os.environ["FAKE_NSYS_SQLITE"], args[args.index("--output") + 1])
    sys.exit(0)
sys.exit(2)
"""


@pytest.fixture
def fake_nsys(tmp_path, data_file, monkeypatch):
    exe = tmp_path / "bin" / "nsys"
    exe.parent.mkdir()
    exe.write_text(FAKE_NSYS.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_NSYS_SQLITE", str(data_file("nsys_rmsnorm.sqlite")))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    return ProfilerChoice("nsys", "test", ToolLocation("nsys", str(exe), "explicit path"))


def cases():
    return replay_cases(
        "rmsnorm",
        [
            ("rmsnorm/triton_tuned/3x37/fp32", "triton_tuned", (3, 37), "fp32", 1),
            ("rmsnorm/torch_eager/3x37/fp32", "torch_eager", (3, 37), "fp32", 1),
        ],
    )


def test_choose_auto_falls_back_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(
        external,
        "find_tool",
        lambda name, path=None: (_ for _ in ()).throw(ToolNotFoundError(f"{name} not found; looked in: PATH")),
    )
    c = choose("auto", "gpu")
    assert c.name == "torch" and "nsys not found" in c.reason and "torch.profiler" in c.reason
    assert choose("auto", "interpreter").name == "none"
    with pytest.raises(ToolNotFoundError):
        choose("ncu", "gpu")  # asked for by name: no silent fallback
    with pytest.raises(KprofError, match="--profiler must be one of"):
        choose("vtune", "gpu")


def test_choose_auto_prefers_nsys_and_rocprof_on_amd(monkeypatch):
    monkeypatch.setattr(external, "find_tool", lambda name, path=None: ToolLocation(name, f"/x/{name}", "PATH"))
    c = choose("auto", "gpu")
    assert c.name == "nsys" and "/x/nsys" in c.reason
    monkeypatch.setattr(external, "_is_rocm", lambda: True)
    c = choose("auto", "gpu")
    assert c.name == "rocprof" and c.tool.name == "rocprofv3"


def test_capture_through_fake_nsys(fake_nsys, tmp_path):
    res = capture(fake_nsys, "rmsnorm", cases(), tmp_path / "w", repeats=2, timeout_s=300)
    assert res.error is None, res.error
    assert [r.argv[1] for r in res.runs] == ["profile", "export"]
    profile_argv = res.runs[0].argv
    assert profile_argv[-3:-1] == ("-m", "kprof.replay")  # nsys wraps the replay child, as an argv list
    spec = json.loads(Path(profile_argv[-1]).read_text())
    assert spec["marker"] == "nvtx" and spec["repeats"] == 2 and len(spec["cases"]) == 2
    assert res.cases_done == [c.id for c in cases()]  # the child ran every case (on the interpreter)
    assert res.version.endswith("(fake)")
    assert not res.launches.empty and (res.launches["source"] == "nsys").all()


def test_capture_with_a_relative_work_folder(fake_nsys, tmp_path, monkeypatch):
    """The default store is ./kprof-runs, so the trace folder is often a relative path; the tool runs
    inside it, so the paths handed to it must still point at the right files (a real nsys run on the
    H100 failed here: it could not find the replay spec and wrote its report nowhere)."""
    monkeypatch.chdir(tmp_path)
    res = capture(
        fake_nsys, "rmsnorm", cases()[:1], Path("kprof-runs") / "traces" / "r" / "nsys", repeats=1, timeout_s=300
    )
    assert res.error is None, res.error
    assert res.cases_done == [cases()[0].id]
    assert (tmp_path / "kprof-runs" / "traces" / "r" / "nsys" / "nsys.nsys-rep").exists()


def test_capture_failure_is_described_and_cases_kept(fake_nsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    res = capture(fake_nsys, "rmsnorm", cases(), tmp_path / "w", repeats=1, timeout_s=300)
    assert res.error and "exited with status 7" in res.error and "CUPTI error 39" in res.error
    assert res.runs[0].returncode == 7
    assert len(res.cases_done) == 2 and not res.launches.empty  # what the profiler wrote is still parsed


def test_capture_timeout(fake_nsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_HANG", "1")
    res = capture(fake_nsys, "rmsnorm", cases(), tmp_path / "w", repeats=1, timeout_s=2)
    assert res.runs[0].timed_out and "timed out" in res.error
    assert res.launches.empty and res.cases_done == []


def test_replay_case_errors_are_recorded_not_fatal(tmp_path, monkeypatch):
    from kprof.replay import ReplaySpec, main, read_progress, write_spec

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    bad = replay_cases("rmsnorm", [("rmsnorm/nope/3x37/fp32", "nope", (3, 37), "fp32", 1)])
    spec = ReplaySpec("rmsnorm", bad + cases()[:1], repeats=1, marker="none", progress_file=str(tmp_path / "p"))
    assert main([str(write_spec(spec, tmp_path / "s.json"))]) == 0
    got = read_progress(tmp_path / "p")
    assert [g["status"] for g in got] == ["error", "ok"] and "nope" in got[0]["error"]


def test_runner_stores_every_invocation_and_keeps_cases_on_failure(fake_nsys, tmp_path, monkeypatch):
    """The runner's external pass: launches and metrics land in the store; a failing tool is recorded."""
    from kprof import runner
    from kprof.harness import BenchSettings, run_case
    from kprof.kernels import discover
    from kprof.registry import Case
    from kprof.store import RunStore
    from tests.toolkit.run_contexts import context_for
    from tests.toolkit.test_store import record

    fam = discover()["rmsnorm"]
    results = [
        run_case(
            fam,
            fam.providers[p],
            Case("rmsnorm", p, (3, 37), "fp32"),
            device=DEVICE,
            settings=BenchSettings(seed=1),
            timing=False,
        )
        for p in ("triton_tuned", "torch_eager")
    ]
    assert all(r.status == "ok" for r in results)

    st = RunStore(tmp_path / "s.db")
    opts = runner.ProfileOptions(family="rmsnorm", profiler="nsys", profiler_timeout_s=300)
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    run_id = st.begin_run(record())
    ctx = context_for(st, fam, mode="gpu", profiler=fake_nsys, options=opts, settings=BenchSettings(seed=1))
    failure = runner._external_pass(ctx, ctx.arms[0], run_id, results)
    assert failure and "2 of 2 cases replayed" in failure and "exited with status 7" in failure
    assert "launches parsed and kept" in failure
    caps = st.captures(run_id)
    assert caps["returncode"].tolist() == [7, 0]  # nsys profile (failed) and nsys export
    assert "CUPTI error 39" in caps["stderr_tail"].iloc[0] and caps["tool_version"].iloc[0].endswith("(fake)")
    assert "kprof.replay" in caps["command"].iloc[0]
    assert len(st.launches(run_id)) > 0  # the trace written before the failure is kept


def test_auto_falls_back_to_torch_when_the_found_tool_fails(fake_nsys, tmp_path, monkeypatch):
    from kprof import runner
    from kprof.harness import BenchSettings, run_case
    from kprof.kernels import discover
    from kprof.registry import Case
    from kprof.store import RunStore
    from tests.toolkit.test_store import record

    fam = discover()["rmsnorm"]
    results = [
        run_case(
            fam,
            fam.providers["triton_tuned"],
            Case("rmsnorm", "triton_tuned", (3, 37), "fp32"),
            device=DEVICE,
            settings=BenchSettings(seed=1),
            timing=False,
        )
    ]
    calls = []
    monkeypatch.setattr(runner, "_torch_pass", lambda *a: calls.append(a))
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    st = RunStore(tmp_path / "s.db")
    run_id = st.begin_run(record(profiler="nsys"))
    from tests.toolkit.run_contexts import context_for

    def ctx(asked: str):
        return context_for(
            st,
            fam,
            mode="gpu",
            profiler=fake_nsys,
            settings=BenchSettings(seed=1),
            options=runner.ProfileOptions(family="rmsnorm", profiler=asked),
        )

    auto = ctx("auto")
    runner._profiler_pass(auto, auto.arms[0], run_id, results)
    run = st.run(run_id)
    assert len(calls) == 1 and run["profiler"] == "torch"
    assert "auto fell back after nsys failed" in run["profiler_version"] and "status 7" in run["profiler_version"]
    assert st.launches(run_id).empty  # nothing of the failed tool is mixed into torch.profiler's table
    assert len(st.captures(run_id)) == 2  # but its invocations stay on record
    with pytest.raises(runner.ProfilerFailed, match="status 7"):  # named explicitly: no silent fallback
        named = ctx("nsys")
        runner._profiler_pass(named, named.arms[0], run_id, results)
