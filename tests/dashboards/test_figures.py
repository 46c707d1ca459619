"""The dashboard's figures alone (Vega-Lite specs and HTML charts, no Streamlit)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("plotly")  # style's palette

from kprof.dashboards import figures, html_chart, style  # noqa: E402
from tests.dashboards.tables import marks  # noqa: E402


def _compare_metrics(rng: np.random.Generator) -> pd.DataFrame:
    """A run as Compare reads it: odd shapes swept in a shuffled (not sorted) order, PyTorch yardsticks and
    Triton versions with random times, a failed case faster than everything, another run's version."""
    shapes = [f"{int(rng.integers(1, 5000))}x{int(rng.integers(3, 9000))}" for _ in range(int(rng.integers(3, 8)))]
    shapes = list(dict.fromkeys(shapes))
    providers = ["torch_eager", "torch_F", "torch_compile", "triton_looped", "triton_one_row", "triton_tuned"]
    rows, idx = [], 0
    for shape in shapes:
        for p in providers:
            t = float(rng.lognormal(3, 1))
            rows.append(
                {
                    "idx": idx,
                    "shape": shape,
                    "dtype": "bf16",
                    "provider": p,
                    "kind": "eager"
                    if p == "torch_eager"
                    else "library"
                    if p == "torch_F"
                    else "compile"
                    if p == "torch_compile"
                    else "triton",
                    "status": "ok",
                    "gpu_time_us": t,
                    "gbps": float(rng.uniform(10, 3000)),
                    "occupancy_theoretical_pct": float(rng.choice([25.0, 50.0, 100.0])),
                }
            )
            idx += 1
        rows.append({**rows[-1], "idx": idx, "provider": "triton_broken", "status": "fail", "gpu_time_us": 1e-3})
        rows.append(
            {**rows[-2], "idx": idx + 1, "provider": "triton_looped @ 58fe", "gpu_time_us": float(rng.lognormal(3, 1))}
        )
        idx += 2
    return pd.DataFrame(rows)


def _by_class(chart: str, cls: str, attr: str = "class") -> list[dict[str, str]]:
    return [e for e in marks(chart, attr) if cls in e.get("class", "").split()]


def test_compare_chart_colours_order_stars_and_dashes():
    rng = np.random.default_rng()
    m = figures.with_baseline(_compare_metrics(rng), "best PyTorch per shape")
    chart = html_chart.compare_panels(m, "bf16", ceiling=3000.0)
    sweep_order = list(dict.fromkeys(m.sort_values("idx")["shape"]))
    ok = m[m["status"] == "ok"]
    fastest = ok.loc[ok.groupby("shape")["gpu_time_us"].idxmin()].set_index("shape")["provider"]
    points = _by_class(chart, "kp-pt")
    titles = [e["_text"] for e in _by_class(chart, "kp-title")]
    assert titles == [
        "GPU time per call",
        "Bandwidth",
        "Speedup over best PyTorch per shape",
        "Theoretical occupancy of the main kernel",
    ]
    # every correct case once per panel, the failed version never
    for panel in ("gpu_time_us", "gbps", "speedup", "occupancy_theoretical_pct"):
        mine = [p for p in points if p["data-panel"] == panel]
        assert sorted((p["data-provider"], p["data-shape"]) for p in mine) == sorted(zip(ok["provider"], ok["shape"]))
        # shapes as categories in the order the run swept them: one x per shape, left to right
        x = {p["data-shape"]: float(p["data-x"]) for p in mine}
        assert all(float(p["data-x"]) == x[p["data-shape"]] for p in mine)
        assert sorted(x, key=x.get) == [s for s in sweep_order if s in x]
        # higher values higher up (smaller y), on the linear and the log axes alike
        by_value = sorted(mine, key=lambda p: float(p["data-value"]))
        ys = [float(p["data-y"]) for p in by_value]
        assert all(a >= b for a, b in zip(ys, ys[1:]))
        # one line segment between each pair of neighbouring points of a version
        lines = [e for e in _by_class(chart, "kp-line") if e["data-panel"] == panel]
        for provider in set(ok["provider"]):
            n = sum(p["data-provider"] == provider for p in mine)
            assert sum(e["data-provider"] == provider for e in lines) == n - 1
    # every version in its own colour, the same as on every other page; another run's in its provider's
    assert all(p["data-colour"] == style.colour(p["data-provider"]) for p in points)
    assert all(f"background:{p['data-colour']}" in p["style"] for p in points)
    assert style.colour("triton_looped @ 58fe") == style.colour("triton_looped")
    added = [p for p in points if p["data-provider"] == "triton_looped @ 58fe"]
    assert added and all("rotate(45deg)" in p["style"] for p in added)  # diamonds
    assert all(
        ("dashed" in e["style"]) == (e["data-provider"] == "triton_looped @ 58fe") for e in _by_class(chart, "kp-line")
    )
    # the star at each shape is the fastest correct version there, in the time and speedup panels only
    stars = _by_class(chart, "kp-best")
    assert {e["data-panel"] for e in stars} == {"gpu_time_us", "speedup"}
    for panel in ("gpu_time_us", "speedup"):
        assert {e["data-shape"]: e["data-provider"] for e in stars if e["data-panel"] == panel} == fastest.to_dict()
    # one legend for the four panels: a box per version, and a rule that keeps its marks opaque when ticked
    boxes = marks(chart, "type")
    assert sorted(b["data-provider"] for b in boxes) == sorted(set(ok["provider"]))
    for b in boxes:
        n = b["class"].removeprefix("kp-i")
        assert f":has(.kp-i{n}:checked) .kp-v{n}{{opacity:1}}" in chart
        assert all(f"kp-v{n}" in p["class"].split() for p in points if p["data-provider"] == b["data-provider"])


