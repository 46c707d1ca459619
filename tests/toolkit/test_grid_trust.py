"""kprof grid must not call a verdict it cannot back: sides timed unlike (kprof diff's rule), a time that is no time
(zero, negative, infinite) taken as a side's best, and a dispatch or prepared object that gave no time at a point
dropped from its count without a word. Each test plants the situation in rows shaped as a grid run's metrics and
asserts what a correct table and summary say about it."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from kprof.diff import timed_as
from kprof.grid import GridTargets, RooflineTarget, grid_table
from kprof.grid_render import dispatch_counts, render, summarize
from tests.toolkit.test_grid import _metrics

# one class for every shape: a version at 1.2x cuBLAS meets it, so a point judged alike reads "met"
EVERY_SHAPE = GridTargets(roofline=(RooflineTarget(ratio=1.3),))
MATRIX_POINT = ("2048x4096x14336", "bf16")  # over SMALL_CALL_US at the times below: no run-to-run floor

TIMINGS = {
    "cold by CUPTI": {"timing_mode": "cold", "timer": "cupti"},
    "cold by CUDA events": {"timing_mode": "cold", "timer": "events"},
    "warm by CUPTI": {"timing_mode": "warm", "timer": "cupti"},
    "no declared mode": {"timing_mode": None, "timer": None},
}


def _timed(m: pd.DataFrame, providers: tuple[str, ...], timing: str) -> pd.DataFrame:
    """``m`` with ``providers``' rows timed as ``TIMINGS[timing]`` says."""
    out = m if "timer" in m else m.assign(timer="cupti")  # a grid run's rows: CUPTI unless the fallback took over
    out = out.copy()
    for col, value in TIMINGS[timing].items():
        out[col] = out[col].astype(object)
        out.loc[out["provider"].isin(providers), col] = value
    return out


def _matrix_win(rng: np.random.Generator) -> pd.DataFrame:
    """One matrix point: triton_a 1.2x cuBLAS (meets EVERY_SHAPE), torch_compile 2x (a clear win), 0.1% spread."""
    cublas = float(rng.uniform(100, 200))
    times = {"triton_a": 1.2 * cublas, "torch_compile": 2.0 * cublas, "cublas": cublas}
    return _metrics(rng, {MATRIX_POINT: times}, noise=0.001).assign(bound="compute")


@pytest.mark.parametrize("kprof_timing", list(TIMINGS))
@pytest.mark.parametrize("peer_timing", list(TIMINGS))
def test_sides_timed_unlike_call_no_verdict_and_judge_no_target(kprof_timing, peer_timing):
    """A win of 0.6x is a win only where both sides' times are one measurement: kprof diff's rule (the same declared
    mode, both by CUPTI or both by the event fallback, or both from before modes were declared). Otherwise the point
    is uncertain, the why names each side's timing, and its target is not judged."""
    rng = np.random.default_rng()
    m = _timed(_matrix_win(rng), ("triton_a", "cublas"), kprof_timing)
    m = _timed(m, ("torch_compile",), peer_timing)
    table = grid_table(m, targets=EVERY_SHAPE)
    row = table.iloc[0]
    kp_as, peer_as = (timed_as(m[m["provider"] == p].iloc[0]) for p in ("triton_a", "torch_compile"))
    if kp_as == peer_as:
        assert row["verdict"] == "win" and row["target_met"] is True
        assert "not compared" not in row["why"]
        return
    assert row["verdict"] == "uncertain" and row["target_met"] is None
    assert summarize(table).uncertain == 1 and summarize(table).wins == 0
    assert row["why"].startswith("not compared: ")
    for provider, said in (("triton_a", kp_as), ("torch_compile", peer_as)):
        assert (f"{provider} timed {said}" if said else f"{provider} from a run that recorded no timing mode") in row[
            "why"
        ]
    assert "did not run at this point" not in row["why"]  # the yardstick ran: the timing is why it is not judged
    text = render(table, ["r"], "swiglu")
    assert "| uncertain |" in text and "1 point(s) with a target not judged" in text


@pytest.mark.parametrize("roof_timing", ["cold by CUDA events", "warm by CUPTI", "no declared mode"])
def test_a_yardstick_timed_unlike_the_version_judges_no_target(roof_timing):
    """The verdict compares the version with the peer, both timed alike, and stands; the target compares the version
    with the yardstick, timed otherwise, and is not judged."""
    rng = np.random.default_rng()
    m = _timed(_matrix_win(rng), ("triton_a", "torch_compile"), "cold by CUPTI")
    m = _timed(m, ("cublas",), roof_timing)
    row = grid_table(m, targets=EVERY_SHAPE).iloc[0]
    assert row["verdict"] == "win" and row["target_met"] is None
    assert row["why"].startswith("target not judged: not compared: triton_a timed cold, cublas")
    assert "the target is not judged here" in row["why"]


