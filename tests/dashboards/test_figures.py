"""The dashboard's figures alone (Vega-Lite specs, no Streamlit)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("plotly")  # style's palette

from kprof.dashboards import figures, style  # noqa: E402


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


def _layers(spec: dict):
    for row in spec["vconcat"]:
        for panel in row["hconcat"]:
            yield panel, panel["layer"]


def test_compare_spec_colours_order_stars_and_dashes():
    rng = np.random.default_rng()
    m = figures.with_baseline(_compare_metrics(rng), "best PyTorch per shape")
    spec = figures.compare_panels(m, "bf16", ceiling=3000.0)
    json.dumps(spec, allow_nan=False)  # the browser parses it as strict JSON
    sweep_order = list(dict.fromkeys(m.sort_values("idx")["shape"]))
    ok = m[m["status"] == "ok"]
    fastest = ok.loc[ok.groupby("shape")["gpu_time_us"].idxmin()].set_index("shape")["provider"]
    panels = list(_layers(spec))
    assert len(panels) == 4
    for _, layers in panels:
        for layer in layers:
            enc = layer.get("encoding", {})
            if "x" in enc:  # shapes as categories, in the order the run swept them
                assert enc["x"]["sort"] == sweep_order and enc["x"]["type"] == "nominal"
            if "color" in enc:  # every version in its own colour, the same as on every other page
                scale = enc["color"]["scale"]
                assert all(c == style.colour(p) for p, c in zip(scale["domain"], scale["range"]))
                assert set(scale["domain"]) == set(ok["provider"])  # the failed version is never drawn
    time_panel = panels[0][1]
    points = time_panel[0]["data"]["values"]
    assert "triton_broken" not in {p["provider"] for p in points}
    starred = {p["shape"]: p["provider"] for p in time_panel[1]["data"]["values"] if p["best"]}
    assert starred == fastest.to_dict()  # the star at each shape is the fastest correct version there
    assert time_panel[1]["mark"]["size"] > time_panel[0]["mark"]["point"]["size"]
    assert "datum.best" in json.dumps(time_panel[1]["transform"])
    # another run's version: its provider's colour, dashed, in every panel it has values for
    added = [p for p in points if p["provider"] == "triton_looped @ 58fe"]
    assert added and {p["run"] for p in added} == {figures.ADDED_RUN}
    dash = time_panel[0]["encoding"]["strokeDash"]["scale"]
    assert dict(zip(dash["domain"], map(tuple, dash["range"])))[figures.ADDED_RUN] != (1, 0)
    assert style.colour("triton_looped @ 58fe") == style.colour("triton_looped")
    # one legend-bound selection, and every panel's lines listen to it (the panels are linked)
    params = [p for _, layers in panels for layer in layers for p in layer.get("params", [])]
    assert [(p["name"], p["bind"]) for p in params] == [("pick", "legend")]
    assert all(layers[0]["encoding"]["opacity"]["condition"]["param"] == "pick" for _, layers in panels)


def test_compare_spec_log_ticks_rules_and_empty_panels():
    rng = np.random.default_rng()
    m = _compare_metrics(rng).drop(columns="occupancy_theoretical_pct")
    m = figures.with_baseline(m, "PyTorch eager")
    spec = figures.compare_panels(m, "bf16", ceiling=2500.0, baseline="PyTorch eager")
    (_, time_layers), (_, bw_layers), (speed, speed_layers), (_, occ_layers) = _layers(spec)
    y = time_layers[0]["encoding"]["y"]
    ticks = y["axis"]["values"]
    times = m.loc[m["status"] == "ok", "gpu_time_us"]
    assert y["scale"]["type"] == "log" and ticks == sorted(ticks)
    # the ticks span the data (the next 1-2-5 step is at most 2.5x away) with at least one per decade
    assert ticks[0] <= times.min() * 2.5 and ticks[-1] >= times.max() / 2.5
    assert all(b / a <= 10.0 + 1e-9 for a, b in zip(ticks, ticks[1:]))
    assert {f"{t:.0e}"[0] for t in ticks} <= {"1", "2", "5"}  # 1-2-5, never '5, 2, 1000'
    assert "ms" in y["axis"]["labelExpr"] and "µs" in y["axis"]["labelExpr"]
    rules = [layer for layer in bw_layers if "layer" in layer]
    assert rules and rules[0]["data"]["values"][0]["y"] == 2500.0  # the measured copy ceiling
    assert "PyTorch eager" in speed["title"]
    assert any(layer.get("data", {}).get("values", [{}])[0].get("y") == 1.0 for layer in speed_layers)
    assert len(occ_layers) == 1 and "no occupancy" in occ_layers[0]["data"]["values"][0]["text"]


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
