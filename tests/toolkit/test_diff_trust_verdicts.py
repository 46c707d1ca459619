"""kprof diff must not state a verdict it cannot back: cases whose samples measure different things, runs that only
look like one invocation, floors learnt from the wrong runs or from non-numbers, and exit messages that name the
wrong cause. Each test plants the situation and asserts what a correct diff says about it."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

from kprof import variance
from kprof.diff import DiffRule, compare_samples, diff_runs
from kprof.errors import KprofError
from kprof.store import RunStore
from tests.toolkit.test_diff import kprof_cli
from tests.toolkit.test_store import record

H100 = "NVIDIA H100 80GB HBM3"


def _samples_ms(median_us: float, rng: np.random.Generator, n: int = 200, cv: float = 0.01) -> list[float]:
    return list(median_us * np.exp(rng.normal(0, cv, n)) / 1e3)


def _case_row(prov: str, **extra: object) -> dict:
    row = {"case": f"rmsnorm/{prov}/64x4096/bf16", "family": "rmsnorm", "provider": prov, "shape": "64x4096"}
    return row | {"dtype": "bf16", "status": "ok", "ok": True, **extra}


def _run(st: RunStore, cases: list[tuple[str, float, dict]], rng: np.random.Generator, **rec: object) -> str:
    """One complete GPU run: (provider, median us, extra metrics) per case."""
    run = st.begin_run(record(mode="gpu", device={"name": H100}, **rec))
    for i, (prov, med, extra) in enumerate(cases):
        st.add_case(run, i, _case_row(prov, **extra), {"gpu": _samples_ms(med, rng)})
    st.finish_run(run, "complete")
    return run


# ----------------------------------------------------------------------------- what the gpu samples measure
COLD = {"timing_mode": "cold", "timer": "cupti"}


@pytest.mark.parametrize(
    "b_timed, b_us, a_words, b_words",
    [
        # --mode warm: a small case reads its inputs from the L2 the previous call left, 30% less time
        ({"timing_mode": "warm", "timer": "cupti"}, 14.0, "cold", "warm"),
        # nsys or ncu held CUPTI in run B: its cold times fell back to CUDA events, ~3 us of overhead more
        ({"timing_mode": "cold", "timer": "events"}, 24.0, "cold", "event"),
    ],
)
def test_cases_timed_as_different_things_get_no_timing_verdict(tmp_path, b_timed, b_us, a_words, b_words):
    """Unchanged code, B's gpu samples measured another time (another declared mode, or the event fallback): the
    ratio is the difference between the two measurements, not a change of the code, so no FASTER/SLOWER. A case
    timed alike in both runs keeps its verdict."""
    rng = np.random.default_rng(7)
    st = RunStore(tmp_path / "s.db")
    a = _run(st, [("triton_tuned", 20.0, COLD), ("torch_F", 30.0, COLD)], rng)
    b = _run(st, [("triton_tuned", b_us, b_timed), ("torch_F", 30.0 * 1.5, COLD)], rng)
    res = diff_runs(st, a, b)
    t = res.table().set_index("provider")
    moved = t.loc["triton_tuned"]
    assert moved["verdict"] == "UNCERTAIN", moved.to_dict()
    assert "not compared" in moved["why"] and a_words in moved["why"] and b_words in moved["why"]
    assert math.isnan(moved["p_value"])  # no test was made, so none is shown or counted in Benjamini-Hochberg
    assert t.loc["torch_F", "verdict"] == "SLOWER"  # +50%, timed alike: still called
    assert any("timed differently" in w for w in res.warnings), res.warnings


def test_a_run_made_before_declared_timing_modes_is_not_timed_against_one_that_declares(tmp_path):
    """Before declared modes, the gpu samples were CUDA-event pairs around do_bench-style calls; after, CUPTI kernel
    time. A run that recorded no mode is compared with another that recorded none, not with one that did."""
    rng = np.random.default_rng(8)
    st = RunStore(tmp_path / "s.db")
    old = _run(st, [("triton_tuned", 23.0, {})], rng)
    old2 = _run(st, [("triton_tuned", 23.0 * 1.5, {})], rng)
    new = _run(st, [("triton_tuned", 20.0, COLD)], rng)
    mixed = diff_runs(st, old, new).table().iloc[0]
    assert mixed["verdict"] == "UNCERTAIN" and "recorded no timing mode" in mixed["why"], mixed.to_dict()
    assert diff_runs(st, old, old2).table().iloc[0]["verdict"] == "SLOWER"  # alike: both undeclared


# ------------------------------------------------------------------------------- one invocation, or two
def _set_times(st: RunStore, run: str, created: str, finished: str | None) -> None:
    with sqlite3.connect(st.path) as cx:
        cx.execute("UPDATE runs SET created_at = ?, finished_at = ? WHERE id = ?", (created, finished, run))


def test_a_reused_process_id_does_not_make_two_invocations_interleaved(tmp_path):
    """Monday's and Tuesday's `kprof profile --rev main --rev feat` in a container both ran as pid 1 on one host
    name. Arm A of one and arm B of the other are separate runs: judged within-run only (no run-to-run floor),
    a run-to-run shift of 8% read SLOWER."""
    rng = np.random.default_rng(9)
    st = RunStore(tmp_path / "s.db")
    cfg = {"interleaved_revisions": ["main", "feat"], "settings": {"rep_ms": 100}}
    a = _run(st, [("triton_tuned", 20.0, COLD)], rng, config=cfg)
    b = _run(st, [("triton_tuned", 20.0 * 1.08, COLD)], rng, config=cfg)
    _set_times(st, a, "2026-11-23T10:00:00+00:00", "2026-11-23T10:02:00+00:00")
    _set_times(st, b, "2026-11-24T10:00:00+00:00", "2026-11-24T10:02:00+00:00")
    res = diff_runs(st, a, b)
    assert res.comparison == "separate"
    row = res.table().iloc[0]
    assert row["verdict"] == "UNCERTAIN" and row["variance"].startswith("default floor"), row.to_dict()
    # the arms of one invocation (begun together, finished together) are still interleaved
    _set_times(st, b, "2026-11-23T10:00:00+00:00", "2026-11-23T10:02:00+00:00")
    assert diff_runs(st, a, b).comparison == "interleaved"


def test_arms_of_one_invocation_count_once_in_a_noise_calibration(tmp_path):
    """`kprof profile --rev main --rev main` (an A/A check) stores two runs of identical sources from one process,
    timed in alternating rounds: they agree far more closely than separate runs do. As two repeats they pulled the
    floor down (a too-low floor is the costly error); they are one run of that process."""
    rng = np.random.default_rng(10)
    st = RunStore(tmp_path / "s.db")
    cfg = {"interleaved_revisions": ["main", "main"]}
    provs = [f"v{i}" for i in range(6)]
    arm_a = _run(st, [(p, 20.0, COLD) for p in provs], rng, config=cfg)
    arm_b = _run(st, [(p, 20.0, COLD) for p in provs], rng, config=cfg)
    for run in (arm_a, arm_b):
        _set_times(st, run, "2026-11-23T10:00:00+00:00", "2026-11-23T10:02:00+00:00")
    with pytest.raises(KprofError, match="one invocation"):
        variance.calibrate(st, [arm_a, arm_b])
    # with a separate run 6% away: the floor is learnt from it and one arm, not diluted by the arms' agreement
    later = _run(st, [(p, 20.0 * 1.06, COLD) for p in provs], rng)
    cal = variance.calibrate(st, [arm_a, arm_b, later])
    assert set(cal.runs) == {arm_a, later}
    assert (cal.cases["runs"] == 2).all()
    assert cal.cases["sigma"].min() > 0.03  # log(1.06) / sqrt(2) = 4.1% per run


# ------------------------------------------------------------------------------------ non-numbers, zeros
def test_a_nan_sample_does_not_lower_the_default_floor_of_a_small_call(tmp_path):
    """A 5-us case takes the <10 us default floor (11.3%); one NaN among its samples made the median NaN, the size
    class unknown and the floor the larger calls' 6.9%."""
    rng = np.random.default_rng(11)
    st = RunStore(tmp_path / "s.db")
    a = st.begin_run(record(mode="gpu", device={"name": H100}))
    st.add_case(a, 0, _case_row("triton_tuned", **COLD), {"gpu": [*_samples_ms(5.0, rng), math.nan]})
    st.finish_run(a, "complete")
    b = _run(st, [("triton_tuned", 5.0 * 1.09, COLD)], rng)
    row = diff_runs(st, a, b).table().iloc[0]
    small = variance.default_floor(5.0)
    assert small.sigma_run == variance.DEFAULT_SIGMA_RUN_BY_CLASS["<10us"]
    assert row["floor_pct"] == pytest.approx(100 * small.half_width())
    assert row["verdict"] == "UNCERTAIN", row.to_dict()  # +9% is inside the small calls' 11.3%


