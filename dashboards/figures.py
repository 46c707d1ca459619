"""Plotly figures for the dashboard: DataFrame in, Figure out (no Streamlit here, so they test alone)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from kprof import launch_table
from kprof.analysis import gpu_lane, host_lane, timeline_bins
from kprof.fmt import number
from kprof.shapes import parse_shape

# Launches drawn one by one; beyond that each lane is folded into TRACE_BINS time intervals and the page says
# so. SVG bars with hover: 5000 draw in about a second in headless Chromium on the 2-core dev box.
TRACE_LIMIT = 5000
TRACE_BINS = 800


def elements(shape: str) -> int:
    return int(np.prod(parse_shape(shape)))


def ok_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """Correct, timed cases only: a failed case is never plotted as if it had a valid time."""
    return metrics[(metrics["status"] == "ok") & metrics["gpu_time_us"].notna()]


COMPARE_PANELS = (  # (metric, panel title, axis title, log y)
    ("gpu_time_us", "GPU time per call", "µs", True),
    ("gbps", "Bandwidth", "GB/s", False),
    ("speedup", "Speedup over PyTorch eager", "x", True),
    ("occupancy_theoretical_pct", "Theoretical occupancy of the main kernel", "%", False),
)


def compare_panels(metrics: pd.DataFrame, dtype: str, ceiling: float | None = None) -> go.Figure:
    """Compare's four panels against size (elements) for one dtype, as one figure: every provider keeps
    one colour and one legend entry across the panels (clicking it hides it everywhere), and the browser
    draws one plot instead of four (0.35 s less on a first visit, measured on the 2-core dev box)."""
    df = ok_rows(metrics[metrics["dtype"] == dtype]).copy()
    df["elements"] = df["shape"].map(elements)
    df = df.sort_values("elements")
    fig = make_subplots(rows=2, cols=2, subplot_titles=[p[1] for p in COMPARE_PANELS],
                        horizontal_spacing=0.08, vertical_spacing=0.12)
    palette = qualitative.Plotly + qualitative.D3
    for i, (provider, g) in enumerate(df.groupby("provider", sort=True)):
        colour = palette[i % len(palette)]
        for k, (col, _, unit, _) in enumerate(COMPARE_PANELS):
            if col not in g or g[col].isna().all():
                continue
            fig.add_trace(go.Scatter(
                x=g["elements"], y=g[col], mode="lines+markers", name=provider, legendgroup=provider,
                showlegend=k == 0, line=dict(color=colour), text=g["shape"],
                hovertemplate="%{text}<br>%{y:.3g} " + unit + "<extra>" + provider + "</extra>"),
                row=k // 2 + 1, col=k % 2 + 1)
    for k, (col, _, unit, log_y) in enumerate(COMPARE_PANELS):
        row, c = k // 2 + 1, k % 2 + 1
        fig.update_xaxes(type="log", title_text="elements (rows x N)", row=row, col=c)
        fig.update_yaxes(type="log" if log_y else "linear", title_text=unit, row=row, col=c)
        if col not in df or df[col].isna().all():
            fig.add_annotation(text=f"no {col} in this run", showarrow=False, row=row, col=c,
                               xref="x domain", yref="y domain", x=0.5, y=0.5)
    if ceiling:
        fig.add_hline(y=ceiling, line_dash="dash", row=1, col=2,
                      annotation_text=f"measured copy ceiling {ceiling:.0f} GB/s")
    fig.update_layout(height=820, legend_title="provider", margin=dict(t=60, b=40))
    return fig


def best_per_shape(metrics: pd.DataFrame) -> pd.Series:
    """True where the row is the fastest correct provider of its (shape, dtype); roofline yardsticks
    (one cuBLAS product, not the family's function) are never the best."""
    ok = ok_rows(metrics)
    if "kind" in ok:
        ok = ok[ok["kind"] != "roofline"]
    best = ok.groupby(["shape", "dtype"])["gpu_time_us"].transform("min")
    return (metrics.index.isin(ok.index)) & (metrics["gpu_time_us"] == best.reindex(metrics.index))


def roofline(metrics: pd.DataFrame, ceiling_gbps: float | None, peak_tflops: float | None = None) -> go.Figure:
    df = ok_rows(metrics).copy()
    df = df[(df["bytes"] > 0) & (df["flops"] > 0)]
    df["intensity"] = df["flops"] / df["bytes"]
    fig = go.Figure()
    for provider, g in df.groupby("provider"):
        fig.add_trace(go.Scatter(x=g["intensity"], y=g["tflops"], mode="markers", name=provider,
                                 text=g["shape"] + " " + g["dtype"],
                                 hovertemplate="%{text}<br>%{x:.2f} FLOP/B, %{y:.3g} TFLOP/s<extra>" + provider
                                 + "</extra>"))
    if ceiling_gbps and not df.empty:
        xs = np.logspace(math.log10(df["intensity"].min() / 2), math.log10(df["intensity"].max() * 20), 50)
        roof = xs * ceiling_gbps / 1e3
        if peak_tflops:
            roof = np.minimum(roof, peak_tflops)
        fig.add_trace(go.Scatter(x=xs, y=roof, mode="lines", name=f"memory roof ({ceiling_gbps:.0f} GB/s measured)",
                                 line=dict(dash="dash", color="black")))
    fig.update_layout(title="Roofline: achieved FLOP rate against arithmetic intensity", height=480,
                      xaxis_title="arithmetic intensity (FLOP / byte, from the family's models)",
                      yaxis_title="TFLOP/s achieved")
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return fig


def timeline(launches: pd.DataFrame, limit: int = TRACE_LIMIT, bins: int = TRACE_BINS) -> tuple[go.Figure, str | None]:
    """Kernels on one lane per (device, stream), launch calls on one lane per host thread, a line from
    each launch call to its kernel. Rows without timestamps (ncu, summaries) cannot be drawn. Beyond
    ``limit`` launches the lanes are folded into ``bins`` time intervals (:func:`kprof.analysis.timeline_bins`):
    one bar per lane and interval, coloured by how busy the lane was, with the count and top kernel on hover."""
    df = launches[launches["start_ns"].notna()].copy()
    if df.empty:
        return go.Figure(), "no launch in this table has timestamps (ncu and summary rows have none)"
    if len(df) > limit:
        folded = timeline_bins(df, bins)
        width_us = (folded["end_ns"].max() - folded["start_ns"].min()) / bins / 1e3
        note = (f"{len(df)} launches, more than a browser draws one by one ({limit}): each bar is every event of "
                f"its lane within {width_us:.3g} µs ({len(folded)} bars), coloured by how busy the lane was. Narrow "
                f"the time window, or pick cases or kernels, to {limit} launches or fewer to see single launches.")
        return _binned_timeline(folded), note
    t0 = float(min(df["start_ns"].min(), df["api_start_ns"].min(skipna=True)
                   if df["api_start_ns"].notna().any() else df["start_ns"].min()))
    df["kind"] = df["kind"].fillna("kernel")
    gpu = df[df["kind"] != "sync"]
    fig = go.Figure()
    hover = ("%{customdata[0]}<br>case %{customdata[1]}<br>%{customdata[2]:.2f} us<br>grid %{customdata[3]} "
             "block %{customdata[4]}<br>regs %{customdata[5]} smem %{customdata[6]} B<br>"
             "launch latency %{customdata[7]} ns<br>occupancy %{customdata[8]} %<extra></extra>")

    def custom(g: pd.DataFrame) -> np.ndarray:
        grid = g["grid_x"].astype("string").fillna("?") + "x" + g["grid_y"].astype("string").fillna("?")
        block = g["block_x"].astype("string").fillna("?")
        return np.stack([g["kernel"].astype(str).str[:80], g["case"].astype("string").fillna("—"),
                         g["duration_ns"].astype(float) / 1e3, grid, block,
                         g["registers_per_thread"].astype("string").fillna("—"),
                         g["shared_mem_bytes"].astype("string").fillna("—"),
                         g["launch_latency_ns"].astype("string").fillna("—"),
                         g["occupancy_theoretical_pct"].fillna(g["occupancy_est_pct"]).round(0).astype("string")
                         .fillna("—")], axis=-1)

    fig.add_trace(go.Bar(
        base=(gpu["start_ns"].astype(float) - t0) / 1e3, x=gpu["duration_ns"].astype(float) / 1e3, y=gpu_lane(gpu),
        orientation="h", name="kernels", customdata=custom(gpu), hovertemplate=hover))
    host = df[df["api_start_ns"].notna()]
    if not host.empty:
        fig.add_trace(go.Bar(
            base=(host["api_start_ns"].astype(float) - t0) / 1e3,
            x=(host["api_end_ns"] - host["api_start_ns"]).astype(float) / 1e3, y=host_lane(host), orientation="h",
            name="launch / sync calls", customdata=custom(host), hovertemplate=hover))
        linked = host[host["kind"] != "sync"].head(2000)
        xs, ys = [], []
        for (a, b), la, lb in zip(zip(linked["api_start_ns"], linked["start_ns"]), host_lane(linked), gpu_lane(linked)):
            xs += [(float(a) - t0) / 1e3, (float(b) - t0) / 1e3, None]
            ys += [la, lb, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="launch -> kernel", line=dict(width=0.5),
                                 hoverinfo="skip"))
    fig.update_layout(barmode="overlay", height=380, xaxis_title="µs from the first event", title="Timeline",
                      margin=dict(t=50, b=40))
    return fig, None


