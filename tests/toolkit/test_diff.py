"""kprof diff: the decision rule on synthetic samples with known answers, kernel changes, outputs, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kprof import launch_table
from kprof.diff import DiffRule, compare_samples, decide, diff_runs, kernel_changes, to_json, to_markdown
from kprof.store import RunStore
from tests.toolkit.test_store import record

RNG = np.random.default_rng(1234)
ROOT = Path(__file__).parents[2]


def noisy(median: float, cv: float, n: int = 200) -> np.ndarray:
    return median * np.exp(RNG.normal(0, cv, n))


def test_identical_distributions_are_same():
    base = noisy(10.0, 0.02)
    res = compare_samples(base, noisy(10.0, 0.02))
    assert res["verdict"] == "SAME", res
    assert res["ci_lo"] <= 1 <= res["ci_hi"]


def test_ten_percent_shift_with_low_noise_is_slower_and_faster():
    a = noisy(10.0, 0.02)
    assert compare_samples(a, noisy(11.0, 0.02))["verdict"] == "SLOWER"
    assert compare_samples(a, noisy(9.0, 0.02))["verdict"] == "FASTER"


def test_heavy_noise_is_uncertain():
    res = compare_samples(noisy(10.0, 0.6, 40), noisy(10.5, 0.6, 40))
    assert res["verdict"] == "UNCERTAIN", res
    assert res["ci_hi"] - res["ci_lo"] > 0.1


def test_small_but_real_change_is_same_and_big_but_unsure_is_uncertain():
    a = noisy(10.0, 0.005, 400)
    small = compare_samples(a, noisy(10.1, 0.005, 400))  # 1%: significant, below the 3% threshold
    assert small["p_value"] < 0.01 and small["verdict"] == "SAME"
    assert decide(1.06, 0.99, 1.15, 0.2, DiffRule())[0] == "UNCERTAIN"


def test_too_few_samples_and_threshold_option():
    assert compare_samples([1.0, 1.1], [2.0, 2.1])["verdict"] == "UNCERTAIN"
    a, b = noisy(10.0, 0.01), noisy(10.5, 0.01)
    assert compare_samples(a, b, DiffRule(threshold=0.03))["verdict"] == "SLOWER"
    assert compare_samples(a, b, DiffRule(threshold=0.10))["verdict"] != "SLOWER"


def _launch_rows(case: str, regs: int, kernels: list[str], calls: int = 5) -> pd.DataFrame:
    rows = []
    for i in range(calls):
        for k in kernels:
            rows.append({"kernel": k, "start_ns": 1000 * i, "end_ns": 1000 * i + 500, "duration_ns": 500,
                         "grid_x": 64, "grid_y": 1, "grid_z": 1, "block_x": 256, "block_y": 1, "block_z": 1,
                         "registers_per_thread": regs, "shared_mem_bytes": 0, "case": case, "source": "torch"})
    return launch_table.validate(pd.DataFrame(rows))


def _store_pair(tmp_path, shift: float = 1.0, regs_b: int = 62):
    st = RunStore(tmp_path / "s.db")
    ids = []
    for regs, scale, extra in ((62, 1.0, []), (regs_b, shift, ["extra_kernel"])):
        run = st.begin_run(record(mode="gpu", profiler="torch", config={"profile_repeats": 5,
                                                                        "settings": {"rep_ms": 100}}))
        for i, (prov, med) in enumerate((("triton_tuned", 20.0), ("torch_F", 30.0))):
            case = f"rmsnorm/{prov}/64x4096/bf16"
            f = scale if prov == "triton_tuned" else 1.0
            st.add_case(run, i, {"case": case, "family": "rmsnorm", "provider": prov, "shape": "64x4096",
                                 "dtype": "bf16", "status": "ok", "ok": True, "occupancy_theoretical_pct":
                                 100.0 if regs == 62 else 50.0},
                        {"gpu": list(noisy(med * f, 0.01) / 1e3)})
            kernels = ["main_kernel"] + (extra if prov == "triton_tuned" else [])
            st.add_launches(run, _launch_rows(case, regs if prov == "triton_tuned" else 40, kernels))
        st.finish_run(run, "complete")
        ids.append(run)
    return st, ids


def test_runs_diff_explains_a_regression(tmp_path):
    st, (a, b) = _store_pair(tmp_path, shift=1.2, regs_b=96)
    res = diff_runs(st, a, b)
    t = res.table().set_index("provider")
    # separate runs, no calibration: the default floor, so an unchanged case is not called SAME at ±3%
    assert t.loc["triton_tuned", "verdict"] == "SLOWER" and t.loc["torch_F", "verdict"] == "UNCERTAIN"
    assert "inside the run-to-run floor" in t.loc["torch_F", "why"]
    assert t["variance"].str.startswith("default floor").all() and res.comparison == "separate"
    changes = t.loc["triton_tuned", "changes"]
    assert "registers 62->96" in changes and "occupancy 100%->50%" in changes and "+extra_kernel" in changes
    assert "kernels/call 1->2" in changes
    assert res.table().iloc[0]["provider"] == "triton_tuned"  # worst regression first
    md = to_markdown(res)
    assert "**SLOWER**" in md and "registers 62->96" in md
    js = to_json(res)
    assert js["counts"]["SLOWER"] == 1 and json.dumps(js)


def test_environment_warnings(tmp_path):
    st = RunStore(tmp_path / "s.db")
    a = st.begin_run(record(mode="gpu", device={"name": "H100"}, versions={"torch": "2.11", "triton": "3.6"}))
    b = st.begin_run(record(mode="gpu", device={"name": "H200"}, versions={"torch": "2.11", "triton": "3.5"},
                            git_dirty=True))
    from kprof.diff import environment_warnings

    w = " | ".join(environment_warnings(st.run(a), st.run(b)))
    assert "device name differs: H100 vs H200" in w and "versions triton differs" in w and "dirty" in w


def test_kernel_changes_without_names_across_profilers():
    a = _launch_rows("c", 62, ["void k<(int)1>"])
    b = _launch_rows("c", 62, ["void k<1>"])
    m = pd.DataFrame({"case": ["c"], "occupancy_theoretical_pct": [100.0]})
    assert kernel_changes(a, b, m, m, 5, 5, compare_names=False)["changes"].iloc[0] == ""
    assert "main kernel" in kernel_changes(a, b, m, m, 5, 5)["changes"].iloc[0]


def kprof_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "kprof.cli", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


def test_cli_exit_codes_and_outputs(tmp_path):
    st, (a, b) = _store_pair(tmp_path, shift=1.2, regs_b=96)
    store = str(st.path)
    res = kprof_cli("diff", a, b, "--store", store, "--markdown", str(tmp_path / "d.md"), "--json", str(tmp_path / "d.json"))
    assert res.returncode == 0, res.stderr  # a regression is reported, not an error, unless asked
    assert "SLOWER" in res.stdout and (tmp_path / "d.md").read_text().startswith("# kprof diff")
    assert json.loads((tmp_path / "d.json").read_text())["counts"]["SLOWER"] == 1
    assert kprof_cli("diff", a, b, "--store", store, "--fail-on-regression").returncode == 1
    assert kprof_cli("diff", b, b, "--store", store, "--fail-on-regression").returncode == 0
    bad = kprof_cli("diff", a, "nosuchrun", "--store", store)
    assert bad.returncode == 2 and "no run 'nosuchrun'" in bad.stderr and "Traceback" not in bad.stderr
    other = RunStore(tmp_path / "s.db")
    empty = other.begin_run(record(family="silu_mul"))
    none = kprof_cli("diff", a, empty, "--store", store)
    assert none.returncode == 2 and "no case in common" in none.stderr


def test_cli_diff_of_two_trace_files(tmp_path, data_file):
    a = ROOT / "tests/data/kineto_rmsnorm_h100_small.json.gz"
    res = kprof_cli("diff", str(a), str(a), "--markdown", str(tmp_path / "t.md"))
    assert res.returncode == 0, res.stderr
    assert "0 slower" in res.stdout and "0 faster" in res.stdout  # a trace against itself
    assert "| case | kernel |" in (tmp_path / "t.md").read_text()
