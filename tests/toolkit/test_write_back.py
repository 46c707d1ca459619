"""A cold call starts with L2 clean, so the stores it makes are still in L2 as dirty lines when it ends and the next
kernel pays their write-back: on an H200 up to 8-9 µs a call (benchmarks/results/write-back/). kprof measures it
beside the cold time (the flush after a call against a flush after a flush), shows it in the report, and
``kprof grid`` calls no verdict and judges no target that counting it would turn. Each test plants the situation."""

from __future__ import annotations

import gzip
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from kprof.grid import (
    WIN,
    CopyTarget,
    GridTargets,
    RooflineTarget,
    counted_verdict,
    grid_table,
    verdict,
    with_writeback,
)
from kprof.kernels import discover
from kprof.metrics import mode_fields, sum_noise
from kprof.registry import YARDSTICK_KINDS
from kprof.report import LEFT_MARK_FRACTION, _left_mark, render
from kprof.timing import FLUSH_KERNEL_NAME, WRITEBACK, KernelRecord, left_behind_from_records
from tests.toolkit.test_grid import _metrics
from tests.toolkit.test_report import RUN, section

SPIN = "void at::cuda::(anonymous namespace)::spin_kernel(long)"
FLUSH = f"{FLUSH_KERNEL_NAME}_0d1d2d"


def _session(rng: np.random.Generator, left_us: list[float], call_kernels: int = 2) -> list[KernelRecord]:
    """Records of :func:`kprof.timing.measure_left_behind`'s session: per repetition spin, flush, the call's kernels,
    the drain flush (the clean one's time plus what the call left), the clean flush; random durations and gaps."""
    out, t = [], 0

    def rec(name: str, ns: int) -> None:
        nonlocal t
        out.append(KernelRecord(name, t, t + ns))
        t += ns + int(rng.integers(0, 3000))

    for left in left_us:
        clean = int(rng.integers(45_000, 60_000))
        rec(SPIN, int(rng.integers(100_000, 300_000)))
        rec(FLUSH, int(rng.integers(45_000, 60_000)))
        for k in range(call_kernels):
            rec(f"_call_kernel_{k}", int(rng.integers(2_000, 90_000)))
        rec(FLUSH, clean + round(left * 1e3))
        rec(FLUSH, clean)
    return out


def test_the_write_back_is_the_drain_flush_over_the_clean_one():
    rng = np.random.default_rng()
    left = [float(v) for v in rng.uniform(-1.0, 9.0, size=12).round(3)]
    got = left_behind_from_records(_session(rng, left), reps=12)
    assert got == pytest.approx(left, abs=1e-6)
    # a kernel recorded before the first spin (an allocation's fill) is not read as the spin
    fill = KernelRecord("void at::native::vectorized_elementwise_kernel<FillFunctor>", -5000, -4000)
    assert left_behind_from_records([fill, *_session(rng, left)], reps=12) == pytest.approx(left, abs=1e-6)


def test_records_that_are_not_the_session_give_no_figure():
    """A repetition without its clean flush, one without the call between the flushes, or fewer repetitions than
    asked for (records dropped) give nothing rather than a figure read off the wrong kernels."""
    rng = np.random.default_rng()
    whole = _session(rng, [4.0, 5.0, 6.0])
    assert left_behind_from_records(whole, reps=4) == ()
    assert left_behind_from_records(whole[:-1], reps=3) == ()  # the last clean flush lost
    no_call = _session(rng, [4.0, 5.0, 6.0], call_kernels=0)
    assert left_behind_from_records(no_call, reps=3) == ()
    assert left_behind_from_records([], reps=3) == ()


def test_metrics_carry_the_median_write_back_and_the_cold_time_with_it():
    rng = np.random.default_rng()
    cold = tuple(rng.uniform(15, 16, size=40))
    left = tuple(rng.uniform(6, 9, size=12))
    res = SimpleNamespace(mode_samples_us={"cold": cold, WRITEBACK: left}, timing_mode="cold", timer="cupti")
    out = mode_fields(res)
    assert out["cold_writeback_us"] == pytest.approx(float(np.median(left)))
    assert out["cold_with_writeback_us"] == pytest.approx(float(np.median(cold)) + float(np.median(left)))
    before = mode_fields(SimpleNamespace(mode_samples_us={"cold": cold}, timing_mode="cold", timer="cupti"))
    assert np.isnan(before["cold_writeback_us"]) and np.isnan(before["cold_with_writeback_us"])


