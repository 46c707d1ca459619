"""Plotly figures for the dashboard: DataFrame in, Figure out (no Streamlit here, so they test alone)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kprof import launch_table
from kprof.dashboards import style
from kprof.fmt import number
from kprof.shapes import parse_shape


def elements(shape: str) -> int:
    return int(np.prod(parse_shape(shape)))


def ok_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """Correct, timed cases only: a failed case is never plotted as if it had a valid time."""
    return metrics[(metrics["status"] == "ok") & metrics["gpu_time_us"].notna()]


COMPARE_PANELS = (  # (metric, panel title, axis title, log y)
    ("gpu_time_us", "GPU time per call", "µs", True),
    ("gbps", "Bandwidth", "GB/s", False),
    ("speedup", "Speedup over {baseline}", "×", False),
    ("occupancy_theoretical_pct", "Theoretical occupancy of the main kernel", "%", False),
)
# what a user may measure speed against: label -> providers (the fastest of them per shape)
PYTORCH_KINDS = ("eager", "library", "compile")
BASELINES = {
    "best PyTorch per shape": None,  # the fastest of eager, F.* and torch.compile at each shape and dtype
    "PyTorch eager": ("torch_eager",),
    "F.* (PyTorch's fused op)": ("torch_F",),
    "torch.compile": ("torch_compile",),
    "Liger": ("liger",),
}


def shape_order(metrics: pd.DataFrame) -> list[str]:
    """Shapes in the order the run swept them (its case order), which is how the family lists them."""
    m = metrics.sort_values("idx") if "idx" in metrics else metrics
    return list(dict.fromkeys(str(s) for s in m["shape"].dropna()))


def baseline_times(metrics: pd.DataFrame, baseline: str) -> pd.Series:
    """Per (shape, dtype), the baseline's time: the fastest correct run of the chosen providers (for
    "best PyTorch per shape", every PyTorch provider of the run)."""
    ok = ok_rows(metrics)
    ok = ok[~ok["provider"].astype(str).str.contains(" @ ")]  # added runs are compared, never the yardstick
    providers = BASELINES.get(baseline)
    if providers is None:
        pytorch = ok["kind"].isin(PYTORCH_KINDS) if "kind" in ok else ok["provider"].str.startswith("torch")
        ok = ok[pytorch]
    else:
        ok = ok[ok["provider"].isin(providers)]
    return ok.groupby(["shape", "dtype"])["gpu_time_us"].min()


def with_baseline(metrics: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """``speedup`` = baseline time / time (above 1: faster than the baseline); NaN where either is missing."""
    base = baseline_times(metrics, baseline)
    keys = pd.MultiIndex.from_arrays([metrics["shape"], metrics["dtype"]])
    b = pd.Series(base.reindex(keys).to_numpy(), index=metrics.index)
    t = metrics["gpu_time_us"].where(metrics["gpu_time_us"] > 0)
    return metrics.assign(speedup=b / t)


def nice_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks spanning [lo, hi] for a log axis (plotly's own log ticks read '5, 2, 1000, 5, 2')."""
    if not (lo > 0 and hi > 0):
        return []
    out = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        out += [m * 10.0**e for m in (1, 2, 5)]
    inside = [v for v in out if lo / 1.5 <= v <= hi * 1.5]
    return inside if len(inside) <= 8 else [v for v in inside if str(v)[0] == "1"] or inside


def tick_text(v: float, unit: str = "") -> str:
    if unit == "µs":
        return style.us(v)
    return f"{v:g}"


COMPARE_HEIGHT = 820  # px: the page reserves this much for the figure before drawing it


