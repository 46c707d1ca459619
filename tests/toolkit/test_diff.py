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
            rows.append(
                {
                    "kernel": k,
                    "start_ns": 1000 * i,
                    "end_ns": 1000 * i + 500,
                    "duration_ns": 500,
                    "grid_x": 64,
                    "grid_y": 1,
                    "grid_z": 1,
                    "block_x": 256,
                    "block_y": 1,
                    "block_z": 1,
                    "registers_per_thread": regs,
                    "shared_mem_bytes": 0,
                    "case": case,
                    "source": "torch",
                }
            )
    return launch_table.validate(pd.DataFrame(rows))


def _store_pair(tmp_path, shift: float = 1.0, regs_b: int = 62):
    st = RunStore(tmp_path / "s.db")
    ids = []
    for regs, scale, extra in ((62, 1.0, []), (regs_b, shift, ["extra_kernel"])):
        run = st.begin_run(
            record(mode="gpu", profiler="torch", config={"profile_repeats": 5, "settings": {"rep_ms": 100}})
        )
        for i, (prov, med) in enumerate((("triton_tuned", 20.0), ("torch_F", 30.0))):
            case = f"rmsnorm/{prov}/64x4096/bf16"
            f = scale if prov == "triton_tuned" else 1.0
            st.add_case(
                run,
                i,
                {
                    "case": case,
                    "family": "rmsnorm",
                    "provider": prov,
                    "shape": "64x4096",
                    "dtype": "bf16",
                    "status": "ok",
                    "ok": True,
                    "occupancy_theoretical_pct": 100.0 if regs == 62 else 50.0,
                    "waves": 1.0 if regs == 62 else 2.0,
                },
                {"gpu": list(noisy(med * f, 0.01) / 1e3)},
            )
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
    assert "kernels/call 1->2" in changes and "waves 1.00->2.00" in changes
    assert res.table().iloc[0]["provider"] == "triton_tuned"  # worst regression first
    md = to_markdown(res)
    assert "**SLOWER**" in md and "registers 62->96" in md
    js = to_json(res)
    assert js["counts"]["SLOWER"] == 1 and json.dumps(js)


def test_environment_warnings(tmp_path):
    st = RunStore(tmp_path / "s.db")
    a = st.begin_run(record(mode="gpu", device={"name": "H100"}, versions={"torch": "2.11", "triton": "3.6"}))
    b = st.begin_run(
        record(mode="gpu", device={"name": "H200"}, versions={"torch": "2.11", "triton": "3.5"}, git_dirty=True)
    )
    from kprof.diff import environment_warnings

    w = " | ".join(environment_warnings(st.run(a), st.run(b)))
    assert "device name differs: H100 vs H200" in w and "versions triton differs" in w and "dirty" in w


@pytest.mark.parametrize(
    "settings_a, settings_b, expect",
    [
        ({"rep_ms": 100}, {"rep_ms": 100, "placements": 4}, "timing setting placements differs: 1 vs 4"),
        ({"rep_ms": 100, "placements": 4}, {"rep_ms": 100, "placements": 4}, None),
        ({"rep_ms": 100}, {"rep_ms": 100}, None),
    ],
)
def test_runs_timed_at_different_numbers_of_placements_are_flagged(settings_a, settings_b, expect):
    """A run made before placements existed timed each case where its inputs lay: one placement."""
    from kprof.diff import environment_warnings

    base = {"mode": "gpu", "status": "complete", "profiler": "none"}
    w = environment_warnings(
        {**base, "id": "a", "config": {"settings": settings_a}}, {**base, "id": "b", "config": {"settings": settings_b}}
    )
    placed = [x for x in w if "placements" in x]
    assert placed == ([expect] if expect else [])


def test_kernel_changes_without_names_across_profilers():
    a = _launch_rows("c", 62, ["void k<(int)1>"])
    b = _launch_rows("c", 62, ["void k<1>"])
    m = pd.DataFrame({"case": ["c"], "occupancy_theoretical_pct": [100.0]})
    assert kernel_changes(a, b, m, m, 5, 5, compare_names=False)["changes"].iloc[0] == ""
    assert "main kernel" in kernel_changes(a, b, m, m, 5, 5)["changes"].iloc[0]


def kprof_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kprof.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


def test_cli_exit_codes_and_outputs(tmp_path):
    st, (a, b) = _store_pair(tmp_path, shift=1.2, regs_b=96)
    store = str(st.path)
    res = kprof_cli(
        "diff", a, b, "--store", store, "--markdown", str(tmp_path / "d.md"), "--json", str(tmp_path / "d.json")
    )
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
    assert "0 slower, 0 uncertain" in res.stdout and "0 faster" in res.stdout  # a trace against itself
    assert "| case | kernel | launch |" in (tmp_path / "t.md").read_text()


# ------------------------------------------------------------------------- separate runs vs interleaved
RECORDED = ROOT / "benchmarks/results/rmsnorm-two-pass/profile_store.db.gz"
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="module")
def recorded() -> dict[str, np.ndarray]:
    """Per-call GPU samples (ms) of a real H100 rmsnorm run: bf16, four providers, every default shape."""
    import gzip
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "rec.db"
        db.write_bytes(gzip.decompress(RECORDED.read_bytes()))
        con = sqlite3.connect(db)
        rows = con.execute("SELECT case_id, data FROM samples WHERE kind = 'gpu'").fetchall()
        con.close()
    keep = ("triton_tuned", "torch_F", "liger", "torch_eager")
    out = {c: np.asarray(json.loads(d)) for c, d in rows if c.endswith("/bf16") and c.split("/")[1] in keep}
    assert len(out) >= 24
    return out


def _run_pair(
    tmp_path, recorded, seed: int, sigma_run: float, shift: dict[str, float] | None = None, interleaved: bool = False
) -> tuple[RunStore, str, str]:
    """Two runs from the recorded sample sets: each run resamples every case's samples and scales them by
    its own between-run error exp(e), e ~ N(0, sigma_run) (half of the variance shared by all cases of a
    run, like a clock offset); ``shift`` multiplies B's samples of the named providers."""
    rng = np.random.default_rng(seed)
    st = RunStore(tmp_path / f"pair{seed}.db")
    cfg = {"interleaved_revisions": ["A", "B"]} if interleaved else {}
    # interleaved arms are begun together and finished together, as kprof.runner does; separate runs one after another
    arms = [st.begin_run(record(mode="gpu", device={"name": H100}, config=cfg)) for _ in range(2 * interleaved)]
    ids = []
    for arm in (0, 1):
        run = arms[arm] if interleaved else st.begin_run(record(mode="gpu", device={"name": H100}, config=cfg))
        common = rng.normal(0, sigma_run / np.sqrt(2))
        for i, (case, x) in enumerate(sorted(recorded.items())):
            fam, prov, shape, dt = case.split("/")
            e = common + rng.normal(0, sigma_run / np.sqrt(2))
            f = np.exp(e) * ((shift or {}).get(prov, 1.0) if arm else 1.0)
            st.add_case(
                run,
                i,
                {
                    "case": case,
                    "family": fam,
                    "provider": prov,
                    "shape": shape,
                    "dtype": dt,
                    "status": "ok",
                    "ok": True,
                },
                {"gpu": list(rng.choice(x, x.size) * f)},
            )
        if not interleaved:
            st.finish_run(run, "complete")
        ids.append(run)
    for run in arms:
        st.finish_run(run, "complete")
    return st, ids[0], ids[1]


def _point_sigma() -> float:
    """The documented point estimate behind the default floor (pairwise RMS 2.9% -> 2.0% per run)."""
    return 0.029 / np.sqrt(2)


def test_separate_run_aa_pair_is_never_called(tmp_path, recorded):
    from kprof.variance import DEFAULT_SIGMA_RUN

    assert DEFAULT_SIGMA_RUN > _point_sigma()  # the default is the upper confidence bound, not the estimate
    st, a, b = _run_pair(tmp_path, recorded, seed=int(RNG.integers(1 << 30)), sigma_run=_point_sigma())
    res = diff_runs(st, a, b)
    assert res.comparison == "separate"
    assert res.counts["SLOWER"] == 0 and res.counts["FASTER"] == 0, res.table()[["case", "ratio", "why"]]
    assert res.table()["variance"].str.contains(r"default floor \d+\.\d% \(uncalibrated").all()
    unsure = res.table()[res.table()["verdict"] == "UNCERTAIN"]
    inside = unsure["why"].str.contains("inside the run-to-run floor")
    assert inside.mean() > 0.5  # most A/A changes are explained by the floor, in those words


def test_separate_runs_catch_a_ten_percent_shift_beyond_the_floor(tmp_path, recorded):
    from kprof.variance import default_floor

    floor = default_floor().half_width()
    st, a, b = _run_pair(
        tmp_path,
        recorded,
        seed=int(RNG.integers(1 << 30)),
        sigma_run=_point_sigma(),
        shift={"triton_tuned": (1 + floor) * 1.10},
    )
    t = diff_runs(st, a, b).table()
    planted = t.loc[t["provider"] == "triton_tuned", "verdict"]
    # each planted case is called with probability ~0.96 (its true change is 4.8 pairwise standard
    # deviations; the call needs about 3 after Benjamini-Hochberg), so nearly all, never the other way
    assert (planted == "SLOWER").sum() >= len(planted) - 2 and planted.isin(["SLOWER", "UNCERTAIN"]).all(), t
    assert not t.loc[t["provider"] != "triton_tuned", "verdict"].isin(["SLOWER", "FASTER"]).any()