def test_a_calibration_from_a_run_with_a_nan_sample_still_gives_a_floor(tmp_path):
    """A NaN sample in one calibration run made that case's median, sigma and its class's bound NaN; a NaN floor
    then compared as no floor at all (NaN > 0 is false): separate runs judged within-run only."""
    rng = np.random.default_rng(12)
    st = RunStore(tmp_path / "s.db")
    provs = [f"v{i}" for i in range(4)]
    runs = [_run(st, [(p, 20.0 * (1 + 0.02 * k), COLD) for p in provs], rng) for k in range(3)]
    poisoned = st.begin_run(record(mode="gpu", device={"name": H100}))
    for i, p in enumerate(provs):
        st.add_case(poisoned, i, _case_row(p, **COLD), {"gpu": [*_samples_ms(20.0, rng), math.nan]})
    st.finish_run(poisoned, "complete")
    cal = variance.calibrate(st, [*runs, poisoned])
    assert np.isfinite(cal.classes["sigma_upper"]).all() and np.isfinite(cal.cases["sigma"]).all()
    b = _run(st, [(p, 20.0 * 1.05, COLD) for p in provs], rng)
    t = diff_runs(st, runs[0], b).table()
    assert t["variance"].str.startswith("run-to-run floor").all()
    assert not t["verdict"].isin(["SLOWER", "FASTER"]).any(), t[["case", "ratio", "why"]]