def _binned_timeline(folded: pd.DataFrame) -> go.Figure:
    t0 = folded["start_ns"].min()
    fig = go.Figure()
    for track, name in (("kernels", "kernels (folded)"), ("calls", "launch / sync calls (folded)")):
        g = folded[folded["track"] == track]
        if g.empty:
            continue
        span = (g["end_ns"] - g["start_ns"]).clip(lower=1.0)
        busy = (100 * g["busy_ns"] / span).clip(upper=100)
        fig.add_trace(go.Bar(
            base=(g["start_ns"] - t0) / 1e3, x=span / 1e3, y=g["lane"], orientation="h", name=name,
            marker=dict(color=busy, colorscale="Blues", cmin=0, cmax=100,
                        colorbar=dict(title="busy %", len=0.6) if track == "kernels" else None),
            customdata=np.stack([g["events"], busy.round(0), g["busy_ns"] / 1e3, g["top_kernel"].astype(str).str[:80],
                                 g["kernels"], g["cases"]], axis=-1),
            hovertemplate=("%{customdata[0]} events, busy %{customdata[1]}% (%{customdata[2]:.1f} µs)<br>"
                           "most time: %{customdata[3]}<br>%{customdata[4]} kernels, %{customdata[5]} cases"
                           "<extra></extra>")))
    fig.update_layout(barmode="overlay", height=380, xaxis_title="µs from the first event",
                      title="Timeline (folded into intervals)", margin=dict(t=50, b=40))
    return fig