def test_interleaved_arms_catch_a_planted_five_percent(tmp_path, recorded):
    st, a, b = _run_pair(
        tmp_path, recorded, seed=int(RNG.integers(1 << 30)), sigma_run=0.0, shift={"liger": 1.05}, interleaved=True
    )
    res = diff_runs(st, a, b)
    t = res.table()
    assert res.comparison == "interleaved"
    assert (t.loc[t["provider"] == "liger", "verdict"] == "SLOWER").all(), t
    assert (t.loc[t["provider"] != "liger", "verdict"] != "SLOWER").all()
    assert t["variance"].str.startswith("within-run only").all()


def test_calibrated_floor_is_used_and_named(tmp_path):
    from kprof.variance import calibrate

    st = RunStore(tmp_path / "cal.db")
    rng = np.random.default_rng(int(RNG.integers(1 << 30)))
    ids = []
    for r in range(5):  # 4 repeats of one source + 1 run of other sources (not a repeat: left out)
        src = {"k.py": "aa"} if r < 4 else {"k.py": "bb"}
        run = st.begin_run(record(mode="gpu", device={"name": H100}, source_hashes=src))
        cases = [
            (prov, med * (1 + k / 20), f"{77 + k}x333")
            for prov, med in (("triton_tuned", 7.3), ("torch_F", 41.0), ("liger", 230.0))
            for k in range(5)
        ]
        for i, (prov, med, shape) in enumerate(cases):
            e = rng.normal(0, 0.004)
            f = 1.10 if (r == 4 and prov == "triton_tuned") else 1.0
            st.add_case(
                run,
                i,
                {
                    "case": f"rmsnorm/{prov}/{shape}/bf16",
                    "family": "rmsnorm",
                    "provider": prov,
                    "shape": shape,
                    "dtype": "bf16",
                    "status": "ok",
                    "ok": True,
                },
                {"gpu": list(noisy(med * np.exp(e) * f, 0.01, 150) / 1e3)},
            )
        st.finish_run(run, "complete")
        ids.append(run)
    cal = calibrate(st, ["rmsnorm"])
    assert set(cal.runs) == set(ids) and cal.device == H100
    assert (cal.cases["runs"] == 4).all()  # the run of other sources is not a repeat of the four
    assert (cal.classes["sigma_upper"] > cal.classes["sigma"]).all()
    assert (cal.classes["cases"] == 5).all() and (cal.classes["df"] == 15).all()
    res = diff_runs(st, ids[0], ids[4])
    t = res.table()
    assert t["variance"].str.startswith("run-to-run floor").all() and "calibrated from 5 runs" in t["variance"].iloc[0]
    assert (t.loc[t["provider"] == "triton_tuned", "verdict"] == "SLOWER").all()  # 10% against a floor of ~2%
    assert not t.loc[t["provider"] != "triton_tuned", "verdict"].isin(["SLOWER", "FASTER"]).any()


# --------------------------------------------------------------------------------------------- correctness
def _cpu_pair(tmp_path, statuses: dict[str, tuple[str, str]], errs: dict[str, tuple[float, float]]):
    st = RunStore(tmp_path / "cpu.db")
    ids = []
    for side in (0, 1):
        run = st.begin_run(record(mode="interpreter"))
        for i, prov in enumerate(statuses):
            status = statuses[prov][side]
            err = errs.get(prov, (3e-7, 4e-7))[side]
            note = f"relative error {err:.2e} above tolerance 1e-02" if status == "fail" else None
            st.add_case(
                run,
                i,
                {
                    "case": f"rmsnorm/{prov}/37x129/fp32",
                    "family": "rmsnorm",
                    "provider": prov,
                    "shape": "37x129",
                    "dtype": "fp32",
                    "status": status,
                    "ok": status == "ok",
                    "max_rel_err": err,
                    "note": note,
                },
                {},
            )
        st.finish_run(run, "complete")
        ids.append(run)
    return st, ids


def test_cpu_interpreter_diff_gives_correctness_verdicts(tmp_path):
    from kprof.correctness_diff import family_tolerance

    tol = family_tolerance("rmsnorm", "fp32")
    assert 0 < tol < 1
    statuses = {
        "triton_tuned": ("ok", "fail"),
        "triton_looped": ("fail", "ok"),
        "liger": ("error", "error"),
        "torch_F": ("ok", "ok"),
        "triton_one_row": ("ok", "ok"),
        "torch_compile": ("ok", "skipped"),
    }
    errs = {"triton_tuned": (2e-7, 0.05), "triton_looped": (0.05, 3e-7), "triton_one_row": (1e-7, 0.4 * tol)}
    st, (a, b) = _cpu_pair(tmp_path, statuses, errs)
    res = diff_runs(st, a, b)
    assert res.cases.empty  # no timings: no NaN / UNCERTAIN timing rows
    v = res.correctness.set_index("provider")["verdict"].to_dict()
    assert v == {
        "triton_tuned": "BROKEN",
        "triton_looped": "FIXED",
        "liger": "STILL-BROKEN",
        "torch_F": "SAME-CORRECT",
        "triton_one_row": "ERR-GREW",
        "torch_compile": "NOT-CHECKED",
    }
    assert res.broken == ["rmsnorm/triton_tuned/37x129/fp32"]
    md = to_markdown(res)
    assert "## Correctness" in md and "**BROKEN**" in md and "correctness regressions" in md
    assert "## Timings" not in md and "nan" not in md.lower()


