"""Cases timed unlike (kprof diff's rule) make no ratio anywhere in kprof grid, not only between a point's two sides: a
floor against its yardstick (whether a missed target is out of reach; the floor timed alike is the one to judge by), a
run's own sides against another run's when a point is raced in several runs, and a version against the copy ceiling
(timed cold) of the stand-in copy target. The prepared object is no version in a run's own ratio, as in the point's.
And the title names the device the runs measured on. Each test plants the situation in rows shaped as a grid run's
metrics (one reads a real store) and asserts what a correct table and summary say about it."""

from __future__ import annotations

import gzip
import math
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kprof.diff import timed_as
from kprof.grid import MIB, REACH, CopyTarget, GridTargets, RooflineTarget, floor_reach, grid_table
from kprof.grid_render import render, summarize
from tests.toolkit.test_grid import KASMINA, _grid_of_stored_runs, _metrics
from tests.toolkit.test_grid_trust import MATRIX_POINT, TIMINGS, _timed

UNLIKE_COLD_BY_CUPTI = [t for t in TIMINGS if t != "cold by CUPTI"]


def _said(rows: pd.DataFrame, provider: str) -> str:
    """How the why column names a provider's timing (:func:`kprof.grid.timed_unlike`'s words)."""
    t = timed_as(rows[rows["provider"] == provider].iloc[0])
    return f"{provider} timed {t}" if t else f"{provider} from a run that recorded no timing mode"


def _floor_point(rng: np.random.Generator) -> pd.DataFrame:
    """kasmina's point: the version misses 1.111x the copy (cublas here) by far, and the floor alone takes more than
    1.111x it, beyond the cases' 0.1% spread: out of reach where the floor and the copy were timed alike."""
    copy_us = float(rng.uniform(20, 400))  # above SMALL_CALL_US: no run-to-run floor
    kprof = float(rng.uniform(1.3, 2.5))
    times = {
        "triton_a": kprof * copy_us,
        "torch_compile": 3 * kprof * copy_us,
        "cublas": copy_us,
        "copy_through_ids": float(rng.uniform(1.2, 1.6)) * copy_us,
    }
    m = _metrics(rng, {("64x1000x64", "bf16"): times}, noise=0.001).assign(bound="compute")
    return _timed(m, tuple(times), "cold by CUPTI")


@pytest.mark.parametrize("floor_timing", UNLIKE_COLD_BY_CUPTI)
def test_a_floor_timed_unlike_its_yardstick_does_not_judge_the_reach(floor_timing):
    """The miss stands (the version and the copy timed alike), but the floor's time over the copy's would measure the
    two timings: the reach is not judged, and the why says which was timed how."""
    rng = np.random.default_rng()
    alike = _floor_point(rng)
    row = grid_table(alike, targets=KASMINA).iloc[0]
    assert row["target_met"] is False and row["target_reach"] == "out of reach"  # the same rows timed alike
    m = _timed(alike, ("copy_through_ids",), floor_timing)
    table = grid_table(m, targets=KASMINA)
    row = table.iloc[0]
    assert row["verdict"] == "win" and row["target_met"] is False
    assert row["target_reach"] == "reach not judged"
    said = f"not compared: {_said(m, 'copy_through_ids')}, {_said(m, 'cublas')}"
    assert row["why"].startswith(f"reach not judged: {said}")
    assert "whether the target is in reach is not judged here" in row["why"]
    assert "out of reach" not in row["why"] and "takes" not in row["why"]  # no ratio quoted as if it were one
    text = render(table, ["r"], "kasmina")
    assert "met at 0 of 1 points (of the misses, by a floor raced beside the yardstick: 1 reach not judged)" in text
    floor, roof = (m[m["provider"] == p].iloc[0] for p in ("copy_through_ids", "cublas"))
    reach, words = floor_reach(floor, roof, RooflineTarget(ratio=1.111))
    assert reach == REACH[2] and words.startswith(f"reach not judged: {said}")