def compare_panels(
    metrics: pd.DataFrame, dtype: str, ceiling: float | None = None, baseline: str = "best PyTorch per shape"
) -> go.Figure:
    """Compare's four panels for one dtype, shapes as categories in sweep order, as one figure: every
    provider keeps its colour (:mod:`kprof.dashboards.style`) and one legend entry across the panels, and
    the fastest correct version at each shape is starred in the time and speedup panels."""
    order = shape_order(metrics[metrics["dtype"] == dtype])
    df = ok_rows(metrics[metrics["dtype"] == dtype]).copy()
    df["shape"] = df["shape"].astype(str)
    df["_o"] = df["shape"].map({s: i for i, s in enumerate(order)})
    df = df.sort_values("_o")
    titles = [p[1].format(baseline=baseline) for p in COMPARE_PANELS]
    fig = make_subplots(rows=2, cols=2, subplot_titles=titles, horizontal_spacing=0.08, vertical_spacing=0.16)
    for provider, g in df.groupby("provider", sort=True):
        added = " @ " in str(provider)  # another run's version: the provider's colour, dashed
        for k, (col, _, unit, _) in enumerate(COMPARE_PANELS):
            if col not in g or g[col].isna().all():
                continue
            fig.add_trace(
                go.Scatter(
                    x=g["shape"],
                    y=g[col],
                    mode="lines+markers",
                    name=str(provider),
                    legendgroup=str(provider),
                    showlegend=k == 0,
                    line=dict(color=style.colour(provider), dash="dash" if added else "solid"),
                    marker=dict(symbol="diamond" if added else "circle", size=7),
                    hovertemplate="%{x}<br>%{y:.3g} " + unit + "<extra>" + str(provider) + "</extra>",
                ),
                row=k // 2 + 1,
                col=k % 2 + 1,
            )
    best = df[best_per_shape(df)] if not df.empty else df
    for k in (0, 2):
        col = COMPARE_PANELS[k][0]
        if best.empty or col not in best or best[col].isna().all():
            continue
        fig.add_trace(
            go.Scatter(
                x=best["shape"],
                y=best[col],
                mode="markers",
                name="★ best version at the shape",
                legendgroup="best",
                showlegend=k == 0,
                marker=dict(symbol="star", size=16, color="rgba(0,0,0,0)", line=dict(color="black", width=1.5)),
                text=best["provider"],
                hovertemplate="best: %{text}<br>%{x}: %{y:.3g}<extra></extra>",
            ),
            row=k // 2 + 1,
            col=k % 2 + 1,
        )
    for k, (col, _, unit, log_y) in enumerate(COMPARE_PANELS):
        row, c = k // 2 + 1, k % 2 + 1
        fig.update_xaxes(
            type="category", categoryorder="array", categoryarray=order, title_text="shape (rows × N)", row=row, col=c
        )
        fig.update_yaxes(type="log" if log_y else "linear", title_text=unit, row=row, col=c)
        vals = df[col].dropna() if col in df else pd.Series(dtype=float)
        if log_y and not vals.empty:
            ticks = nice_ticks(float(vals[vals > 0].min()), float(vals.max()))
            fig.update_yaxes(tickvals=ticks, ticktext=[tick_text(v, unit) for v in ticks], row=row, col=c)
        if vals.empty:
            fig.add_annotation(
                text=f"no {style.COLUMNS.get(col, (col,))[0]} in this run",
                showarrow=False,
                row=row,
                col=c,
                xref="x domain",
                yref="y domain",
                x=0.5,
                y=0.5,
            )
    if "speedup" in df and df["speedup"].notna().any():
        fig.add_hline(y=1.0, line_dash="dot", line_color="#555", row=2, col=1)
    if ceiling:
        fig.add_hline(
            y=ceiling, line_dash="dash", row=1, col=2, annotation_text=f"measured copy ceiling {ceiling:.0f} GB/s"
        )
    fig.update_layout(height=COMPARE_HEIGHT, legend_title="version", margin=dict(t=60, b=40))
    return fig


def best_per_shape(metrics: pd.DataFrame) -> pd.Series:
    """True where the row is the fastest correct provider of its (shape, dtype); roofline yardsticks
    (one cuBLAS product, not the family's function) are never the best."""
    ok = ok_rows(metrics)
    if "kind" in ok:
        ok = ok[ok["kind"] != "roofline"]
    winners = ok.groupby(["shape", "dtype"])["gpu_time_us"].idxmin()  # one per shape, even on a tie
    return pd.Series(metrics.index.isin(winners.dropna().to_numpy()), index=metrics.index)


