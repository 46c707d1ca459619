"""The command line end to end, as a user runs it (in a subprocess; on this machine without a GPU
the profile is a CPU interpreter run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from kprof.store import RunStore

ROOT = Path(__file__).parents[2]
TRACE = ROOT / "tests" / "data" / "kineto_rmsnorm_h100_small.json.gz"


def kprof(*args: str, store: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)  # the CLI must decide by itself
    cmd = [sys.executable, "-m", "kprof.cli", *args] + (["--store", str(store)] if store else [])
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    store = tmp_path_factory.mktemp("store") / "kprof.db"
    res = kprof("profile", "rmsnorm", "--shape", "7x333,2x3x257", "--dtype", "fp32,bf16", "--seed", "5", store=store)
    return store, res


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU interpreter run")
def test_profile_without_gpu_is_an_honest_interpreter_run(profiled):
    store, res = profiled
    assert res.returncode == 0, res.stderr[-2000:]
    assert "CPU interpreter run - correctness only" in res.stdout
    assert "time µs" not in res.stdout
    for version in ("triton_one_row", "triton_looped", "triton_tuned"):
        assert f"| {version} | ok |" in res.stdout
    assert "torch_compile`: GPU only" in res.stdout or "torch_compile" not in res.stdout.split("## Skipped")[0]


def test_runs_show_and_exports(profiled, tmp_path):
    store, res = profiled
    assert res.returncode == 0, res.stderr[-2000:]
    runs = kprof("runs", store=store)
    assert runs.returncode == 0 and "rmsnorm" in runs.stdout and "complete" in runs.stdout
    csv = tmp_path / "m.csv"
    shown = kprof("show", "latest", "--csv", str(csv), store=store)
    assert shown.returncode == 0, shown.stderr
    m = pd.read_csv(csv)
    assert set(m["shape"]) == {"7x333", "2x3x257"} and set(m["dtype"]) == {"fp32", "bf16"}
    triton = m[m["provider"].str.startswith("triton_")]
    assert len(triton) == 3 * 4 and triton["ok"].all() and (triton["max_rel_err"] < 1e-2).all()
    report = kprof("show", "latest", store=store)
    assert "# kprof · rmsnorm" in report.stdout


def test_parse_trace_to_csv(tmp_path):
    out = tmp_path / "l.csv"
    res = kprof("parse", str(TRACE), "--csv", str(out))
    assert res.returncode == 0, res.stderr
    df = pd.read_csv(out)
    assert len(df) > 0 and df["api_name"].notna().all()
    summary = kprof("parse", str(TRACE))
    assert "_rmsnorm_rows_kernel" in summary.stdout


def test_parse_every_profiler_and_write_perfetto(tmp_path, data_file):
    for name, source in (
        ("ncu_rmsnorm_raw.csv", "ncu"),
        ("nsys_rmsnorm.sqlite", "nsys"),
        ("proton_rmsnorm_tree.hatchet", "proton"),
    ):
        res = kprof("parse", str(data_file(name)), "--perfetto", str(tmp_path / f"{source}.json"))
        assert res.returncode == 0, res.stderr
        assert f"from {source}" in res.stdout and "_rmsnorm_rows_kernel" in res.stdout
        assert (tmp_path / f"{source}.json").exists()
    amd = ROOT / "tests/data/rocprof/rocprof_legacy/HPCTrainingExamples_finite-difference_results.TRUNCATED.csv"
    out = tmp_path / "amd.csv"
    res = kprof("parse", str(amd), "--arch", "gfx90a", "--csv", str(out))
    assert res.returncode == 0, res.stderr
    assert pd.read_csv(out)["occupancy_theoretical_pct"].notna().all()


def test_export_needs_a_launch_table(profiled, tmp_path):
    store, _ = profiled
    res = kprof("export", "latest", "--perfetto", str(tmp_path / "t.json"), store=store)
    interpreter = RunStore(store).run("latest")["mode"] == "interpreter"
    if interpreter:  # an interpreter run profiles nothing
        assert res.returncode == 2 and "has no launch table" in res.stderr
    else:  # on a GPU the fixture's run has the launches of whichever profiler `auto` found
        assert res.returncode == 0 and (tmp_path / "t.json").exists(), res.stderr
    res = kprof("show", "latest", "--captures", store=store)
    assert res.returncode == 0
    assert (
        ("ran no external profiler" in res.stdout) if interpreter else ("exit" in res.stdout or "ran no" in res.stdout)
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (("profile", "nosuchfamily"), "unknown kernel family 'nosuchfamily'"),
        (("profile", "rmsnorm", "--shape", "40x"), "bad shape"),
        (("profile", "rmsnorm", "--dtype", "int8"), "unknown dtype"),
        (("profile", "rmsnorm", "--provider", "nope"), "has no provider 'nope'"),
        (("show", "doesnotexist"), "no runs yet: no run store at"),  # a read creates no store
        (("show", "latest"), "no runs yet"),
        (("parse", "pyproject.toml"), "not a trace kprof can read"),
        (("profile", "rmsnorm", "--profiler", "vtune"), "--profiler must be one of"),
        (("sweep", "rmsnorm", "--version", "torch_eager", "--param", "BLOCK_N=1024"), "takes no meta-parameters"),
        (
            ("sweep", "rmsnorm", "--version", "triton_one_row", "--param", "BLOCK_SIZE=1024"),
            "no meta-parameter BLOCK_SIZE",
        ),
        (("sweep", "rmsnorm", "--version", "triton_one_row", "--param", "BLOCK_N=lots"), "is not an integer"),
        (("profile", "rmsnorm", "--provider", "triton_one_row[BLOCK_N=x]"), "write NAME=INTEGER"),
    ],
)
def test_user_mistakes_exit_2_with_a_message_and_no_traceback(args, message, tmp_path):
    res = kprof(*args, store=tmp_path / "s.db") if args[0] != "parse" else kprof(*args)
    assert res.returncode == 2
    assert message in " ".join(res.stderr.split())
    assert "Traceback" not in res.stderr


def test_corrupt_store_is_a_clear_error(tmp_path):
    bad = tmp_path / "kprof.db"
    bad.write_bytes(b"garbage" * 200)
    res = kprof("runs", store=bad)
    assert res.returncode == 2 and "not a readable kprof store" in res.stderr and "Traceback" not in res.stderr


def test_families_lists_providers():
    res = kprof("families")
    assert res.returncode == 0 and "triton_tuned" in res.stdout and "torch_compile" in res.stdout


@pytest.mark.parametrize("args", [["--timing-mode", "fastest"], ["--timing-mode", "graph", "--no-graph"]])
def test_timing_mode_that_cannot_rank_is_refused(tmp_path, args):
    res = kprof("profile", "rmsnorm", "-s", "3x33", "-d", "fp32", *args, store=tmp_path / "s.db")
    assert res.returncode == 2 and "--timing-mode" in res.stderr and "cold, warm, graph, host" in res.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs the CPU interpreter run")
def test_grid_refuses_runs_without_gpu_times(profiled):
    """An interpreter run has no times to race: kprof grid says so instead of printing an empty table."""
    store, res = profiled
    assert res.returncode == 0, res.stderr[-2000:]
    run_id = RunStore(store).runs()["id"].iloc[0]
    out = kprof("grid", run_id, store=store)
    assert out.returncode != 0 and "hold no GPU times" in out.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs the CPU interpreter run")
def test_grid_refuses_an_ncu_run_that_is_not_one(profiled):
    store, res = profiled
    assert res.returncode == 0, res.stderr[-2000:]
    run_id = RunStore(store).runs()["id"].iloc[0]
    out = kprof("grid", run_id, "--ncu", run_id, store=store)
    assert out.returncode == 2 and "not profiled with ncu" in out.stderr and "Traceback" not in out.stderr