def test_cli_fails_on_a_correctness_regression(tmp_path):
    st, (a, b) = _cpu_pair(
        tmp_path, {"triton_tuned": ("ok", "fail"), "torch_F": ("ok", "ok")}, {"triton_tuned": (2e-7, 0.05)}
    )
    res = kprof_cli("diff", a, b, "--store", str(st.path), "--fail-on-regression", "--json", str(tmp_path / "c.json"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "BROKEN" in res.stdout and "correctness regression" in res.stderr
    assert json.loads((tmp_path / "c.json").read_text())["correctness_regressions"] == [
        "rmsnorm/triton_tuned/37x129/fp32"
    ]
    assert kprof_cli("diff", a, b, "--store", str(st.path)).returncode == 0  # reported, fails only when asked
    fixed = kprof_cli("diff", b, a, "--store", str(st.path), "--fail-on-regression")
    assert fixed.returncode == 0 and "FIXED" in fixed.stdout


# ------------------------------------------------------------------------------------------ trace diffs
@pytest.mark.parametrize(
    "name",
    [
        "kineto_rmsnorm_h100_small.json.gz",
        "kineto_rmsnorm_h100_jitpath.json.gz",
        "nsys_rmsnorm.sqlite",
        "nsys_rmsnorm_cuda_gpu_kern_sum.csv",
        "proton_rmsnorm_tree.hatchet",
        "proton_rmsnorm_trace.chrome_trace",
    ],
)
def test_a_trace_against_itself_is_same_everywhere(name, data_file):
    from kprof.profilers import parse_trace
    from kprof.trace_diff import diff_traces

    t = parse_trace(data_file(name))
    d = diff_traces(t, t)
    assert (d.table["verdict"] == "SAME").all(), d.table[["case", "kernel", "launch", "why"]]
    assert d.only_in_a.empty and d.only_in_b.empty
    assert int(d.table["n_a"].sum()) == int(launch_table.launches(launch_table.kernels(t)).sum())


def test_summary_traces_sharing_kernels_are_matched(data_file):
    from kprof.profilers import parse_trace
    from kprof.trace_diff import SUMMARY_UNTESTED, diff_traces, match_names

    a = parse_trace(data_file("nsys_rmsnorm_cuda_gpu_kern_sum.csv"))
    b = a.copy()
    slow, gone = b["kernel"].iloc[0], b["kernel"].iloc[1]
    b.loc[b["kernel"] == slow, "duration_ns"] = (
        (b.loc[b["kernel"] == slow, "duration_ns"] * 1.2).round().astype("Int64")
    )
    b = b[b["kernel"] != gone]
    d = diff_traces(a, b)
    shown = dict(zip(a["kernel"], match_names(a)))  # rows are named by the normalised kernel name
    slow, gone = shown[slow], shown[gone]
    t = d.table.set_index("kernel")
    assert len(t) == len(a) - 1 and (t.drop(index=slow)["verdict"] == "SAME").all()
    assert t.loc[slow, "verdict"] == "UNCERTAIN" and "mean +20.0%" in t.loc[slow, "why"]
    assert (t["statistics"] == SUMMARY_UNTESTED).all() and any("not testable" in n for n in d.notes)
    assert list(d.only_in_a["kernel"]) == [gone] and d.only_in_b.empty


def _launches(kernel: str, grid: int, us: np.ndarray, case: str | None = None) -> pd.DataFrame:
    start = np.cumsum(np.full(us.size, 50_000))
    return pd.DataFrame(
        {
            "kernel": kernel,
            "start_ns": start,
            "end_ns": start + (us * 1e3).astype(int),
            "duration_ns": (us * 1e3).astype(int),
            "grid_x": grid,
            "grid_y": 1,
            "grid_z": 1,
            "block_x": 128,
            "block_y": 1,
            "block_z": 1,
            "case": case,
            "source": "torch",
        }
    )


def test_one_kernel_with_two_grids_is_not_pooled():
    from kprof.trace_diff import diff_traces

    n = 41
    a = launch_table.validate(
        pd.concat([_launches("k", 61, noisy(9.0, 0.01, n)), _launches("k", 977, noisy(55.0, 0.01, n))])
    )
    b = launch_table.validate(
        pd.concat(
            [
                _launches("k", 61, noisy(9.0, 0.01, n)),
                _launches("k", 977, noisy(66.0, 0.01, n)),
                _launches("k", 3, noisy(2.0, 0.01, 7)),
            ]
        )
    )
    d = diff_traces(a, b)
    t = d.table.set_index("launch")
    assert len(t) == 2 and (t["n_a"] == n).all()
    # two trace files are two runs: the unchanged 9 us group sits inside the default floor of its size, the 20%
    # change of the 55 us group is beyond its floor
    assert t.loc["grid 61x1x1 block 128x1x1", "verdict"] == "UNCERTAIN"
    assert "inside the run-to-run floor" in t.loc["grid 61x1x1 block 128x1x1", "why"]
    assert t.loc["grid 977x1x1 block 128x1x1", "verdict"] == "SLOWER"
    assert t["statistics"].str.contains("default run-to-run floor").all()
    assert list(d.only_in_b["launch"]) == ["grid 3x1x1 block 128x1x1"] and d.only_in_a.empty


def test_trace_matching_uses_a_normalised_name_when_the_parser_gives_one():
    from kprof.trace_diff import diff_traces

    x = noisy(9.0, 0.01, 30)
    a = launch_table.validate(_launches("void k<(int)1>", 61, x)).assign(kernel_norm="k<1>")
    b = launch_table.validate(_launches("void k<1>", 61, x)).assign(kernel_norm="k<1>")
    assert diff_traces(a, b).table["verdict"].tolist() == ["SAME"]


def test_two_profilers_of_one_capture_match_every_kernel_by_normalised_name():
    """nsys keeps demangled names, Proton mangled ones, and Proton records no grid: the same H100 capture must
    still match kernel for kernel instead of reading 'no kernel in common'."""
    from kprof.profilers import parse_trace
    from kprof.trace_diff import diff_traces, match_names

    a = parse_trace(ROOT / "tests/data/nsys_rmsnorm.sqlite.gz")
    b = parse_trace(ROOT / "tests/data/proton_rmsnorm_trace.chrome_trace.gz")
    names_a = set(match_names(launch_table.kernels(a)))
    names_b = set(match_names(launch_table.kernels(b)))
    assert names_a == names_b and len(names_a) > 5
    d = diff_traces(a, b)
    # every launch inside a kprof case matches; nsys alone also saw the launches outside any case (inputs)
    assert d.only_in_b.empty and len(d.table) > 5
    assert set(d.only_in_a["case"]) <= {"(outside any case)"}


def test_benjamini_hochberg_matches_scipy():
    from scipy import stats

    from kprof.diff import benjamini_hochberg

    p = RNG.uniform(0, 0.2, 37) ** 2
    if not hasattr(stats, "false_discovery_control"):
        pytest.skip("scipy without false_discovery_control")
    np.testing.assert_allclose(benjamini_hochberg(p), stats.false_discovery_control(p), rtol=1e-12)
    with_nan = benjamini_hochberg([0.01, np.nan, 0.02])
    assert np.isnan(with_nan[1]) and np.allclose(with_nan[[0, 2]], [0.02, 0.02])


def test_cli_noise_calibrates_and_reports(tmp_path):
    st = RunStore(tmp_path / "n.db")
    rng = np.random.default_rng(int(RNG.integers(1 << 30)))
    for _ in range(3):
        run = st.begin_run(record(mode="gpu", device={"name": H100}))
        for i, (prov, med) in enumerate((("triton_tuned", 6.1), ("torch_F", 333.0))):
            st.add_case(
                run,
                i,
                {
                    "case": f"rmsnorm/{prov}/9x99/bf16",
                    "family": "rmsnorm",
                    "provider": prov,
                    "shape": "9x99",
                    "dtype": "bf16",
                    "status": "ok",
                    "ok": True,
                },
                {"gpu": list(noisy(med * np.exp(rng.normal(0, 0.01)), 0.01, 60) / 1e3)},
            )
        st.finish_run(run, "complete")
    res = kprof_cli("noise", "rmsnorm", "--store", str(st.path), "--json", str(tmp_path / "n.json"))
    assert res.returncode == 0, res.stderr
    assert "run-to-run noise on NVIDIA H100 80GB HBM3 from 3 runs" in res.stdout
    cal = json.loads((tmp_path / "n.json").read_text())
    assert {c["size_class"] for c in cal["classes"]} == {"<10us", "100us-1ms"}
    one = kprof_cli("noise", run, "--store", str(st.path))
    assert one.returncode == 2 and "at least two separate runs" in one.stderr


def test_trace_diff_prints_kernel_names_as_text(tmp_path):
    """Kernel names come from traces: markup-like brackets print as written, terminal escapes never reach it."""
    import json
    import subprocess
    import sys

    names = ("kern[/]", "[bold]k2[/bold]", "evil\x1b[31mred")
    events, t = [], 0
    for i in range(12):
        for name in names:
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": name,
                    "ts": t,
                    "dur": 5.0 + RNG.uniform(0, 0.1),
                    "pid": 0,
                    "tid": 7,
                    "args": {"grid": [4, 1, 1], "block": [128, 1, 1], "correlation": i},
                }
            )
            t += 20
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    r = subprocess.run(
        [sys.executable, "-m", "kprof.cli", "diff", str(path), str(path)],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "COLUMNS": "250"},
    )
    assert r.returncode == 0, r.stderr
    assert "kern[/]" in r.stdout and "[bold]k2[/bold]" in r.stdout
    assert "\x1b[31m" not in r.stdout and "evil\\x1b[31mred" in r.stdout