def test_a_point_raced_in_runs_of_different_modes_pairs_no_sides_across_them():
    """A part raced cold, then again warm where the peer failed: the version's best is the warm run's and the peer's
    the cold run's. Warm reads inputs from L2: that pair is no race, so no win."""
    rng = np.random.default_rng()
    peer = float(rng.uniform(50, 100))
    cold = _metrics(rng, {MATRIX_POINT: {"torch_compile": peer}}, noise=0.001).assign(run="r-cold")
    warm = _metrics(rng, {MATRIX_POINT: {"triton_a": 0.7 * peer, "torch_compile": peer}}, noise=0.001)
    warm = warm.assign(run="r-warm", timing_mode="warm", note=None)
    failed = warm["provider"] == "torch_compile"
    warm.loc[failed, ["ok", "gpu_time_us", "note"]] = [False, math.nan, "raised RuntimeError: compile failed"]
    m = pd.concat([cold, warm], ignore_index=True)
    row = grid_table(m).iloc[0]
    assert row["best_kprof"] == "triton_a" and row["best_peer"] == "torch_compile"
    assert row["verdict"] == "uncertain"
    assert "triton_a timed warm, torch_compile timed cold" in row["why"]
    assert grid_table(m.assign(timing_mode="cold")).iloc[0]["verdict"] == "win"  # the same rows timed alike


BAD_TIMES = [0.0, -5.0, math.inf, math.nan]


@pytest.mark.parametrize("bad", BAD_TIMES)
@pytest.mark.parametrize("side", ["version", "peer", "roofline", "floor"])
def test_a_time_that_is_no_time_is_never_a_sides_best(side, bad):
    """A case that passed with a zero, negative, infinite or missing time is left out of its side's best (a negative
    version time made a win of anything, an infinite peer time a ratio of 0, a zero one a division by zero), and the
    why names it where its time was not simply missing."""
    rng = np.random.default_rng()
    base = float(rng.uniform(20, 40))
    times = {
        "triton_a": base,
        "triton_b": 1.5 * base,
        "torch_compile": 2.0 * base,
        "torch_eager": 3.0 * base,
        "cublas": base / 1.2,
        "copy_through_ids": base / 2,
        "other_floor": base / 3,
    }
    broken = {"version": "triton_a", "peer": "torch_compile", "roofline": "cublas", "floor": "copy_through_ids"}[side]
    m = _metrics(rng, {MATRIX_POINT: times}, noise=0.001).assign(bound="compute")
    m.loc[m["provider"] == broken, "gpu_time_us"] = bad
    row = grid_table(m, targets=EVERY_SHAPE).iloc[0]
    valid = {p: t for p, t in times.items() if p != broken}
    kp = min(("triton_a", "triton_b"), key=lambda p: valid.get(p, math.inf))
    peer = min(("torch_compile", "torch_eager"), key=lambda p: valid.get(p, math.inf))
    assert row["best_kprof"] == kp and row["best_peer"] == peer
    assert row["ratio"] == pytest.approx(valid[kp] / valid[peer]) and row["ratio"] > 0
    assert row["verdict"] == "win"  # every side's valid best: the version at 0.75x its peer or better
    if "cublas" in valid:
        assert row["vs_roofline"] == pytest.approx(valid[kp] / valid["cublas"])
        highest = max(valid.get(p, -math.inf) for p in ("copy_through_ids", "other_floor"))
        assert row["floor_vs_roofline"] == pytest.approx(highest / valid["cublas"])
    else:
        assert math.isnan(row["vs_roofline"]) and row["target_met"] is None
    named = f"no valid time from {broken} ({bad:g} µs)"
    assert (named in row["why"]) is not math.isnan(bad)


@pytest.mark.parametrize("bad", [0.0, -5.0, math.inf])
def test_a_point_whose_only_version_has_no_valid_time_is_not_measured_and_says_so(bad):
    rng = np.random.default_rng()
    m = _metrics(rng, {MATRIX_POINT: {"triton_a": bad, "torch_compile": float(rng.uniform(20, 40))}})
    row = grid_table(m).iloc[0]
    assert row["verdict"] == "not measured" and row["best_kprof"] is None
    assert f"no valid time from triton_a ({bad:g} µs)" in row["why"]
    assert summarize(grid_table(m)).not_measured == 1