def test_the_report_shows_the_write_back_and_marks_gb_s_that_count_bytes_still_in_l2():
    """The rmsnorm H100 run's metrics with a write-back planted on one case over the mark's share of its cold time
    and one under it: the table gains the +wb column, and only the first case's GB/s carries the mark."""
    from tests.toolkit.test_report import H100

    m = pd.read_csv(H100)
    m["ok"] = m["ok"].astype(bool)
    g = m[(m["shape"] == "16384x4096") & (m["dtype"] == "bf16") & (m["status"] == "ok")]
    g = g[~g["kind"].isin(YARDSTICK_KINDS)]  # a yardstick's row names its kind beside the provider
    over, under = g.index[0], g.index[1]
    m["cold_us"] = m["gpu_time_us"]
    m.loc[over, "cold_writeback_us"] = 2 * LEFT_MARK_FRACTION * m.loc[over, "cold_us"]
    m.loc[under, "cold_writeback_us"] = 0.5 * LEFT_MARK_FRACTION * m.loc[under, "cold_us"]
    md = render(RUN, m)
    header = md.splitlines()[md.splitlines().index("## bf16 · 16384x4096") + 2]
    assert "+wb µs" in header
    rows = {r.split("|")[1].strip().strip("*"): r for r in section(md, "## bf16 · 16384x4096")}
    for i, marked in ((over, True), (under, False)):
        cells = [c.strip() for c in rows[m.loc[i, "provider"]].split("|")]
        assert cells[5].endswith("†") is marked, cells
        assert f"{m.loc[i, 'cold_writeback_us']:.1f}" in cells
    assert "+wb µs" not in render(RUN, m.drop(columns=["cold_writeback_us"]))  # runs from before: no column
    assert _left_mark(SimpleNamespace(cold_writeback_us=float("nan"), cold_us=10.0)) == ""


def _memory_point(rng: np.random.Generator, times: dict[str, float], left: dict[str, float]) -> pd.DataFrame:
    """One memory-bound point over SMALL_CALL_US, cold by CUPTI, each provider leaving ``left[p]`` µs in L2."""
    m = _metrics(rng, {("4096x65536", "bf16"): times}, noise=0.001).assign(timer="cupti")
    m["cold_us"] = m["gpu_time_us"]
    m["cold_writeback_us"] = m["provider"].map(left)
    m["cold_with_writeback_us"] = m["cold_us"] + m["cold_writeback_us"]
    return m


def test_a_win_that_counting_the_write_back_turns_is_not_called():
    """triton_a 0.85x torch_compile by cold times, but it left 60 µs in L2 where torch.compile left 10: counted,
    1.0x. The point is uncertain and the why gives both ratios and what each left; where both left the same, the
    win stands and nothing is said of it."""
    rng = np.random.default_rng()
    base = float(rng.uniform(300, 400))
    times = {"triton_a": 0.85 * base, "torch_compile": base}
    turned = grid_table(_memory_point(rng, times, {"triton_a": 60.0 + 0.15 * base, "torch_compile": 10.0})).iloc[0]
    assert turned["verdict"] == "uncertain"
    assert "win at 0.850 by cold times" in turned["why"] and "with the write-back each call left in L2" in turned["why"]
    assert "triton_a left" in turned["why"] and "torch_compile left 10.0 µs" in turned["why"]
    alike = grid_table(_memory_point(rng, times, {"triton_a": 8.0, "torch_compile": 8.0})).iloc[0]
    assert alike["verdict"] == "win" and "write-back" not in alike["why"]
    # counted, the ratio lands within the cases' spread of the tie band: that view decides nothing, the win stands
    near = {"triton_a": 0.9997 * WIN * (base + 10.0) - 0.85 * base, "torch_compile": 10.0}
    near_m = _memory_point(rng, times, near)
    kp, peer = (near_m[near_m["provider"] == p].iloc[0] for p in ("triton_a", "torch_compile"))
    near_row = grid_table(near_m).iloc[0]
    assert verdict(with_writeback(kp, peer), near_row["spread"]) == "uncertain"
    assert near_row["verdict"] == "win" and "write-back" not in near_row["why"]
    unmeasured = _memory_point(rng, times, {"triton_a": 60.0, "torch_compile": 10.0})
    unmeasured["cold_with_writeback_us"] = np.nan  # runs from before the write-back was measured
    assert grid_table(unmeasured).iloc[0]["verdict"] == "win"