def _run(rng: np.random.Generator, run: str, kprof_us: float, peer_us: float, timing: str) -> pd.DataFrame:
    """One run's rows of MATRIX_POINT: triton_a and torch_compile, 0.1% spread, timed as ``TIMINGS[timing]``."""
    m = _metrics(rng, {MATRIX_POINT: {"triton_a": kprof_us, "torch_compile": peer_us}}, noise=0.001)
    return _timed(m.assign(run=run, bound="compute"), ("triton_a", "torch_compile"), timing)


@pytest.mark.parametrize("kprof_timing", UNLIKE_COLD_BY_CUPTI)
def test_a_run_whose_sides_were_timed_unlike_gives_no_ratio_to_pool(kprof_timing):
    """Run A wins (both sides cold by CUPTI, the point's best two); run B is slower on both sides and its version was
    timed otherwise than its peer. B's ratio measures the timings: it is no loss that disagrees with A, and it is said
    why it is left out."""
    rng = np.random.default_rng()
    peer = float(rng.uniform(50, 200))
    peer_b = peer * float(rng.uniform(1.0, 1.05))
    a = _run(rng, "run-a", peer * float(rng.uniform(0.75, 0.9)), peer, "cold by CUPTI")
    b = _run(rng, "run-b", peer_b * float(rng.uniform(1.15, 1.3)), peer_b, "cold by CUPTI")
    control = grid_table(pd.concat([a, b], ignore_index=True)).iloc[0]
    assert control["verdict"] == "uncertain" and "the runs disagree" in control["why"]  # alike: pooled, as before
    b = _timed(b, ("triton_a",), kprof_timing)
    m = pd.concat([a, b], ignore_index=True)
    table = grid_table(m)
    row = table.iloc[0]
    assert row["verdict"] == "win" and summarize(table).wins == 1
    assert math.isnan(row["runs_spread"]) and "the runs disagree" not in row["why"]
    said = f"{_said(b, 'triton_a')}, {_said(b, 'torch_compile')}"
    assert f"run run-b left out of the runs' ratios: {said}, so it has none" in row["why"]
    assert "run-a left out" not in row["why"]


@pytest.mark.parametrize("other_timing", UNLIKE_COLD_BY_CUPTI)
def test_runs_of_another_timing_are_not_pooled_with_the_points_best_two(other_timing):
    """Two runs cold by CUPTI hold the point's best two; a third run, each side timed alike but otherwise (warm, by
    CUDA events, or from before modes were declared), is another measurement: its ratio neither spreads theirs nor
    makes a disagreement. The two cold runs' spread is pooled as before."""
    rng = np.random.default_rng()
    peers = [float(rng.uniform(50, 200)) for _ in range(2)]
    ratios = [float(rng.uniform(0.75, 0.8)) for _ in range(2)]  # wins by more than their spread
    cold = [_run(rng, f"run-{i}", r * p, p, "cold by CUPTI") for i, (r, p) in enumerate(zip(ratios, peers))]
    slow = max(peers) * float(rng.uniform(1.2, 1.4))
    other = _run(rng, "run-other", slow * float(rng.uniform(1.1, 1.3)), slow, other_timing)  # a loss alone
    m = pd.concat([*cold, other], ignore_index=True)
    row = grid_table(m).iloc[0]
    best = min(range(2), key=lambda i: ratios[i] * peers[i])
    assert row["best_kprof"] == "triton_a" and row["kprof_us"] == pytest.approx(ratios[best] * peers[best])
    assert row["peer_us"] == pytest.approx(min(peers))
    assert row["verdict"] == "win"
    assert row["runs_spread"] == pytest.approx(abs(ratios[0] - ratios[1]) / (sum(ratios) / 2))
    assert "the runs disagree" not in row["why"]
    timing = timed_as(other.iloc[0])
    said = f"timed {timing}" if timing else "from a run that recorded no timing mode"
    left = f"run run-other left out of the runs' ratios: its cases were {said}, the point's best two timed cold"
    assert left in row["why"]
    alike = pd.concat([*cold, _run(rng, "run-other", slow * 1.2, slow, "cold by CUPTI")], ignore_index=True)
    alike = grid_table(alike).iloc[0]
    assert alike["verdict"] == "uncertain" and "the runs disagree" in alike["why"]  # one timing: pooled, as before