def test_a_floor_that_is_not_a_number_gives_no_verdict():
    rng = np.random.default_rng(13)
    a, b = np.array(_samples_ms(20.0, rng)), np.array(_samples_ms(24.0, rng))
    res = compare_samples(a, b, DiffRule(), variance.Floor(math.nan, "calibrated", "a broken calibration"))
    assert res["verdict"] == "UNCERTAIN" and "floor" in res["why"], res


def test_a_side_that_measured_no_time_is_not_called_faster():
    """Per-call times of 0 us (a call in which no kernel was recorded) are no time: B/A = 0 read as -100% FASTER."""
    rng = np.random.default_rng(14)
    a = np.array(_samples_ms(20.0, rng)) * 1e3
    res = compare_samples(a, np.zeros(200))
    assert res["verdict"] == "UNCERTAIN" and "0 µs" in res["why"], res
    assert compare_samples(np.zeros(200), a)["verdict"] == "UNCERTAIN"


def test_samples_that_are_not_times_are_refused(tmp_path):
    """`--samples cold_clock` holds SM clocks in MHz: read as milliseconds, a faster clock was called SLOWER."""
    rng = np.random.default_rng(15)
    st = RunStore(tmp_path / "s.db")
    ids = []
    for mhz in (1700.0, 1980.0):
        run = st.begin_run(record(mode="gpu", device={"name": H100}))
        st.add_case(run, 0, _case_row("triton_tuned", **COLD), {"gpu": _samples_ms(20.0, rng), "cold_clock": [mhz] * 9})
        st.finish_run(run, "complete")
        ids.append(run)
    with pytest.raises(KprofError, match="MHz"):
        diff_runs(st, *ids, kind="cold_clock")


# ------------------------------------------------------------------------ cases not timed on both sides
def test_a_case_timed_in_a_and_not_in_b_is_said_not_compared(tmp_path):
    """A case correct in both runs whose timing gave B no samples (no CUPTI records and no event fallback) had no
    row, no count and no mention: the diff read as if it covered every case."""
    rng = np.random.default_rng(16)
    st = RunStore(tmp_path / "s.db")
    a = _run(st, [("triton_tuned", 20.0, COLD), ("torch_F", 30.0, COLD)], rng)
    b = st.begin_run(record(mode="gpu", device={"name": H100}))
    st.add_case(b, 0, _case_row("triton_tuned", **COLD), {"gpu": _samples_ms(20.0, rng)})
    st.add_case(b, 1, _case_row("torch_F", **COLD), {})
    st.finish_run(b, "complete")
    res = diff_runs(st, a, b)
    assert list(res.cases["provider"]) == ["triton_tuned"]
    assert res.untimed == ["rmsnorm/torch_F/64x4096/bf16"]
    assert "1 case(s) correct in both but timed in one only" in res.not_compared
    assert "rmsnorm/torch_F/64x4096/bf16" in res.not_compared