def _committed_small_call_runs(tmp_path) -> tuple[pd.DataFrame, dict[str, str]]:
    """Run medians and source identities of the H100 `kprof profile` runs committed under
    benchmarks/results/cold-placement/ (separate processes, unchanged rmsnorm code)."""
    import gzip
    import shutil

    from kprof import variance

    base = ROOT / "benchmarks/results/cold-placement"
    medians, groups = [], {}
    for i, gz in enumerate(sorted(base.glob("*/**/*.db.gz"))):
        if "h200" in str(gz):
            continue  # another device: a floor is per device
        db = tmp_path / f"{i}.db"
        with gzip.open(gz) as src, open(db, "wb") as dst:
            shutil.copyfileobj(src, dst)
        st = RunStore(db, create=False)
        ids = list(st.runs()["id"])
        medians.append(variance.run_medians(st, ids))
        groups |= {r: variance.source_identity(st.run(r)) for r in ids}
    return pd.concat(medians, ignore_index=True), groups


def test_the_default_floor_under_10us_is_what_the_committed_repeated_runs_give(tmp_path):
    from kprof import variance

    medians, groups = _committed_small_call_runs(tmp_path)
    assert len(groups) >= 14 and len(set(groups.values())) == 1  # repeats of one code
    cases, classes = variance.estimate(medians, groups)
    small = classes[classes["size_class"] == "<10us"].iloc[0]
    assert variance.DEFAULT_SIGMA_RUN_BY_CLASS["<10us"] == pytest.approx(small["sigma_upper"], abs=5e-4)
    assert small["sigma_upper"] > variance.DEFAULT_SIGMA_RUN  # the general default would be too narrow there
    # with it, torch.compile's largest move between two of these runs is inside the floor; a 30 us case
    # keeps the general default
    compile_moves = cases[cases["key"].str.contains("torch_compile") & (cases["size_class"] == "<10us")]
    assert compile_moves["max_pair_dev"].max() < variance.default_floor(3.0).half_width()
    assert variance.default_floor(30.0).sigma_run == variance.DEFAULT_SIGMA_RUN