def test_a_target_met_by_cold_times_and_missed_with_the_write_back_is_not_judged():
    """A version 1.2x its yardstick meets a 1.3x target by cold times; it left 40 µs in L2, the yardstick none, which
    counted read 1.4x. Not judged, the why saying both; where counting it keeps it met, met."""
    rng = np.random.default_rng()
    roof = float(rng.uniform(200, 300))
    times = {"triton_a": 1.2 * roof, "torch_compile": 2.0 * roof, "cublas": roof}
    targets = GridTargets(roofline=(RooflineTarget(ratio=1.3),))
    left = {"triton_a": 0.2 * roof, "torch_compile": 0.0, "cublas": 0.0}
    m = _memory_point(rng, times, left)
    row = grid_table(m, targets=targets).iloc[0]
    assert row["target_met"] is None
    assert row["why"].startswith("target not judged: 1.200x the yardstick by cold times, 1.400x with the write-back")
    kp, yard = (m[m["provider"] == p].iloc[0] for p in ("triton_a", "cublas"))
    assert with_writeback(kp, yard) == pytest.approx(1.4)
    kept = grid_table(_memory_point(rng, times, {p: 0.0 for p in times}), targets=targets).iloc[0]
    assert kept["target_met"] is True and "write-back" not in kept["why"]
    assert np.isnan(with_writeback(kp.copy().replace({"cold": "warm"}), yard))  # a warm ranking: not comparable


def test_a_turn_within_the_counted_times_own_spread_is_no_turn():
    """12 write-back repetitions a case move by 1.5-3.6 µs each, up to 10% of a 20 µs call. A win at 0.85x by cold
    times that counting the write-back puts at 1.0x (a tie) stands where the counted times spread by 20%, and is
    withheld where they spread by 1%; a target met at 1.2x (against 1.3x) and missed at 1.4x counted is judged where
    the counted times spread by 10% (0.1 of 1.3x is within it) and withheld at 2%; a copy-ceiling target the same."""
    rng = np.random.default_rng()
    base = float(rng.uniform(300, 400))
    times = {"triton_a": 0.85 * base, "torch_compile": base}
    left = {"triton_a": 60.0 + 0.15 * base, "torch_compile": 10.0}

    def point(noise: float, times: dict[str, float] = times, left: dict[str, float] = left) -> pd.DataFrame:
        return _memory_point(rng, times, left).assign(cold_with_writeback_noise=noise)

    assert grid_table(point(0.20)).iloc[0]["verdict"] == "win"
    assert grid_table(point(0.01)).iloc[0]["verdict"] == "uncertain"
    assert counted_verdict("win", 1.0, 0.20) == "" and counted_verdict("win", 1.0, 0.01) == "tie"
    assert counted_verdict("tie", 0.5, 0.01) == "win" and counted_verdict("tie", 0.97, 0.20) == ""
    assert (
        counted_verdict("loss", 1.0, 0.0) == "tie"
        and counted_verdict("loss", 1.0, 0.05) == ""
        and counted_verdict("uncertain", 0.5, 0.0) == ""
    )

    roof = float(rng.uniform(200, 300))
    yard = {"triton_a": 1.2 * roof, "torch_compile": 2.0 * roof, "cublas": roof}
    targets = GridTargets(roofline=(RooflineTarget(ratio=1.3),))
    wb = {"triton_a": 0.2 * roof, "torch_compile": 0.0, "cublas": 0.0}
    assert grid_table(point(0.10, yard, wb), targets=targets).iloc[0]["target_met"] is True
    assert grid_table(point(0.02, yard, wb), targets=targets).iloc[0]["target_met"] is None

    copy_target = GridTargets(copy=CopyTarget(0.95, 64 * 2**20))
    # 97% of the ceiling by its cold time; its write-back of a tenth of the cold time makes it 88.2% counted
    ceiling = point(0.02, times, {"triton_a": 0.085 * base, "torch_compile": 0.0}).assign(pct_peak_bw=97.0, bytes=1e9)
    row = grid_table(ceiling, targets=copy_target).iloc[0]
    assert row["target_met"] is None and "88.2% with the write-back" in row["why"]
    wide = ceiling.assign(cold_with_writeback_noise=0.10)
    assert grid_table(wide, targets=copy_target).iloc[0]["target_met"] is True


def test_the_counted_times_spread_adds_the_two_sessions_iqrs_in_quadrature():
    rng = np.random.default_rng()
    cold, left = rng.uniform(20, 22, size=200), rng.uniform(5, 9, size=12)
    iqr = [float(np.subtract(*np.percentile(v, [75, 25]))) for v in (cold, left)]
    want = np.hypot(*iqr) / (np.median(cold) + np.median(left))
    assert sum_noise(list(cold), list(left)) == pytest.approx(want)
    assert np.isnan(sum_noise(list(cold), [])) and np.isnan(sum_noise([], list(left)))
    fields = mode_fields(
        SimpleNamespace(mode_samples_us={"cold": list(cold), WRITEBACK: list(left)}, timing_mode="cold", timer="cupti")
    )
    assert fields["cold_with_writeback_noise"] == pytest.approx(want)


RACED = Path(__file__).resolve().parents[2] / "benchmarks/results/write-back/grid-a35663f2/k.db.gz"


def _opened(gz: Path, tmp_path: Path):
    """A committed gzipped run store, opened read-only from a plain copy under ``tmp_path``."""
    from kprof.store import RunStore

    db = tmp_path / "kprof.db"
    db.write_bytes(gzip.decompress(gz.read_bytes()))
    return RunStore(db, create=False)


def test_on_a_real_h200_run_the_write_back_turns_a_target_only_past_the_counted_times_spread(tmp_path):
    """Ten rmsnorm bf16 points of 64 MiB and more raced on an H200 with the write-back measured; the run's store
    predates ``cold_with_writeback_noise``, so it is derived from the store's own samples as a run now stores it.
    Every timed case carries the write-back; at each point the table withholds the target exactly where the ratio to
    the copy, each side's write-back counted, lies on the other side of the target by more than the larger of the
    point's tolerance and the counted times' spread, and calls no verdict that counting it would turn. The run has a
    point where the counted ratio is on the other side within that spread (2048x8192: 1.021x the copy by cold times,
    1.103x counted, and the copy's 12 write-back repetitions spread 10%): its target is judged by cold times."""
    from kprof.grid import counted_spread, pair_spread
    from kprof.metrics import sum_noise

    st = _opened(RACED, tmp_path)
    (run,) = st.runs()["id"]
    m = st.metrics(run)
    samples = st.samples(run)
    by_kind = {k: g.groupby("case")["value"].apply(list) for k, g in samples.groupby("kind")}
    m["cold_with_writeback_noise"] = [
        sum_noise(by_kind["cold"].get(c, []), by_kind[WRITEBACK].get(c, [])) for c in m["case"]
    ]
    timed = m[m["status"] == "ok"]
    assert timed["cold_writeback_us"].notna().all() and (timed["cold_with_writeback_us"] > timed["cold_us"] - 1).all()
    assert timed["cold_with_writeback_noise"].between(0.001, 0.5).all()
    targets = discover()["rmsnorm"].grid_targets()  # the family's targets, as kprof grid reads them
    table = grid_table(m, "triton_tuned", targets=targets).set_index("shape")
    before = grid_table(m.drop(columns=["cold_with_writeback_us"]), "triton_tuned", targets=targets)
    before = before.set_index("shape")
    other_side_within_spread = 0
    for shape, row in table.iterrows():
        g = m[m["shape"] == shape]
        kp = g[g["provider"] == row["best_kprof"]].iloc[0]
        yard = g[g["kind"] == "roofline"].iloc[0]
        target = targets.for_point(shape, str(kp["bound"]), float(kp["bytes"]))
        vs_wb = with_writeback(kp, yard)
        assert not np.isnan(vs_wb)
        judged = before.loc[shape, "target_met"]
        other_side = judged is not None and (vs_wb <= target.ratio) != judged
        past = abs(vs_wb - target.ratio) > counted_spread(pair_spread(kp, yard), kp, yard) * target.ratio
        if row["target_met"] is None and "with the write-back" in row["why"]:
            assert other_side and past
        else:
            assert row["target_met"] == judged and not (other_side and past)
            other_side_within_spread += other_side
        assert (row["verdict"] == before.loc[shape, "verdict"]) or "by cold times" in row["why"]
    assert other_side_within_spread >= 1
    assert table.loc["2048x8192", "target_met"] is True


NEAR_LINE = RACED.parents[1] / "near-line-c851dd5b/norms-k.db.gz"


def test_on_h200_runs_near_the_line_no_target_turns_on_a_write_back_within_its_spread(tmp_path):
    """rmsnorm and add_rmsnorm at 16-bit target points near the copy target's line (15-130 µs calls), raced on an H200
    with the write-back and its spread measured (the GPU stored ``cold_with_writeback_noise`` itself). At each point
    the table withholds the target exactly where the counted ratio is on the other side of the target past the
    counted times' spread. Some points have a counted ratio on the other side past the cold ratio's tolerance but
    within that spread (add_rmsnorm 2048x4096: 1.004-1.006x the copy cold, 1.08-1.10x counted, spread 10-12%): their
    targets are judged by cold times."""
    from kprof.grid import counted_spread, pair_spread

    st = _opened(NEAR_LINE, tmp_path)
    within_spread = 0
    for run in st.runs()["id"]:
        m = st.metrics(run)
        timed = m[m["status"] == "ok"]
        assert timed["cold_with_writeback_noise"].between(0.001, 0.5).all()
        targets = discover()[str(m["family"].iloc[0])].grid_targets()
        table = grid_table(m, "triton_tuned", targets=targets).set_index(["shape", "dtype"])
        for (shape, dtype), row in table.iterrows():
            g = timed[(timed["shape"] == shape) & (timed["dtype"] == dtype)]
            kp, yard = (g[g["provider"] == p].iloc[0] for p in ("triton_tuned", "copy_bytes"))
            target = targets.for_point(shape, str(kp["bound"]), float(kp["bytes"]))
            cold, counted = float(kp["cold_us"]) / float(yard["cold_us"]), with_writeback(kp, yard)
            other_side = (counted <= target.ratio) != (cold <= target.ratio)
            gap = abs(counted - target.ratio) / target.ratio
            withheld = row["target_met"] is None and "with the write-back" in row["why"]
            assert withheld == (other_side and gap > counted_spread(pair_spread(kp, yard), kp, yard))
            within_spread += other_side and gap > pair_spread(kp, yard) and not withheld
    assert within_spread >= 1


def test_kprof_diff_says_where_counting_the_write_back_reads_the_other_way(tmp_path):
    """B 12% slower than A by cold times, but A's calls left 30 µs of write-back in L2 and B's none (B streams its
    stores out inside the call): with it counted B is faster. The verdict stays SLOWER, on the cold samples; a warning
    names the case and both ratios. A case whose write-back agrees with its verdict, and runs that never measured
    it, get no such warning."""
    from kprof.diff import diff_runs
    from kprof.store import RunStore
    from tests.toolkit.test_diff_trust_verdicts import COLD, _run

    rng = np.random.default_rng()
    st = RunStore(tmp_path / "s.db")

    def left(cold_us: float, wb: float) -> dict:
        return {**COLD, "cold_us": cold_us, "cold_writeback_us": wb, "cold_with_writeback_us": cold_us + wb}

    a = _run(st, [("triton_a", 100.0, left(100.0, 30.0)), ("triton_b", 100.0, left(100.0, 8.0))], rng)
    b = _run(st, [("triton_a", 112.0, left(112.0, 0.0)), ("triton_b", 112.0, left(112.0, 8.0))], rng)
    res = diff_runs(st, a, b)
    verdicts = dict(zip(res.cases["provider"], res.cases["verdict"]))
    assert verdicts == {"triton_a": "SLOWER", "triton_b": "SLOWER"}
    (warning,) = [w for w in res.warnings if "write-back" in w]
    assert warning.startswith("1 case(s) read the other way") and "rmsnorm/triton_a/64x4096/bf16 (SLOWER at" in warning
    assert "triton_b" not in warning and f"{112 / 130:.3f} with it" in warning
    old = _run(st, [("triton_a", 100.0, COLD), ("triton_b", 100.0, COLD)], rng)
    new = _run(st, [("triton_a", 112.0, COLD), ("triton_b", 112.0, COLD)], rng)
    assert not [w for w in diff_runs(st, old, new).warnings if "write-back" in w]
    # the counted times spread by 20% (their 12 write-back repetitions): 0.862 is within it, no warning
    noisy = {**left(100.0, 30.0), "cold_with_writeback_noise": 0.2}
    a2 = _run(st, [("triton_a", 100.0, noisy)], rng)
    b2 = _run(st, [("triton_a", 112.0, {**left(112.0, 0.0), "cold_with_writeback_noise": 0.2})], rng)
    noisy_res = diff_runs(st, a2, b2)
    assert list(noisy_res.cases["verdict"]) == ["SLOWER"]
    assert not [w for w in noisy_res.warnings if "write-back" in w]