def _dispatch_grid(rng: np.random.Generator, shapes: list[str]) -> pd.DataFrame:
    """Points where the dispatch (triton_a) runs the best version's code, triton_b is slower, torch_compile the peer,
    and the prepared object (triton_op) matches the dispatch."""
    points = {}
    for shape in shapes:
        best = float(rng.uniform(20, 400))
        points[(shape, "bf16")] = {
            "triton_a": best,
            "triton_b": best * float(rng.uniform(1.1, 1.5)),
            "triton_prepared": best,  # renamed triton_op below: the prepared object, timed as a case of its own
            "torch_compile": best * float(rng.uniform(0.9, 1.1)),
        }
    m = _metrics(rng, points, noise=0.001).assign(note=None)
    m["provider"] = m["provider"].replace({"triton_prepared": "triton_op"})
    return m


def _fail(m: pd.DataFrame, provider: str, shape: str, note: str) -> pd.DataFrame:
    out = m.copy()
    out.loc[(out["provider"] == provider) & (out["shape"] == shape), ["ok", "gpu_time_us", "note"]] = [
        False,
        math.nan,
        note,
    ]
    return out


def test_a_dispatch_without_a_time_at_a_point_is_said_not_dropped():
    """The dispatch failed at one point and did not run at another: both are flagged (``dispatch_silent``), named in
    the why with the failure's note, and the summary says at how many points it gave no time beside its count."""
    rng = np.random.default_rng()
    shapes = [f"{(i + 1) * 512}x4096" for i in range(5)]
    oom = "raised OutOfMemoryError: CUDA out of memory"
    m = _fail(_dispatch_grid(rng, shapes), "triton_a", shapes[1], oom)
    m = m[~((m["provider"] == "triton_a") & (m["shape"] == shapes[3]))]  # never ran there
    table = grid_table(m, dispatch="triton_a", prepared_op="triton_op").set_index("shape")
    silent = {shapes[1], shapes[3]}
    assert table["dispatch_silent"].dtype == bool and table["prepared_op_silent"].dtype == bool
    assert set(table.index[table["dispatch_silent"]]) == silent and not table["prepared_op_silent"].any()
    assert f"no time from the dispatch (triton_a) here (it failed: {oom})" in table.loc[shapes[1], "why"]
    assert "no time from the dispatch (triton_a) here (it did not run here)" in table.loc[shapes[3], "why"]
    assert all("no time from the dispatch" not in str(table.loc[s, "why"]) for s in set(shapes) - silent)
    text = render(table.reset_index(), ["r"], "rmsnorm", dispatch="triton_a", prepared_op="triton_op")
    line = next(ln for ln in text.splitlines() if ln.startswith("Dispatch"))
    compared = len(shapes) - len(silent)
    assert f"at {compared} of {compared} points" in line
    assert f"no time from it at {len(silent)} of the table's {len(shapes)} points" in line
    assert all(f"{s} bf16" in line for s in silent)


def test_a_dispatch_that_failed_everywhere_still_has_its_summary_line():
    rng = np.random.default_rng()
    shapes = ["512x4096", "1024x4096"]
    m = _dispatch_grid(rng, shapes)
    for shape in shapes:
        m = _fail(m, "triton_a", shape, "raised CompilationError")
    table = grid_table(m, dispatch="triton_a")
    assert table["dispatch_silent"].all()
    text = render(table, ["r"], "rmsnorm", dispatch="triton_a")
    assert "no time from it at 2 of the table's 2 points" in text


def test_a_prepared_object_without_a_time_at_a_point_is_said_not_dropped():
    rng = np.random.default_rng()
    shapes = [f"{(i + 1) * 512}x4096x11008" for i in range(4)]
    refusal = "raised ValueError: no prepared route for this shape"
    m = _fail(_dispatch_grid(rng, shapes), "triton_op", shapes[2], refusal)
    table = grid_table(m, dispatch="triton_a", prepared_op="triton_op").set_index("shape")
    assert list(table.index[table["prepared_op_silent"]]) == [shapes[2]] and not table["dispatch_silent"].any()
    assert f"no time from the prepared object (triton_op) here (it failed: {refusal})" in table.loc[shapes[2], "why"]
    text = render(table.reset_index(), ["r"], "rmsnorm_linear", "triton_a", prepared_op="triton_op")
    line = next(ln for ln in text.splitlines() if ln.startswith("Prepared object"))
    assert f"at {len(shapes) - 1} of {len(shapes) - 1} points" in line
    assert f"no time from it at 1 of the table's {len(shapes)} points ({shapes[2]} bf16" in line
    everywhere = m
    for shape in shapes:
        everywhere = _fail(everywhere, "triton_op", shape, refusal)
    text = render(grid_table(everywhere, prepared_op="triton_op"), ["r"], "rmsnorm_linear", prepared_op="triton_op")
    assert f"no time from it at {len(shapes)} of the table's {len(shapes)} points" in text