def test_runs_timed_with_and_without_the_sm_clock_are_said_to_differ():
    """A run from before kprof read the SM clock kept the calls the power cap slowed; a later run sets them
    aside. The diff says so, and names the cases of a run whose cold time still pools slowed calls."""
    import numpy as np
    import pandas as pd

    from kprof.diff import clock_warnings

    cases = [f"rmsnorm_linear/triton_tuned/{m}x4096x14336/fp16" for m in (2048, 8192)]
    old = pd.DataFrame({"case": cases, "timing_mode": "cold"})
    new = old.assign(cold_clock_pct=[99.1, 98.7])
    assert clock_warnings(new, new) == []
    (w,) = clock_warnings(old, new)
    assert w.startswith("run A kept cold calls at any SM clock") and "faster in run B" in w
    assert clock_warnings(new, old)[0].startswith("run B kept cold calls at any SM clock")
    assert clock_warnings(old.assign(timing_mode="warm"), new.assign(timing_mode="warm")) == []
    slowed = new.assign(cold_clock_pct=[99.1, 77.0])
    (w,) = clock_warnings(new, slowed)
    assert w.startswith("run B: 1 case(s) kept cold calls slowed") and cases[1] in w and cases[0] not in w
    assert clock_warnings(new.assign(cold_clock_pct=np.nan), new.assign(cold_clock_pct=np.nan)) == []


# ------------------------------------------------------------------------- a floor for each kind of samples
# Separate `kprof profile rmsnorm` runs of unchanged code on one H100 (47 cases each), and the store's GPU-time
# calibration from them (benchmarks/results/diff-noise/, made before calibrations recorded their samples' kind)
UNCHANGED = ("20261123-025406-34db", "20261123-025505-608c", "20261123-025557-befb", "20261123-025646-1f80")


@pytest.fixture
def noise_store(tmp_path) -> RunStore:
    import gzip
    import shutil

    db = tmp_path / "planted.db"
    with gzip.open(ROOT / "benchmarks/results/diff-noise/planted/kprof.db.gz") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return RunStore(db, create=False)


@pytest.mark.parametrize("kind", ["host", "graph"])
def test_samples_without_a_floor_of_their_own_get_no_verdict_between_separate_runs(noise_store, kind):
    """Host times and graph replays of unchanged code moved 0.47-2.4x and 0.87-1.14x between these runs, where the
    GPU-time floor is 1.7-5.2%: judged by it, one pair read 25 cases SLOWER and 8 FASTER in host time."""
    for a, b in zip(UNCHANGED, UNCHANGED[1:]):
        t = diff_runs(noise_store, a, b, kind=kind).table()
        assert len(t) == 47 and (t["verdict"] == "UNCERTAIN").all()
        assert t["why"].str.startswith(f"no run-to-run floor: {kind} samples").all()
        assert t["why"].str.contains(f"kprof noise RUNS --samples {kind}").all()
    ratios = diff_runs(noise_store, UNCHANGED[0], UNCHANGED[1], kind=kind).table()["ratio"]
    assert ratios.max() / ratios.min() > 1.1  # they did move: a verdict by the GPU floor would have been wrong
    gpu = diff_runs(noise_store, UNCHANGED[0], UNCHANGED[1]).table()  # the GPU times keep their calibrated floor
    assert gpu["variance"].str.contains("calibrated from").all() and (gpu["verdict"] == "SAME").any()
    cold = diff_runs(noise_store, UNCHANGED[0], UNCHANGED[1], kind="cold").table()  # the declared mode: the same
    assert list(cold["verdict"]) == list(gpu["verdict"])


def test_a_calibration_holds_for_the_samples_it_was_learnt_from(noise_store):
    from kprof import variance

    conn = noise_store.connection
    assert "kind" not in {r[1] for r in conn.execute("PRAGMA table_info(noise)")}  # an older store's table
    gpu_cal = variance.load(noise_store, "NVIDIA H100 80GB HBM3")
    assert gpu_cal is not None and gpu_cal.kind == "gpu"  # its rows read as the GPU times' they were
    assert variance.load(noise_store, "NVIDIA H100 80GB HBM3", "host") is None
    host_cal = variance.calibrate(noise_store, list(UNCHANGED), "host")
    assert host_cal.kind == "host"
    assert host_cal.classes["sigma_upper"].min() > gpu_cal.classes["sigma_upper"].max()  # host time moves more
    again = variance.load(noise_store, "NVIDIA H100 80GB HBM3")  # the newer host calibration does not replace it
    assert again is not None and again.created_at == gpu_cal.created_at
    assert (again.classes["sigma_upper"].to_numpy() == gpu_cal.classes["sigma_upper"].to_numpy()).all()
    for a, b in zip(UNCHANGED, UNCHANGED[1:]):
        t = diff_runs(noise_store, a, b, kind="host").table()
        assert t["variance"].str.contains("host samples").all()
        assert not t["verdict"].isin(["SLOWER", "FASTER"]).any()  # unchanged code, judged by its own floor


def test_interleaved_arms_alternate_only_their_gpu_samples(noise_store):
    """The store's --rev arms: unchanged code against a planted regression of triton_tuned. Only the gpu samples
    alternate round by round; host times, taken once per arm, had read 11 unchanged cases SLOWER or FASTER when
    judged as alternated (within-run variance only)."""
    base, planted = "20261123-025946-d3f1", "20261123-025946-4391"
    gpu = diff_runs(noise_store, base, planted)
    t = gpu.table()
    assert gpu.comparison == "interleaved" and t["variance"].str.startswith("within-run").all()
    assert set(t.loc[t["verdict"] == "SLOWER", "provider"]) == {"triton_tuned"}
    assert (t.loc[t["provider"] == "triton_tuned", "verdict"] == "SLOWER").all()
    for kind in ("host", "graph"):
        res = diff_runs(noise_store, base, planted, kind=kind)
        t = res.table()
        assert res.comparison == "one window per arm"
        assert not t.loc[t["provider"] != "triton_tuned", "verdict"].isin(["SLOWER", "FASTER"]).any()
        assert t["why"].str.startswith(f"no run-to-run floor: {kind} samples").all()


def test_an_older_store_that_cannot_be_written_still_gives_its_floor(noise_store):
    import sqlite3
    from types import SimpleNamespace

    from kprof import variance

    ro = SimpleNamespace(connection=sqlite3.connect(f"file:{noise_store.path}?mode=ro", uri=True))
    cal = variance.load(ro, "NVIDIA H100 80GB HBM3")
    assert cal is not None and cal.kind == "gpu" and len(cal.classes) == 4
    assert variance.load(ro, "NVIDIA H100 80GB HBM3", "host") is None  # its table held GPU-time floors alone
    assert "kind" not in {r[1] for r in ro.connection.execute("PRAGMA table_info(noise)")}  # left as it was


