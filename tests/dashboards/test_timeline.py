"""The Trace page's timeline (plotly, no Streamlit) and the dashboard's shared style."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("plotly")

from kprof.dashboards import style, timeline  # noqa: E402
from kprof.profilers import ncu, nsys  # noqa: E402


@pytest.fixture
def trace(data_file):
    return nsys.parse(data_file("nsys_rmsnorm.sqlite"))


def test_kernels_in_their_own_colours_lanes_fixed_and_an_overview(trace):
    fig, note, drawn = timeline.figure({"A": trace})
    assert note is None
    kernels = [t for t in fig.data if t.type == "bar" and t.name != "launch / sync calls"]
    assert sum(len(t.x) for t in kernels) == int((trace["kind"].fillna("kernel") != "sync").sum())
    for t in kernels:
        if not t.name.startswith("other kernels"):
            assert t.marker.color == style.colour(t.name)  # the same kernel is the same colour everywhere
            assert set(drawn.loc[t.customdata.astype(int), "_name"]) == {t.name}
    assert len({t.marker.color for t in kernels}) == len(kernels)
    assert fig.layout.yaxis.fixedrange and fig.layout.xaxis.rangeslider.visible
    assert not any(t.name == "launch -> kernel" for t in fig.data)  # no flow until a launch is selected
    # a GPU-bound stretch: the same kernels back to back, each a sizeable part of the view
    busy = trace[trace["kind"] == "kernel"].head(6).copy()
    busy["duration_ns"] = np.random.default_rng().integers(40_000, 90_000, len(busy))
    busy["start_ns"] = busy["start_ns"].min() + busy["duration_ns"].cumsum().shift(fill_value=0)
    busy["end_ns"] = busy["start_ns"] + busy["duration_ns"]
    fig, _, _ = timeline.figure({"A": busy})
    labelled = [x for t in fig.data if t.type == "bar" and t.text is not None for x in t.text if x]
    assert labelled and all(len(x) <= 61 for x in labelled)  # names on the boxes wide enough


def test_the_selected_launch_gets_its_flow_and_its_full_row(trace):
    _, _, drawn = timeline.figure({"A": trace})
    row = int(np.flatnonzero(drawn["api_start_ns"].notna() & (drawn["kind"] == "kernel"))[3])
    fig, _, _ = timeline.figure({"A": trace}, selected=row)
    flows = [t for t in fig.data if t.name == "launch -> kernel"]
    assert len(flows) == 1 and len(flows[0].x) == 2
    r = drawn.iloc[row]
    assert flows[0].x[0] == pytest.approx(r["api_start_ns"] / 1e3) and flows[0].x[1] == pytest.approx(
        r["start_ns"] / 1e3
    )
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
    fig, _, drawn = timeline.figure({"A": trace, "B": trace})
    lanes = list(fig.layout.yaxis.categoryarray)
    assert {lane.split(" · ")[0] for lane in lanes} == {"A", "B"} and len(drawn) == 2 * len(trace)
    folded, note, _ = timeline.figure({"A": trace}, limit=10, bins=50)
    assert note and "more than a browser draws one by one" in note
    kernel_bars = [t for t in folded.data if t.type == "bar" and t.showlegend]
    events = sum(int(c[0]) for t in kernel_bars for c in t.customdata)
    assert events == int((trace["kind"].fillna("kernel") != "sync").sum())  # each launch in one bar
    empty, why, _ = timeline.figure({"A": ncu.parse(data_file("ncu_rmsnorm_raw.csv"))})
    assert not empty.data and "timestamps" in why


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
