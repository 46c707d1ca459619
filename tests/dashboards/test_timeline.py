"""The Trace page's timeline (a Vega-Lite spec, no Streamlit) and the dashboard's shared style."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("plotly")

from kprof.dashboards import style, timeline  # noqa: E402
from kprof.profilers import ncu, nsys  # noqa: E402


@pytest.fixture
def trace(data_file):
    return nsys.parse(data_file("nsys_rmsnorm.sqlite"))


def _main(spec: dict) -> list[dict]:
    return spec["vconcat"][0]["layer"]


def _bars(spec: dict) -> list[dict]:
    return _main(spec)[0]["data"]["values"]


def test_kernels_in_their_own_colours_lanes_fixed_and_an_overview(trace):
    spec, note, drawn = timeline.figure({"A": trace})
    assert note is None
    json.dumps(spec, allow_nan=False)  # the browser parses it as strict JSON
    bars = _bars(spec)
    kernels = [b for b in bars if b["key"] not in (timeline.CALLS, "sync calls")]
    assert len(kernels) == int((trace["kind"].fillna("kernel") != "sync").sum())  # every launch, once
    for b in kernels:  # each box is its launch, under its kernel's legend entry
        r = drawn.iloc[b["row"]]
        assert b["key"] in (r["_name"], timeline.OTHER) and b["lane"] == r["_gpu_lane"]
        assert b["e"] - b["s"] == pytest.approx(max(r["duration_ns"], 1) / 1e3)
    scale = _main(spec)[0]["encoding"]["color"]["scale"]
    named = [k for k in scale["domain"] if k not in (timeline.OTHER, timeline.CALLS, "sync calls")]
    assert named and all(c == style.colour(k) for k, c in zip(scale["domain"], scale["range"]) if k in named)
    assert len(set(scale["range"])) == len(scale["range"])  # the same kernel, the same colour; no two alike
    # lanes fixed: no selection zooms y; the overview's brush sets the time range of every main layer
    params = [p for layer in _main(spec) for p in layer.get("params", [])] + spec["vconcat"][1]["params"]
    assert all(p["select"].get("encodings", ["x"]) == ["x"] for p in params if p["select"]["type"] == "interval")
    assert {p["name"] for p in params} == {"pick", "brush"}
    assert all(
        layer["encoding"]["x"]["scale"]["domain"] == {"param": "brush", "encoding": "x"}
        for layer in _main(spec)
        if "encoding" in layer
    )
    assert not any(layer["mark"].get("color") == "#d62728" for layer in _main(spec) if "mark" in layer)  # no flow
    # names on the boxes: only where the box, in pixels at the current zoom, is wider than the name
    text = next(layer for layer in _main(spec) if layer.get("mark", {}).get("type") == "text")
    test = text["encoding"]["text"]["condition"]["test"]
    assert "scale('main_x', datum.e) - scale('main_x', datum.s)" in test and "length(datum.name)" in test
    assert {b["name"] for b in kernels} == set(drawn.loc[[b["row"] for b in kernels], "_name"])


def test_search_dims_the_other_kernels(trace):
    name = timeline.short_name(trace.loc[trace["kind"] == "kernel", "kernel"].iloc[0])
    spec, _, _ = timeline.figure({"A": trace}, search=name[2:-2].upper())  # any part, any case
    kernels = [b for b in _bars(spec) if b["key"] not in (timeline.CALLS, "sync calls")]
    assert {b["dim"] for b in kernels if b["name"] == name} == {False}
    assert {b["dim"] for b in kernels if name[2:-2] not in b["name"]} == {True}


def test_the_chart_has_its_own_search_box(trace):
    """The search the page offers is a text box bound to a parameter of the chart (typing dims in the browser,
    without a rerun; the browser test types into it): it starts with the search given, and the kernel bars'
    opacity depends on it, by their short and hover names."""
    spec, _, _ = timeline.figure({"A": trace}, search="Reduce")
    find = next(p for p in spec["params"] if p["name"] == timeline.FIND)
    assert find["value"] == "Reduce" and find["bind"]["input"] == "text"
    bars = next(layer for layer in _main(spec) if layer.get("mark", {}).get("type") == "rect")
    test = bars["encoding"]["opacity"]["condition"]["test"]
    assert timeline.FIND in test and "datum.name" in test and "datum.kernel" in test


def test_the_selected_launch_gets_its_flow_and_its_full_row(trace):
    _, _, drawn = timeline.figure({"A": trace})
    row = int(np.flatnonzero(drawn["api_start_ns"].notna() & (drawn["kind"] == "kernel"))[3])
    spec, _, _ = timeline.figure({"A": trace}, selected=row)
    flows = [layer for layer in _main(spec) if layer.get("mark", {}).get("color") == "#d62728"]
    assert len(flows) == 1
    flow = flows[0]["data"]["values"][0]
    r = drawn.iloc[row]
    assert flow["s"] == pytest.approx(r["api_start_ns"] / 1e3) and flow["e"] == pytest.approx(r["start_ns"] / 1e3)
    assert (flow["lane"], flow["to"]) == (r["_host_lane"], r["_gpu_lane"])  # from the call's lane to the kernel's
    fields = timeline.launch_row(drawn, row).set_index("field")["value"]
    assert fields["kernel"] == str(r["kernel"]) and fields["grid_x"] == str(r["grid_x"])


def test_collapsed_gaps_keep_every_event_and_its_duration():
    rng = np.random.default_rng()
    n = 37
    starts = np.cumsum(rng.integers(100, 900, n)).astype(float)
    starts[n // 2 :] += 5e6  # one long idle stretch (between cases)
    starts[n - 5 :] += 3e6  # and another
    dur = rng.integers(50, 90, n).astype(float)
    df = pd.DataFrame(
        {"start_ns": starts, "end_ns": starts + dur, "api_start_ns": starts - 40, "api_end_ns": starts - 10}
    )
    out, cuts = timeline.collapse_gaps(df, 100e3, keep_ns=2e3)
    assert len(cuts) == 2 and [round(g / 1e6) for _, g in cuts] == [5, 3]
    assert np.allclose(out["end_ns"] - out["start_ns"], dur)  # durations untouched
    assert (np.diff(out["start_ns"]) > 0).all()  # order kept
    span = out["end_ns"].max() - out["api_start_ns"].min()
    assert span < (df["end_ns"].max() - df["api_start_ns"].min()) - 7.9e6


def test_two_runs_on_prefixed_lanes_and_folding_counts_every_launch(trace, data_file):
    spec, _, drawn = timeline.figure({"A": trace, "B": trace})
    lanes = _main(spec)[0]["encoding"]["y"]["sort"]
    assert {lane.split(" · ")[0] for lane in lanes} == {"A", "B"} and len(drawn) == 2 * len(trace)
    assert {b["lane"] for b in _bars(spec)} == set(lanes)
    folded, note, _ = timeline.figure({"A": trace}, limit=10, bins=50)
    assert note and "more than a browser draws one by one" in note
    kernel_bars = [b for b in _bars(folded) if b["key"] != timeline.CALLS]
    assert sum(b["events"] for b in kernel_bars) == int((trace["kind"].fillna("kernel") != "sync").sum())
    assert not any("row" in b for b in _bars(folded))  # a folded bar is no launch to click
    empty, why, _ = timeline.figure({"A": ncu.parse(data_file("ncu_rmsnorm_raw.csv"))})
    assert not empty and "timestamps" in why


def test_short_kernel_names():
    assert (
        timeline.short_name("void at::native::vectorized_elementwise_kernel<4, at::native::X<float>>(int, T)")
        == "vectorized_elementwise_kernel"
    )
    assert timeline.short_name("_rmsnorm_looped_kernel") == "_rmsnorm_looped_kernel"


def test_style_shapes_p_values_and_colours():
    shapes = ["16384x4096", "2048x4096", "256x131072", "1x4096", "2048x512"]
    assert style.sorted_shapes(shapes) == ["1x4096", "256x131072", "2048x512", "2048x4096", "16384x4096"]
    assert style.p_value(3e-9) == "< 0.001" and style.p_value(0.0421) == "0.042" and style.p_value(float("nan")) == "—"
    rmsnorm = ["triton_looped", "triton_one_row", "triton_tuned", "liger", "torch_F", "torch_eager", "torch_compile"]
    colours = [style.colour(p) for p in rmsnorm]
    assert len(set(colours)) == len(colours)  # one family's versions never share a colour
    assert style.colour("triton_looped @ 5f49") == style.colour("triton_looped")
    assert style.time_column(pd.DataFrame({"gpu_time_us": [1.0]})) == "gpu_time_us"