def _device_in(title: str) -> str | None:
    """The device as a reader of the title (the scoreboard) takes it: after `` · device `` up to the next `` · ``."""
    found = re.search(r" · device (.+?)(?: · |$)", title)
    return found.group(1) if found else None


def test_the_title_names_the_device_where_given_and_nothing_where_not():
    rng = np.random.default_rng()
    m = _metrics(rng, {MATRIX_POINT: {"triton_a": float(rng.uniform(10, 20)), "torch_compile": 30.0}})
    table = grid_table(m)
    name = f"NVIDIA H{int(rng.integers(100, 300))}"
    title = render(table, ["r", "s"], "rmsnorm", codes=["0a1b2c3d"] * 2, device=name).splitlines()[0]
    assert title == f"# kprof grid · rmsnorm · runs r, s · device {name} · kernel code 0a1b2c3d"
    assert _device_in(title) == name
    bare = render(table, ["r"], "rmsnorm", device=name).splitlines()[0]
    assert bare == f"# kprof grid · rmsnorm · runs r · device {name}" and _device_in(bare) == name
    for text in (render(table, ["r"], "rmsnorm", codes=["0a1b2c3d"]), render(table, ["r"], "rmsnorm")):
        title = text.splitlines()[0]
        assert "device" not in title and _device_in(title) is None
    odd = render(table, ["r"], "rmsnorm", codes=["0a1b2c3d"], device=f"{name} · MIG 1g · ·\n18gb").splitlines()
    assert odd[0] == f"# kprof grid · rmsnorm · runs r · device {name} MIG 1g 18gb · kernel code 0a1b2c3d"
    assert _device_in(odd[0]) == f"{name} MIG 1g 18gb" and odd[1] == ""


def test_kprof_grid_names_the_runs_device_in_the_title(tmp_path):
    """End to end: stored GPU runs recorded on an H100; ``kprof grid``'s title names it for a reader to take."""
    ids, cmd = _grid_of_stored_runs(tmp_path, [(50.0, 53.0, "00ff"), (50.0, 53.0, "00ff")])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    title = out.stdout.splitlines()[0]
    assert title.startswith(f"# kprof grid · rmsnorm · runs {ids[0]}, {ids[1]} · device H100 · kernel code ")
    assert _device_in(title) == "H100"


@pytest.mark.parametrize("timing", ["warm by CUPTI", "no declared mode"])
def test_a_copy_target_is_not_judged_on_a_version_timed_unlike_the_ceiling(timing):
    """The stand-in copy target reads the best version's % of the run's copy ceiling, which is timed cold: a version
    timed warm (its inputs from L2) or in a run that declared no mode is not set against it, met or missed."""
    rng = np.random.default_rng()
    points = {("8192x65536", "bf16"): {"triton_a": float(rng.uniform(50, 100)), "torch_compile": 1e3}}
    m = _metrics(rng, points).assign(pct_peak_bw=float(rng.uniform(96, 99)), bytes=2e9, timer="cupti")
    target = GridTargets(copy=CopyTarget(0.95, 64 * MIB))
    assert grid_table(m, targets=target).iloc[0]["target_met"] is True  # cold: judged
    row = grid_table(_timed(m, tuple(m["provider"]), timing), targets=target).iloc[0]
    assert row["target_met"] is None
    assert "target not judged" in row["why"] and "the copy ceiling it is a % of timed cold" in row["why"]


TIMED_TWO_WAYS = Path(__file__).resolve().parents[2] / "benchmarks/results/grid/h200-timing-rule/k.db.gz"