def test_an_op_not_named_or_never_timed_in_the_runs_is_silent_nowhere():
    """Runs made before the family had a prepared object, or a table without a dispatch, say nothing of either at
    each point: only an op the runs timed somewhere is missed where it gave no time."""
    rng = np.random.default_rng()
    m = _dispatch_grid(rng, ["512x4096", "1024x4096"])
    m = m[m["provider"] != "triton_op"]
    for table in (grid_table(m), grid_table(m, dispatch="triton_a", prepared_op="triton_op")):
        assert not table["dispatch_silent"].any() and not table["prepared_op_silent"].any()
        assert not table["why"].str.contains("no time from the").any()
    assert "Prepared object" not in render(grid_table(m, prepared_op="triton_op"), ["r"], "r", prepared_op="triton_op")


@pytest.mark.parametrize("timing", ["cold by CUDA events", "warm by CUPTI", "no declared mode"])
@pytest.mark.parametrize("column", ["dispatch", "prepared_op"])
def test_a_dispatch_timed_unlike_the_best_version_is_not_judged_against_it(timing, column):
    """The dispatch (or the prepared object) at 1.01x the best version is within the tie band only where both were
    timed alike: timed otherwise (kprof diff's rule) their ratio measures the timings, so the point is counted as not
    judged, and the why column says which side was timed how. The other points keep their count."""
    rng = np.random.default_rng()
    shapes = [f"{(i + 1) * 512}x4096" for i in range(4)]
    m = _dispatch_grid(rng, shapes).assign(timer="cupti")
    op = "triton_b" if column == "dispatch" else "triton_op"
    for shape in shapes:  # 1.01x the best: in the band, other code than the best's
        best = float(m.loc[(m["provider"] == "triton_a") & (m["shape"] == shape), "gpu_time_us"].iloc[0])
        m.loc[(m["provider"] == op) & (m["shape"] == shape), "gpu_time_us"] = 1.01 * best
        m.loc[(m["provider"] == op) & (m["shape"] == shape), "cold_kernels"] = json.dumps([["_other_kernel", best]])
    unlike = shapes[2]
    m = pd.concat([m[m["shape"] != unlike], _timed(m[m["shape"] == unlike], (op,), timing)], ignore_index=True)
    ops = {"dispatch": "triton_b"} if column == "dispatch" else {"dispatch": "triton_a", "prepared_op": "triton_op"}
    table = grid_table(m, **ops).set_index("shape")
    within, beyond, unjudged = dispatch_counts(table.reset_index(), column)
    assert (within, beyond, unjudged) == (len(shapes) - 1, 0, 1)
    why = table.loc[unlike, "why"]
    said = timed_as(m[(m["provider"] == op) & (m["shape"] == unlike)].iloc[0])
    assert (f"{op} timed {said}" if said else f"{op} from a run that recorded no timing mode") in why
    assert "not compared" in why and "ratio to the best version is not judged" in why
    assert all(op not in str(table.loc[s, "why"]) for s in shapes if s != unlike)


def test_the_summary_says_each_timing_mode_of_the_table_not_the_first_rows():
    """The header's mode is every point's: one mode where all agree, each with its points where they differ, and no
    mode where none was declared (not ``cold`` by default)."""
    rng = np.random.default_rng()
    shapes = [f"{(i + 1) * 512}x4096" for i in range(4)]
    m = _dispatch_grid(rng, shapes).assign(timer="cupti")
    assert "Times: `cold` mode, µs." in render(grid_table(m), ["r"], "rmsnorm")
    warm = pd.concat(
        [m[m["shape"] != shapes[3]], _timed(m[m["shape"] == shapes[3]], tuple(m["provider"]), "warm by CUPTI")]
    )
    text = render(grid_table(warm), ["r"], "rmsnorm")
    assert f"modes differ between points: `cold` at 3 points, `warm` at 1 points ({shapes[3]} bf16)" in text
    none = _timed(m, tuple(m["provider"]), "no declared mode")
    text = render(grid_table(none), ["r"], "rmsnorm")
    assert "no declared timing mode" in text and "`cold`" not in text


def test_a_peer_that_failed_with_a_stored_time_is_said_as_silent():
    """A peer case that failed its check keeps the time it was given, but it is no time of a peer: the point's why
    names the peer with its note, as for a peer that gave none (not left out as a time that is no time)."""
    rng = np.random.default_rng()
    m = _metrics(rng, {MATRIX_POINT: {"triton_a": float(rng.uniform(50, 100)), "torch_compile": 40.0}}).assign(
        note=None
    )
    failed = m["provider"] == "torch_compile"
    m.loc[failed, "ok"] = False
    m.loc[failed, "note"] = "wrong result: max error 3.1e-01"
    row = grid_table(m).iloc[0]
    assert row["best_peer"] is None
    assert "no time from peer(s) here: torch_compile (wrong result: max error 3.1e-01)" in row["why"]
    assert "no valid time" not in row["why"]