# -------------------------------------------------------------------------- --fail-on-regression's words
def test_the_failure_message_names_its_cause():
    from kprof.verdict_cli import fail_message

    unfinished = "run B (x) is running and never measured 2 case(s) of A (first: f); profile B again to a finish"
    msg = fail_message({"SLOWER": 0}, [], unfinished)
    assert "regression" not in msg and "run B (x) is running and never measured 2 case(s)" in msg
    assert msg.startswith("kprof diff: not cleared: run B (x)")
    both = fail_message({"SLOWER": 2}, ["c1"], unfinished)
    assert both.startswith("kprof diff: regression: 2 case(s) SLOWER; 1 correctness regression(s)")
    assert f"not cleared: {unfinished}" in both
    assert fail_message({"SLOWER": 0, "FASTER": 3}, [], "") == ""


def test_cli_does_not_call_an_unfinished_run_b_a_regression(tmp_path):
    rng = np.random.default_rng(17)
    st = RunStore(tmp_path / "s.db")
    a = _run(st, [("triton_tuned", 20.0, COLD), ("torch_F", 30.0, COLD)], rng)
    b = st.begin_run(record(mode="gpu", device={"name": H100}))
    st.add_case(b, 0, _case_row("triton_tuned", **COLD), {"gpu": _samples_ms(20.0, rng)})  # killed before torch_F
    st.close()
    res = kprof_cli("diff", a, b, "--store", str(tmp_path / "s.db"), "--fail-on-regression")
    assert res.returncode == 1 and "never measured 1 case(s) of A" in res.stderr
    assert "regression" not in res.stderr, res.stderr


# ------------------------------------------------------------------------------------ other GPU models
def test_runs_on_different_gpu_models_get_no_timing_verdict(tmp_path):
    """The same code timed on an H100 in A and an H200 in B reads 30% FASTER: that is the hardware. The ratio
    stays; the verdict is UNCERTAIN and names both models. In a fan-out run the model is each case's own GPU: a
    case both runs timed on the same model keeps its verdict."""
    rng = np.random.default_rng(23)
    st = RunStore(tmp_path / "s.db")
    a = _run(st, [("triton_tuned", 20.0, COLD), ("torch_F", 30.0, COLD)], rng)
    b = st.begin_run(record(mode="gpu", device={"name": "NVIDIA H200"}))
    for i, (prov, us) in enumerate((("triton_tuned", 14.0), ("torch_F", 21.0))):
        st.add_case(b, i, _case_row(prov, **COLD), {"gpu": _samples_ms(us, rng)})
    # a fan-out worker ran torch_F on an H100 in B
    st.add_case_device(b, "rmsnorm/torch_F/64x4096/bf16", {"worker": "w1", "gpu_name": H100, "gpu_index": 0})
    st.finish_run(b, "complete")
    res = diff_runs(st, a, b, DiffRule(threshold=0.03))
    rows = res.cases.set_index("provider")
    assert rows.loc["triton_tuned", "verdict"] == "UNCERTAIN"
    assert f"{H100} in A, NVIDIA H200 in B" in rows.loc["triton_tuned", "why"]
    assert rows.loc["triton_tuned", "ratio"] == pytest.approx(0.7, rel=0.02)  # the ratio is still shown
    assert rows.loc["torch_F", "verdict"] == "FASTER"  # 30 -> 21 us on one model: the code's change
    assert sum("different GPU models" in w for w in res.warnings) == 1
    assert not any("timed differently" in w for w in res.warnings)  # one reason, one warning


# ------------------------------------------------------------------------------- wrong cases new in B
def _wrong(prov: str) -> dict:
    return _case_row(prov, **COLD) | {"status": "fail", "ok": False, "max_rel_err": 0.4, "note": "rel err 0.4"}