def test_two_captures_of_unchanged_kernels_are_not_called_slower():
    """Two committed Kineto captures of rmsnorm from two H100 sessions share their PyTorch kernels unchanged (the
    same torch). Judged as one run, a 1-us elementwise kernel read +14.6% SLOWER; two trace files are two runs."""
    from kprof.profilers import parse_trace
    from kprof.trace_diff import diff_traces

    a = parse_trace(ROOT / "tests/data/kineto_rmsnorm_h100_jitpath.json.gz")
    b = parse_trace(ROOT / "tests/data/kineto_rmsnorm_h100_small.json.gz")
    t = diff_traces(a, b).table
    # PyTorch's kernels inside the cases both sessions ran (64x4096 bf16); outside the cases are the inputs'
    # kernels, whose work differs between the sessions' shapes under one launch configuration
    aten = t[t["kernel"].str.startswith("at::native") & (t["case"] != "(outside any case)")]
    assert len(aten) >= 3 and not aten["verdict"].isin(["SLOWER", "FASTER"]).any()
    moved = t[t["kernel"].str.startswith("at::native") & ((t["ratio"] - 1).abs() > 0.1) & t["ratio"].between(0.8, 1.25)]
    assert len(moved) >= 3 and moved["verdict"].eq("UNCERTAIN").all()  # they moved 10-15%, and kprof says why
    assert moved["why"].str.contains("run-to-run floor|not significant|fewer than").all()


@pytest.mark.parametrize(
    "env_a, env_b, expect",
    [
        ({}, {"TRITON_DEFAULT_FP_FUSION": "0"}, ["environment variable TRITON_DEFAULT_FP_FUSION differs: unset vs 0"]),
        (
            {"PTXAS_OPTIONS": "-O3"},
            {"PTXAS_OPTIONS": "-O1"},
            ["environment variable PTXAS_OPTIONS differs: -O3 vs -O1"],
        ),
        ({"CUDA_LAUNCH_BLOCKING": "1"}, {"CUDA_LAUNCH_BLOCKING": "1"}, []),
        (None, {"NVIDIA_TF32_OVERRIDE": "0"}, ["the other run set NVIDIA_TF32_OVERRIDE=0; run A (a)"]),
        (None, {}, []),
        (None, None, []),
    ],
)
def test_runs_made_with_different_compiler_and_library_variables_are_flagged(env_a, env_b, expect):
    """Variables that change what a kernel compiles to or which library kernel runs (``kprof.runtime.recorded_env``),
    recorded in each run's versions; a run made before they were recorded cannot be compared on the ones the other
    set."""
    from kprof.diff import environment_warnings

    def run(rid, env):
        versions = {"torch": "2.11", "triton": "3.6"} | ({"env": env} if env is not None else {})
        return {"id": rid, "mode": "gpu", "status": "complete", "profiler": "none", "versions": versions}

    w = [x for x in environment_warnings(run("a", env_a), run("b", env_b)) if "environment variable" in x]
    assert len(w) == len(expect) and all(x.startswith(e) for x, e in zip(w, expect))


def test_an_unfinished_run_b_cannot_clear_the_cases_it_never_measured(tmp_path):
    """--fail-on-regression: a run B that did not finish (killed at a budget) and lacks cases A measured fails, naming
    them; a finished B that measured fewer cases was asked to, and passes. Either way the terminal says how many cases
    were not compared."""
    st = RunStore(tmp_path / "s.db")
    rng = np.random.default_rng()
    provs = [f"triton_v{i}" for i in range(int(rng.integers(2, 5)))]
    ids = []
    for keep, finish in ((len(provs), True), (1, False), (1, True)):
        run = st.begin_run(record(mode="gpu", config={"profile_repeats": 5, "settings": {"rep_ms": 100}}))
        for i, prov in enumerate(provs[:keep]):
            row = {"case": f"rmsnorm/{prov}/64x4096/bf16", "family": "rmsnorm", "provider": prov, "shape": "64x4096"}
            row |= {"dtype": "bf16", "status": "ok", "ok": True}
            st.add_case(run, i, row, {"gpu": list(noisy(20.0, 0.01) / 1e3)})
        if finish:
            st.finish_run(run, "complete")
        ids.append(run)
    st.close()
    a, cut, fewer = ids
    store = str(tmp_path / "s.db")
    res = kprof_cli("diff", a, cut, "--store", store, "--fail-on-regression")
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"never measured {len(provs) - 1} case(s) of A" in res.stderr
    assert f"not compared: {len(provs) - 1} case(s) only in A, 0 only in B" in res.stdout
    ok = kprof_cli("diff", a, fewer, "--store", store, "--fail-on-regression")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"not compared: {len(provs) - 1} case(s) only in A" in ok.stdout
