"""The dashboard's figures alone (plotly, no Streamlit)."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("plotly")

from kprof.dashboards import figures  # noqa: E402
from kprof.profilers import ncu, nsys  # noqa: E402


def test_timeline_lanes_hover_and_folding(data_file):
    t = nsys.parse(data_file("nsys_rmsnorm.sqlite"))
    fig, note = figures.timeline(t)
    assert note is None
    kernels, calls = fig.data[0], fig.data[1]
    assert len(kernels.x) == len(t[t["kind"] != "sync"]) and len(calls.x) == int(t["api_start_ns"].notna().sum())
    assert all(str(lane).startswith("GPU ") for lane in kernels.y)
    assert "occupancy" in kernels.hovertemplate and kernels.customdata.shape[1] == 9
    assert "launch -> kernel" == fig.data[2].name
    folded, note = figures.timeline(t, limit=10, bins=50)
    assert note and "each bar is every event of its lane" in note
    bars = folded.data[0]
    assert bars.name == "kernels (folded)" and len(bars.x) <= 50 * len(set(kernels.y))
    assert sum(int(c[0]) for c in bars.customdata) == len(kernels.x)  # every launch is in one bar
    assert "busy" in bars.hovertemplate and max(bars.marker.color) <= 100
    empty, why = figures.timeline(ncu.parse(data_file("ncu_rmsnorm_raw.csv")))
    assert not empty.data and "timestamps" in why


def test_failed_cases_are_not_plotted_and_best_is_the_fastest_correct():
    m = pd.DataFrame({
        "shape": ["64x4096"] * 3, "dtype": ["bf16"] * 3, "provider": ["a", "b", "broken"],
        "status": ["ok", "ok", "fail"], "gpu_time_us": [5.0, 4.0, 1.0],
    })
    m["gbps"], m["speedup"] = [9.0, 10.0, 50.0], [1.0, 1.25, 5.0]
    fig = figures.compare_panels(m, "bf16", ceiling=12.0)
    assert {tr.name for tr in fig.data} == {"a", "b"}
    assert len(fig.data) == 2 * 3  # time, bandwidth and speedup panels; no occupancy in these metrics
    assert [tr.name for tr in fig.data if tr.showlegend] == ["a", "b"]  # one legend entry per provider
    assert len({tr.line.color for tr in fig.data if tr.name == "a"}) == 1  # the same colour in every panel
    assert any("no occupancy_theoretical_pct" in a.text for a in fig.layout.annotations)
    assert any(shape.y0 == 12.0 for shape in fig.layout.shapes)  # the ceiling line
    assert figures.best_per_shape(m).tolist() == [False, True, False]


def test_roofline_has_the_memory_roof():
    m = pd.DataFrame({"shape": ["1x8", "2x8"], "dtype": ["bf16"] * 2, "provider": ["a", "a"], "status": ["ok"] * 2,
                      "gpu_time_us": [1.0, 2.0], "bytes": [100, 200], "flops": [50, 100], "tflops": [0.05, 0.05]})
    fig = figures.roofline(m, ceiling_gbps=3000.0)
    roof = [tr for tr in fig.data if "roof" in tr.name][0]
    assert abs(roof.y[0] / roof.x[0] - 3.0) < 1e-9  # TFLOP/s = intensity x 3000 GB/s / 1000
