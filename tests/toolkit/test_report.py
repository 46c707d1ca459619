"""The markdown report, on the real metrics of an H100 run (benchmarks/results) and on CPU runs."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from kprof.report import INTERPRETER_NOTICE, markdown_table, render, with_speedup

H100 = Path(__file__).parents[2] / "benchmarks" / "results" / "rmsnorm-core-flow" / "profile-run9-final" / "metrics.csv"
RUN = {
    "id": "r1",
    "family": "rmsnorm",
    "mode": "gpu",
    "status": "complete",
    "profiler": "torch",
    "device": {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "cc_major": 9, "cc_minor": 0, "sm_count": 132},
    "versions": {"torch": "2.11.0", "triton": "3.6.0"},
    "ceiling_gbps": 3001.0,
    "git_commit": "abc",
}


@pytest.fixture
def metrics() -> pd.DataFrame:
    df = pd.read_csv(H100)
    df["ok"] = df["ok"].astype(bool)
    return df


def section(md: str, title: str) -> list[str]:
    lines = md.splitlines()
    i = lines.index(title)
    out = []
    for line in lines[i + 2 :]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out[2:]  # drop header and separator


def test_gpu_report_marks_the_fastest_and_speedups(metrics):
    md = render(RUN, metrics)
    rows = section(md, "## bf16 · 16384x4096")
    g = metrics[(metrics["shape"] == "16384x4096") & (metrics["dtype"] == "bf16")]
    best = g.loc[g["gpu_time_us"].idxmin()]
    assert rows[0].startswith(f"| **{best['provider']}** |")
    assert f"{best['gpu_time_us']:.1f}" in rows[0]
    eager = g[g["provider"] == "torch_eager"]["gpu_time_us"].iloc[0]
    assert f"{eager / best['gpu_time_us']:.2f}×" in rows[0]
    assert "3001 GB/s" in md and INTERPRETER_NOTICE not in md


def test_failed_case_is_loud_and_never_shows_a_time(metrics):
    m = metrics.copy()
    i = m.index[(m["case"] == "rmsnorm/triton_tuned/4096x4096/bf16")][0]
    m.loc[i, ["status", "ok", "note"]] = ["fail", False, "relative error 3e-01 above tolerance 8e-03"]
    md = render(RUN, m)
    row = next(r for r in section(md, "## bf16 · 4096x4096") if "triton_tuned" in r)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "**FAIL**" and cells[2] == "—" and cells[4] == "—"
    assert "above tolerance" in row


def test_skipped_cases_listed_with_reason(metrics):
    md = render(RUN, metrics)
    assert "## Skipped" in md and "one-block limit" in md


def test_interpreter_report_shows_no_timings():
    m = pd.DataFrame(
        [
            {
                "case": "rmsnorm/triton_tuned/7x333/fp32",
                "family": "rmsnorm",
                "provider": "triton_tuned",
                "kind": "triton",
                "shape": "7x333",
                "dtype": "fp32",
                "status": "ok",
                "ok": True,
                "note": None,
                "max_rel_err": 6e-8,
                "max_abs_err": 1e-6,
                "gpu_time_us": math.nan,
            }
        ]
    )
    md = render({**RUN, "mode": "interpreter", "ceiling_gbps": None, "device": {"kind": "cpu", "name": "CPU"}}, m)
    assert INTERPRETER_NOTICE in md
    assert "time µs" not in md and "GB/s" not in md
    assert "6.0e-08" in md


def test_with_speedup_and_markdown_table():
    df = pd.DataFrame(
        {
            "provider": ["torch_eager", "x"],
            "shape": ["1x1"] * 2,
            "dtype": ["fp32"] * 2,
            "gpu_time_us": [10.0, 4.0],
            "ok": [True, True],
        }
    )
    assert with_speedup(df, "torch_eager")["speedup"].tolist() == [1.0, 2.5]
    t = markdown_table(["a", "b"], [[1, 2]])
    assert t.splitlines() == ["| a | b |", "| :--- | ---: |", "| 1 | 2 |"]


def test_the_report_names_the_variables_set_that_change_what_runs():
    run = {**RUN, "versions": {**RUN["versions"], "env": {"TRITON_DEFAULT_FP_FUSION": "0"}}}
    md = render(run, pd.DataFrame(columns=["status"]))
    software = next(line for line in md.splitlines() if line.startswith("- **software**"))
    assert software.endswith("; environment: `TRITON_DEFAULT_FP_FUSION=0`")
    assert "environment" not in next(ln for ln in render(RUN, pd.DataFrame(columns=["status"])).splitlines()
                                     if ln.startswith("- **software**"))  # fmt: skip


def test_report_names_the_revision():
    import pandas as pd

    from kprof.report import render

    run = {
        "id": "r1",
        "family": "rmsnorm",
        "mode": "gpu",
        "status": "complete",
        "profiler": "none",
        "config": {
            "revision": "HEAD~1",
            "revision_commit": "abcdef1234567890",
            "revision_subject": "faster rows",
            "harness_commit": "1234567890ab",
            "harness_dirty": True,
            "interleaved_revisions": ["HEAD~1", "HEAD"],
        },
    }
    md = render(run, pd.DataFrame(columns=["status"]))
    assert (
        "`HEAD~1` = abcdef1234 (faster rows)" in md and "harness at 1234567890 (dirty)" in md
    )  # one commit length (10)
    assert "`HEAD~1`, `HEAD`" in md


@pytest.mark.parametrize(
    "spread, mode, cell",
    [(0.177, "cold", "2% (18%)"), (0.03, "cold", "2%"), (float("nan"), "cold", "2%"), (0.177, "warm", "2%")],
)
def test_the_spread_cell_adds_the_placements_spread_where_it_is_large_and_cold_ranks(spread, mode, cell):
    from types import SimpleNamespace

    from kprof.report import _spread_cell

    assert _spread_cell(SimpleNamespace(noise=0.02, cold_placement_spread=spread), mode) == cell


def test_the_report_shows_waves_where_the_launch_table_gave_them():
    """A run whose metrics carry ``waves`` gets the column (each case's figure in its row) and the footnote; one
    without (the CPU interpreter's, runs from before) gets neither."""
    import numpy as np

    m = pd.read_csv(H100)
    m["ok"] = m["ok"].astype(bool)
    assert "waves" not in render(RUN, m)
    m["waves"] = np.random.default_rng().uniform(0.1, 3.0, size=len(m))
    md = render(RUN, m)
    title = "## bf16 · 16384x4096"
    header = [c.strip() for c in md.splitlines()[md.splitlines().index(title) + 2].split("|")]
    at = header.index("waves")
    g = m[(m["shape"] == "16384x4096") & (m["dtype"] == "bf16") & (m["status"] == "ok")]
    rows = section(md, title)
    for r in g.itertuples():
        line = next(x for x in rows if x.split("|")[1].strip().strip("*").split(" (")[0] == r.provider)
        assert line.split("|")[at].strip() == f"{r.waves:.2f}", line
    assert "*waves*" in md