ROOFLINE_HEIGHT = 480


def roofline(metrics: pd.DataFrame, ceiling_gbps: float | None, peak_tflops: float | None = None) -> dict:
    """The roofline as a Vega-Lite spec (``st.vega_lite_chart``): each correct case's achieved TFLOP/s
    against its arithmetic intensity, log-log, a colour per provider (:func:`style.colour`, as on Compare),
    and the roof: the copy bandwidth measured in the run, capped at the dtype's measured matrix-product
    rate where there is one.

    Vega-Lite rather than plotly because a fresh browser draws it about 0.9 s sooner (1.5 s against 2.4 s for
    this chart alone in headless Chromium on a 2-core box): the page needs neither plotly's 4.7 MB of code
    nor anything plotly does here that Vega-Lite does not (hover, zoom, legend)."""
    df = ok_rows(metrics).copy()
    df = df[(df["bytes"] > 0) & (df["flops"] > 0) & (df["tflops"] > 0)]
    df["intensity"] = df["flops"] / df["bytes"]
    points = pd.DataFrame(
        {
            "provider": df["provider"].astype(str),
            "case": df["shape"].astype(str) + " " + df["dtype"].astype(str),
            "intensity": df["intensity"].astype(float),
            "tflops": df["tflops"].astype(float),
        }
    )
    providers = sorted(points["provider"].unique())
    domain, colours = list(providers), [style.colour(p) for p in providers]
    # one colour scale for both layers (the roof is in the legend too); its domain grows with the roof below
    colour = {
        "field": "provider",
        "type": "nominal",
        "scale": {"domain": domain, "range": colours},
        "legend": {"title": "version", "labelLimit": 320},
    }
    layers = [
        {
            "data": {"values": points.to_dict("records")},
            "mark": {"type": "point", "filled": True, "size": 70, "opacity": 0.85},
            "encoding": {
                "x": _LOG_X,
                "y": _LOG_Y,
                "color": colour,
                "tooltip": [
                    {"field": "provider", "title": "version"},
                    {"field": "case"},
                    {"field": "intensity", "title": "FLOP/byte", "format": ".2f"},
                    {"field": "tflops", "title": "TFLOP/s", "format": ".3g"},
                ],
            },
            "params": [{"name": "zoom", "select": "interval", "bind": "scales"}],
        }
    ]
    if ceiling_gbps and not points.empty:
        xs = np.logspace(math.log10(points["intensity"].min() / 2), math.log10(points["intensity"].max() * 20), 50)
        roof = xs * ceiling_gbps / 1e3
        if peak_tflops:
            roof = np.minimum(roof, peak_tflops)
        name = f"memory roof ({ceiling_gbps:.0f} GB/s measured)"
        domain.append(name)
        colours.append("black")
        layers.append(
            {
                "data": {
                    "values": [{"provider": name, "intensity": float(x), "tflops": float(y)} for x, y in zip(xs, roof)]
                },
                "mark": {"type": "line", "strokeDash": [6, 4], "strokeWidth": 1.5},
                "encoding": {"x": _LOG_X, "y": _LOG_Y, "color": colour},
            }
        )
    return {
        "title": "Roofline: achieved FLOP rate against arithmetic intensity",
        "height": ROOFLINE_HEIGHT,
        "layer": layers,
    }


_LOG_X = {
    "field": "intensity",
    "type": "quantitative",
    "scale": {"type": "log"},
    "title": "arithmetic intensity (FLOP / byte, from the family's models)",
}
_LOG_Y = {"field": "tflops", "type": "quantitative", "scale": {"type": "log"}, "title": "TFLOP/s achieved"}


def kernel_kinds(launches: pd.DataFrame) -> pd.Series:
    return launch_table.kernels(launches)["kernel"].value_counts()


SWEEP_HEIGHT = 460


def sweep_heatmap(grid: pd.DataFrame, x: str, y: str, value: str, title: str) -> dict:
    """A heatmap of a sweep over two meta-parameters (``kprof.guide.sweep_grid``) as a Vega-Lite spec: each
    cell coloured and labelled by ``value`` (brighter is better), hover with the configuration, time, % of
    roof, registers, spills, shared memory and occupancy; cells where nothing ran are grey, hover saying why.

    Vega-Lite rather than plotly: a fresh browser draws a chart about 0.9 s sooner (see :func:`roofline`)."""
    xs = [str(v) for v in sorted(grid[x].dropna().unique())]
    ys = [str(v) for v in sorted(grid[y].dropna().unique())]
    ok = (grid["status"] == "ok") & grid[value].notna() if value in grid else pd.Series(False, index=grid.index)
    vals = grid.loc[ok, value].astype(float)
    lo, hi = (float(vals.min()), float(vals.max())) if not vals.empty else (0.0, 1.0)
    better_high = value in ("pct_roof", "pct_peak_bw")
    cells = []
    for r, good in zip(grid.to_dict("records"), ok):
        cell = {"x": str(r[x]), "y": str(r[y]), "config": r["params_text"]}
        if good:
            v = float(r[value])
            shade = (v - lo) / (hi - lo) if hi > lo else 1.0
            cell.update(
                value=v,
                label=f"{v:.3g}",
                ink="black" if (shade if better_high else 1 - shade) > 0.5 else "white",
                time=f"{r['gpu_time_us']:.1f} µs" if pd.notna(r.get("gpu_time_us")) else "—",
                roof=f"{number(r.get('pct_roof'), '.0f')}%",
                resources=f"{number(r.get('registers_per_thread'), '.0f')} regs · "
                f"{number(r.get('local_bytes'), '.0f')} B local (spills) · "
                f"{number(r.get('shared_mem_bytes'), '.0f')} B smem",
                occupancy=f"{number(r.get('occupancy_theoretical_pct'), '.0f')}% theoretical, "
                f"{number(r.get('occupancy_achieved_pct'), '.0f')}% achieved",
            )
        else:
            cell.update(status=f"{r['status']}: {str(r.get('note') or '')[:160]}")
        cells.append(cell)
    pos = {
        "x": {"field": "x", "type": "ordinal", "sort": xs, "title": x, "axis": {"labelAngle": 0}},
        "y": {"field": "y", "type": "ordinal", "sort": ys[::-1], "title": y},
    }  # small values at the bottom
    ran = {"filter": "isValid(datum.value)"}
    data = {"values": cells}  # inline in each layer: Streamlit ships a top-level one as Arrow, which the browser
    # then needs its Arrow code for
    return {
        "title": title,
        "height": SWEEP_HEIGHT,
        "layer": [
            {
                "data": data,
                "transform": [{"filter": "!isValid(datum.value)"}],
                "mark": {"type": "rect", "color": "#e6e6e6"},
                "encoding": {**pos, "tooltip": [{"field": "config"}, {"field": "status"}]},
            },
            {
                "data": data,
                "transform": [ran],
                "mark": "rect",
                "encoding": {
                    **pos,
                    "color": {
                        "field": "value",
                        "type": "quantitative",
                        "title": value,
                        "scale": {"scheme": "viridis", "reverse": not better_high},
                    },
                    "tooltip": [
                        {"field": "config"},
                        {"field": "label", "title": value},
                        {"field": "time"},
                        {"field": "roof", "title": "% of roof"},
                        {"field": "resources"},
                        {"field": "occupancy"},
                    ],
                },
            },
            {
                "data": data,
                "transform": [ran],
                "mark": {"type": "text", "fontSize": 11},
                "encoding": {
                    **pos,
                    "text": {"field": "label"},
                    "color": {"condition": {"test": "datum.ink === 'white'", "value": "white"}, "value": "black"},
                },
            },
        ],
    }