def test_a_real_warm_run_beside_a_cold_one_changes_no_verdict_of_the_cold_runs(tmp_path):
    """rmsnorm bf16 at 3 points on an H200, one run declared cold and one warm (the same code). Tabulated together,
    the warm run is another measurement: its ratios are not pooled with the cold run's (before, 2048x8192 read
    uncertain by the two runs' 2.9% apart), so every point reads as the cold run alone does, and says the warm run
    was left out. The title names the runs' device."""
    from kprof.store import RunStore

    db = tmp_path / "kprof.db"
    db.write_bytes(gzip.decompress(TIMED_TWO_WAYS.read_bytes()))
    st = RunStore(db, create=False)
    cold, warm = (r for r in st.runs().sort_values("created_at")["id"])
    metrics = {r: st.metrics(r).assign(run=r) for r in (cold, warm)}
    assert set(metrics[cold]["timing_mode"]) == {"cold"} and set(metrics[warm]["timing_mode"]) == {"warm"}
    alone = grid_table(metrics[cold], "triton_tuned").set_index("shape")
    both = grid_table(pd.concat(metrics.values(), ignore_index=True), "triton_tuned").set_index("shape")
    assert len(both) == 3
    for shape in both.index:
        assert both.loc[shape, "verdict"] == alone.loc[shape, "verdict"]
        assert both.loc[shape, "spread"] == pytest.approx(alone.loc[shape, "spread"])
        assert f"run {warm} left out of the runs' ratios: its cases were timed warm" in both.loc[shape, "why"]
    device = st.run(cold)["device_name"]
    assert device.startswith("NVIDIA")
    title = render(both.reset_index(), [cold, warm], "rmsnorm", "triton_tuned", device=device).splitlines()[0]
    assert title == f"# kprof grid · rmsnorm · runs {cold}, {warm} · device {device}"


@pytest.mark.parametrize("floor_timing", UNLIKE_COLD_BY_CUPTI)
def test_a_floor_timed_like_the_yardstick_judges_the_reach_beside_a_slower_one_timed_unlike(floor_timing):
    """Two floors: the slower timed otherwise than the copy, the other timed alike and over 1.111x the copy by far.
    The reach is judged by the floor that can be compared (out of reach), not left unjudged by the slower one."""
    rng = np.random.default_rng()
    m = _floor_point(rng)
    copy_us = float(m.loc[m["provider"] == "cublas", "gpu_time_us"].iloc[0])
    slower = m[m["provider"] == "copy_through_ids"].assign(provider="other_floor", gpu_time_us=3 * copy_us)
    m = pd.concat([m, _timed(slower, ("other_floor",), floor_timing)], ignore_index=True)
    row = grid_table(m, targets=KASMINA).iloc[0]
    assert row["target_met"] is False and row["target_reach"] == "out of reach"
    assert "copy_through_ids" in row["why"] and "not compared" not in row["why"]


def test_the_prepared_object_is_no_version_in_any_runs_ratio():
    """Two runs alike, each a loss for the best version; run B also timed the ops API's prepared object (kind triton,
    much faster). The point's best version leaves that object out, so each run's own ratio must too: otherwise B
    reads as a win and the runs seem to disagree."""
    rng = np.random.default_rng()
    peer = float(rng.uniform(50, 200))
    a = _run(rng, "run-a", 1.2 * peer, peer, "cold by CUPTI")
    b = _run(rng, "run-b", 1.2 * peer, peer, "cold by CUPTI")
    held = b[b["provider"] == "triton_a"].assign(provider="triton_op", gpu_time_us=0.7 * peer)
    m = pd.concat([a, b, held], ignore_index=True)
    row = grid_table(m, prepared_op="triton_op").iloc[0]
    assert row["best_kprof"] == "triton_a" and row["verdict"] == "loss"
    assert "the runs disagree" not in row["why"]