def test_a_version_added_wrong_in_b_fails_the_gate(tmp_path):
    """B adds a version that is wrong, and B skips a case A skipped too but now runs it wrong: neither is in both runs
    as checked, so no correctness verdict covered them and --fail-on-regression exited 0 on a wrong kernel. A case
    wrong in both (known broken) is not new and does not fail the gate."""
    rng = np.random.default_rng(21)
    st = RunStore(tmp_path / "s.db")
    a = st.begin_run(record(mode="gpu", device={"name": H100}))
    st.add_case(a, 0, _case_row("triton_tuned", **COLD), {"gpu": _samples_ms(20.0, rng)})
    st.add_case(a, 1, _case_row("liger", status="skipped", ok=False, note="not installed"), {})
    st.add_case(a, 2, _wrong("triton_old"), {})
    st.finish_run(a, "complete")
    b = st.begin_run(record(mode="gpu", device={"name": H100}))
    st.add_case(b, 0, _case_row("triton_tuned", **COLD), {"gpu": _samples_ms(20.0, rng)})
    st.add_case(b, 1, _wrong("liger"), {})
    st.add_case(b, 2, _wrong("triton_old"), {})
    st.add_case(b, 3, _wrong("triton_new"), {})
    st.finish_run(b, "complete")
    st.close()
    res = diff_runs(RunStore(tmp_path / "s.db", create=False), a, b)
    assert res.new_failures == ["rmsnorm/liger/64x4096/bf16", "rmsnorm/triton_new/64x4096/bf16"]
    assert res.broken == [] and res.counts["SLOWER"] == 0  # nothing else would have failed the gate
    cli = kprof_cli("diff", a, b, "--store", str(tmp_path / "s.db"), "--fail-on-regression")
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "wrong in B: 2 case(s)" in cli.stderr and "regression" not in cli.stderr, cli.stderr


def test_a_case_wrong_in_both_runs_is_not_new_in_b(tmp_path):
    st = RunStore(tmp_path / "s.db")
    rng = np.random.default_rng(22)
    runs = []
    for _ in range(2):
        run = st.begin_run(record(mode="gpu", device={"name": H100}))
        st.add_case(run, 0, _case_row("triton_tuned", **COLD), {"gpu": _samples_ms(20.0, rng)})
        st.add_case(run, 1, _wrong("triton_old"), {})
        st.finish_run(run, "complete")
        runs.append(run)
    st.close()
    res = diff_runs(RunStore(tmp_path / "s.db", create=False), *runs)
    assert res.new_failures == []
    assert kprof_cli("diff", *runs, "--store", str(tmp_path / "s.db"), "--fail-on-regression").returncode == 0


def test_a_case_correct_in_a_and_skipped_in_b_fails_the_gate(tmp_path):
    """B's revision broke the compilation of a version A ran correct: the runner records such a case as skipped with
    its reason, so it was NOT-CHECKED, in no list the gate reads, and --fail-on-regression exited 0 on a version B
    never checked. Now the gate fails naming the case and B's reason. A case skipped in both runs, skipped in A and
    correct in B, or a peer (no code under test) correct in A and skipped in B does not fail it."""
    rng = np.random.default_rng(24)
    skip = {"status": "skipped", "ok": False}
    st = RunStore(tmp_path / "s.db")
    a = st.begin_run(record(mode="gpu", device={"name": H100}))
    b = st.begin_run(record(mode="gpu", device={"name": H100}))
    kinds = {"liger": "library", "torch_compile": "compile"}
    for run, cases in (
        (a, [("triton_tuned", {}), ("triton_new", {}), ("liger", skip), ("triton_later", skip), ("torch_compile", {})]),
        (
            b,
            [
                ("triton_tuned", {}),
                ("triton_new", skip),
                ("liger", skip),
                ("triton_later", {}),
                ("torch_compile", skip),
            ],
        ),
    ):
        for i, (prov, extra) in enumerate(cases):
            note = {"note": f"{prov} could not compile: out of shared memory"} if extra else {}
            samples = {} if extra else {"gpu": _samples_ms(20.0, rng)}
            kind = {"kind": kinds.get(prov, "triton")}
            st.add_case(run, i, _case_row(prov, **COLD, **extra, **note, **kind), samples)
        st.finish_run(run, "complete")
    st.close()
    res = diff_runs(RunStore(tmp_path / "s.db", create=False), a, b)
    assert res.unchecked_in_b == [
        "rmsnorm/triton_new/64x4096/bf16 (correct in A, skipped in B: "
        "triton_new could not compile: out of shared memory)"
    ]
    assert res.broken == [] and res.new_failures == [] and res.counts["SLOWER"] == 0  # nothing else fails the gate
    store = str(tmp_path / "s.db")
    cli = kprof_cli("diff", a, b, "--store", store, "--fail-on-regression", "--markdown", str(tmp_path / "d.md"))
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert (
        "not checked in B: 1 case(s) of kprof's versions correct in A were skipped in B" in cli.stderr
        and "regression" not in cli.stderr
    )
    assert "could not compile" in (tmp_path / "d.md").read_text()
    assert kprof_cli("diff", a, b, "--store", store).returncode == 0  # reported; fails only when asked
    back = kprof_cli("diff", b, a, "--store", store, "--fail-on-regression")  # read the other way: triton_later
    assert back.returncode == 1 and "triton_later" in back.stderr and "triton_new" not in back.stderr, back.stderr