def kernel_kinds(launches: pd.DataFrame) -> pd.Series:
    return launch_table.kernels(launches)["kernel"].value_counts()


def sweep_heatmap(grid: pd.DataFrame, x: str, y: str, value: str, title: str) -> go.Figure:
    """A heatmap of a sweep over two meta-parameters (``kprof.guide.sweep_grid``); hover shows the
    configuration, registers, spills and occupancy, or why a cell did not run."""
    xs = sorted(grid[x].dropna().unique())
    ys = sorted(grid[y].dropna().unique())
    z = np.full((len(ys), len(xs)), np.nan)
    text = np.full((len(ys), len(xs)), "", dtype=object)
    for r in grid.to_dict("records"):
        i, j = ys.index(r[y]), xs.index(r[x])
        if r["status"] == "ok" and pd.notna(r.get(value)):
            z[i, j] = r[value]
            text[i, j] = (f"{r['params_text']}<br>{r['gpu_time_us']:.1f} µs · {number(r.get('pct_roof'), '.0f')}% of roof"
                          f"<br>{number(r.get('registers_per_thread'), '.0f')} regs · {number(r.get('local_bytes'), '.0f')} B local (spills)"
                          f" · {number(r.get('shared_mem_bytes'), '.0f')} B smem<br>occupancy {number(r.get('occupancy_theoretical_pct'), '.0f')}%"
                          f" theoretical, {number(r.get('occupancy_achieved_pct'), '.0f')}% achieved")
        else:
            text[i, j] = f"{r['params_text']}<br>{r['status']}: {str(r.get('note') or '')[:160]}"
    fig = go.Figure(go.Heatmap(
        z=z, x=[str(v) for v in xs], y=[str(v) for v in ys], text=text, hoverinfo="text",
        colorscale="Viridis" if value in ("pct_roof", "pct_peak_bw") else "Viridis_r",
        colorbar=dict(title=value), texttemplate="%{z:.3g}",
    ))
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, height=460)
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig
