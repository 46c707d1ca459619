"""The dashboard's figures alone (plotly, no Streamlit)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

pytest.importorskip("plotly")

from kprof.dashboards import figures  # noqa: E402


def test_failed_cases_are_not_plotted_and_best_is_the_fastest_correct():
    m = pd.DataFrame(
        {
            "shape": ["64x4096"] * 3,
            "dtype": ["bf16"] * 3,
            "provider": ["a", "b", "broken"],
            "status": ["ok", "ok", "fail"],
            "gpu_time_us": [5.0, 4.0, 1.0],
        }
    )
    m["gbps"], m["speedup"] = [9.0, 10.0, 50.0], [1.0, 1.25, 5.0]
    fig = figures.compare_panels(m, "bf16", ceiling=12.0)
    assert {tr.name for tr in fig.data} == {"a", "b", "★ best version at the shape"}
    assert len(fig.data) == 2 * 3 + 2  # time, bandwidth, speedup per version; the best starred in two panels
    assert [tr.name for tr in fig.data if tr.showlegend][:2] == ["a", "b"]  # one legend entry per provider
    assert len({tr.line.color for tr in fig.data if tr.name == "a"}) == 1  # the same colour in every panel
    assert any("no occupancy" in a.text for a in fig.layout.annotations)
    assert any(shape.y0 == 12.0 for shape in fig.layout.shapes)  # the ceiling line
    assert figures.best_per_shape(m).tolist() == [False, True, False]


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