# ---------------------------------------------------------------------------------------------- traces
def test_a_group_that_happens_to_match_between_two_captures_is_not_called_same():
    """Two captures of different sessions: a rarely launched small kernel read the same (quantised) durations in
    both, by chance. That made its group 'one capture read twice' (no run-to-run floor) and SAME from 3 launches,
    while the other group of the same two files moved 20%: the files are two captures, so every group is two runs."""
    from kprof import launch_table
    from kprof.trace_diff import diff_traces
    from tests.toolkit.test_diff import _launches

    rng = np.random.default_rng(18)
    rare = np.array([2.048, 2.048, 2.080])
    a = launch_table.validate(
        pd.concat([_launches("rare", 3, rare), _launches("k", 977, 55.0 * np.exp(rng.normal(0, 0.01, 41)))])
    )
    b = launch_table.validate(
        pd.concat([_launches("rare", 3, rare), _launches("k", 977, 66.0 * np.exp(rng.normal(0, 0.01, 41)))])
    )
    t = diff_traces(a, b).table.set_index("kernel")
    assert t.loc["rare", "verdict"] == "UNCERTAIN", t.loc["rare"].to_dict()
    assert "default run-to-run floor" in t.loc["rare", "statistics"]
    assert t.loc["k", "verdict"] == "SLOWER"
    # one capture read twice is still SAME in every group
    same = diff_traces(a, a).table
    assert (same["verdict"] == "SAME").all() and same["statistics"].str.endswith("one capture").all()


# ------------------------------------------------------------------------------------------- real runs
def test_real_runs_of_unchanged_code_get_no_call_timed_alike_or_not(data_file, tmp_path):
    """Three H200 runs of the same code (tests/data/README.md): cold, cold again, warm. Cold against cold calls
    nothing SLOWER or FASTER. Cold against warm compares nothing: before, the same store read 2 cases SLOWER
    (+14%) and one FASTER (-40%), and --fail-on-regression exited 1 on a regression no code made."""
    import gzip
    import shutil

    db = tmp_path / "runs.db"
    with gzip.open(data_file("stores/diff_rmsnorm_h200_cold_cold_warm.db.gz"), "rb") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    st = RunStore(db, create=False)
    runs = st.runs().sort_values("created_at")
    modes = [set(st.metrics(r)["timing_mode"]) for r in runs["id"]]
    assert modes == [{"cold"}, {"cold"}, {"warm"}]
    cold_a, cold_b, warm = runs["id"]
    again = diff_runs(st, cold_a, cold_b)
    assert again.counts["SLOWER"] == again.counts["FASTER"] == 0 and len(again.cases) == 9
    other = diff_runs(st, cold_a, warm)
    assert (other.cases["verdict"] == "UNCERTAIN").all() and len(other.cases) == 9
    assert other.cases["why"].str.startswith("not compared: timed cold in A, timed warm in B").all()
    moved = other.cases["ratio"]
    assert moved.min() < 0.7 and moved.max() > 1.1  # what a verdict would have been made of
    st.close()
    cli = kprof_cli("diff", cold_a, warm, "--store", str(db), "--fail-on-regression")
    assert cli.returncode == 0, cli.stderr