def test_compare_chart_log_ticks_rules_and_empty_panels():
    rng = np.random.default_rng()
    m = _compare_metrics(rng).drop(columns="occupancy_theoretical_pct")
    m = figures.with_baseline(m, "PyTorch eager")
    chart = html_chart.compare_panels(m, "bf16", ceiling=2500.0, baseline="PyTorch eager")
    ticks = [e for e in _by_class(chart, "kp-tick") if e["data-panel"] == "gpu_time_us"]
    values = [float(e["data-value"]) for e in ticks]
    times = m.loc[m["status"] == "ok", "gpu_time_us"]
    assert values == sorted(values)
    # the ticks span the data (the next 1-2-5 step is at most 2.5x away) with at least one per decade
    assert values[0] <= times.min() * 2.5 and values[-1] >= times.max() / 2.5
    assert all(b / a <= 10.0 + 1e-9 for a, b in zip(values, values[1:]))
    assert {f"{t:.0e}"[0] for t in values} <= {"1", "2", "5"}  # 1-2-5, never '5, 2, 1000'
    assert [e["_text"] for e in ticks] == [html_chart.time_label(float(e["data-value"])) for e in ticks]
    rules = {e["data-panel"]: float(e["data-rule"]) for e in _by_class(chart, "kp-rule")}
    assert rules == {"gbps": 2500.0, "speedup": 1.0}  # the measured copy ceiling; the baseline itself
    assert "PyTorch eager" in chart
    (empty,) = _by_class(chart, "kp-empty")
    assert empty["data-panel"] == "occupancy_theoretical_pct" and "no occupancy" in empty["_text"]
    assert not [p for p in _by_class(chart, "kp-pt") if p["data-panel"] == "occupancy_theoretical_pct"]


@settings(max_examples=200, deadline=None)
@given(lo=st.floats(0, 1e6), width=st.floats(1e-3, 1e7), most=st.integers(2, 10))
def test_linear_ticks_cover_the_range_in_one_two_five_steps(lo, width, most):
    hi = lo + width
    ticks = html_chart.linear_ticks(lo, hi, most)
    assert ticks[0] <= lo and ticks[-1] >= hi * (1 - 1e-9)
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
    step = max(steps)
    assert max(steps) - min(steps) <= step * 1e-6  # even steps
    assert f"{step:.0e}"[0] in "125"
    assert len(ticks) <= most + 2


def test_html_table_formats_units_and_escapes():
    rng = np.random.default_rng()
    t = float(rng.uniform(1, 99))
    df = pd.DataFrame(
        {
            "provider": ["<script>x</script>", "b"],
            "gpu_time_us": [t, float("nan")],
            "noise": [0.0123, 0.5],
            "speedup": [1.5, 0.25],
            "dram_bytes_per_call": [3.3e9, 2048.0],
            "best": [True, False],
        }
    )
    html = style.html_table(df, pd.Series(["#d4f4dd", ""]))
    assert "<script>" not in html and "&lt;script&gt;" in html  # names are text, never markup
    for shown in (f"{t:.2f}", "—", "1.2%", "1.50×", "3.3G", "2.05k", "✓", "GPU time (µs)", "version"):
        assert f">{shown}<" in html, shown
    assert html.count("background-color:#d4f4dd") == 1


def test_roofline_has_the_memory_roof():
    m = pd.DataFrame(
        {
            "shape": ["1x8", "2x8"],
            "dtype": ["bf16"] * 2,
            "provider": ["a", "a"],
            "status": ["ok"] * 2,
            "gpu_time_us": [1.0, 2.0],
            "bytes": [100, 200],
            "flops": [50, 100],
            "tflops": [0.05, 0.05],
        }
    )
    spec = figures.roofline(m, ceiling_gbps=3000.0)
    points, roof = (layer["data"]["values"] for layer in spec["layer"])
    assert [p["intensity"] for p in points] == [0.5, 0.5] and {p["provider"] for p in points} == {"a"}
    assert all(abs(r["tflops"] / r["intensity"] - 3.0) < 1e-9 for r in roof)  # TFLOP/s = intensity x 3000 GB/s / 1000
    assert "memory roof (3000 GB/s measured)" in spec["layer"][1]["encoding"]["color"]["scale"]["domain"]
    capped = figures.roofline(m, ceiling_gbps=3000.0, peak_tflops=2.0)["layer"][1]["data"]["values"]
    assert max(r["tflops"] for r in capped) == 2.0  # the matrix-product rate caps the roof
    json.dumps(spec, allow_nan=False)  # the browser parses it as JSON: no NaN anywhere


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-3, 1e7), st.floats(1.0, 1e6))
def test_log_ticks_span_the_data_one_decade_apart_at_most(lo, span):
    hi = lo * span
    ticks = figures.nice_ticks(lo, hi)
    assert ticks == sorted(ticks) and 1 <= len(ticks) <= 9
    assert ticks[0] <= lo * 2.5 and ticks[-1] >= hi / 2.5
    assert all(b / a <= 10.0 + 1e-9 for a, b in zip(ticks, ticks[1:]))
    assert {f"{t:.0e}"[0] for t in ticks} <= {"1", "2", "5"}


def _sweep_grid(rng: np.random.Generator) -> pd.DataFrame:
    """What ``kprof.guide.sweep_grid`` returns: one row per pair of values, random times, one failed pair."""
    xs = sorted({int(2 ** rng.integers(5, 15)) for _ in range(5)})
    ys = [1, 2, 4, 8, 16][: int(rng.integers(2, 6))]
    rows = [
        {
            "BLOCK_N": bx,
            "num_warps": wy,
            "status": "ok",
            "gpu_time_us": float(rng.lognormal(3, 0.5)),
            "pct_roof": float(rng.uniform(5, 99)),
            "registers_per_thread": float(rng.integers(20, 255)),
            "params_text": f"BLOCK_N={bx} num_warps={wy}",
            "note": "",
        }
        for bx in xs
        for wy in ys
    ]
    rows[int(rng.integers(len(rows)))].update(status="fail", gpu_time_us=float("nan"), note="max rel err 0.3")
    return pd.DataFrame(rows)


@pytest.mark.parametrize("value", ["gpu_time_us", "pct_roof"])
def test_sweep_heatmap_cells_colours_and_places(value):
    rng = np.random.default_rng()
    grid = _sweep_grid(rng)
    heat = html_chart.sweep_heatmap(grid, "BLOCK_N", "num_warps", value, "t")
    cells = _by_class(heat, "kp-cell")
    assert len(cells) == len(grid)  # one cell per pair of values, failed ones included
    (failed,) = [c for c in cells if c["data-status"] != "ok"]
    assert "background:#e6e6e6" in failed["style"] and "max rel err" in failed["title"]
    ran = [c for c in cells if c["data-status"] == "ok"]
    ok = grid[grid["status"] == "ok"]
    assert sorted(float(c["data-value"]) for c in ran) == pytest.approx(sorted(ok[value]), rel=1e-5)
    # brighter is better: the fastest time (or the highest % of roof) is viridis's brightest, the worst its darkest
    best = (min if value == "gpu_time_us" else max)(ran, key=lambda c: float(c["data-value"]))
    worst = (max if value == "gpu_time_us" else min)(ran, key=lambda c: float(c["data-value"]))
    assert f"background:{html_chart.VIRIDIS[-1]}" in best["style"]
    assert f"background:{html_chart.VIRIDIS[0]}" in worst["style"]
    # x grows to the right, y upwards (small values at the bottom)
    left = {c["data-x"]: float(c["style"].split("left:")[1].split("px")[0]) for c in cells}
    top = {c["data-y"]: float(c["style"].split("top:")[1].split("px")[0]) for c in cells}
    assert sorted(left, key=left.get) == [str(v) for v in sorted(grid["BLOCK_N"].unique())]
    assert sorted(top, key=top.get) == [str(v) for v in sorted(grid["num_warps"].unique(), reverse=True)]
    assert all("regs" in c["title"] and c["data-config"] in c["title"] for c in ran)  # the hover's resources


@given(t=st.floats(0, 1))
def test_viridis_runs_between_its_ends(t):
    c = html_chart.viridis(t)
    assert len(c) == 7 and c.startswith("#")
    assert html_chart.viridis(0) == html_chart.VIRIDIS[0] and html_chart.viridis(1) == html_chart.VIRIDIS[-1]


def test_sweep_heatmap_writes_parameter_values_as_text():
    grid = _sweep_grid(np.random.default_rng())
    grid["BLOCK_N"] = grid["BLOCK_N"].map(lambda v: f"<b>{v}</b>")  # a string-valued parameter
    heat = html_chart.sweep_heatmap(grid, "BLOCK_N", "num_warps", "gpu_time_us", "t")
    assert "<b>" not in heat and "&lt;b&gt;" in heat


def test_speedup_is_blank_where_the_baseline_was_timed_by_another_timer():
    """A baseline whose cold time fell back to CUDA events (about 3 us of event overhead more) against versions
    timed from CUPTI records: the ratio is not one measurement, so the Compare page shows none (the report's rule)."""
    rng = np.random.default_rng()
    t_eager, t_v1, t_v2 = (float(x) for x in rng.uniform(5, 50, 3))
    m = pd.DataFrame(
        {
            "provider": ["torch_eager", "triton_v1", "torch_eager", "triton_v1"],
            "kind": ["pytorch", "triton", "pytorch", "triton"],
            "shape": ["64x4096", "64x4096", "8x4096", "8x4096"],
            "dtype": ["bf16"] * 4,
            "status": ["ok"] * 4,
            "ok": [True] * 4,
            "gpu_time_us": [t_eager, t_v1, t_eager, t_v2],
            "timing_mode": ["cold"] * 4,
            "timer": ["events", "cupti", "cupti", "cupti"],
        }
    )
    got = figures.with_baseline(m, "PyTorch eager").set_index(["shape", "provider"])["speedup"]
    assert np.isnan(got[("64x4096", "triton_v1")])  # events against CUPTI
    assert got[("8x4096", "triton_v1")] == pytest.approx(t_eager / t_v2)
    assert got[("8x4096", "torch_eager")] == pytest.approx(1.0)
