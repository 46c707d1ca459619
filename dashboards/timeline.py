"""The Trace page's timeline: launch table(s) in, one plotly figure out (no Streamlit here, so it tests alone).

What it draws, and why:
- one lane per (device, stream) for GPU work and per host thread for launch/sync calls, lanes fixed (the
  y axis does not zoom), zoom and pan along time only, with an overview strip (a range slider) below;
- every kernel in its own colour (:func:`kprof.dashboards.style.colour` of its short name: the same kernel is
  the same colour on every page and run), one legend entry each, its name written on boxes wide enough;
- idle gaps longer than ``collapse_ns`` (typically between cases) cut down to a sliver, a dotted line and a
  label saying how much idle time was removed there;
- the launch -> kernel line only for the selected launch (all of them at once form a solid block);
- two runs one above the other (lanes prefixed A / B), each from its own first event;
- beyond ``limit`` events the lanes are folded into ``bins`` intervals (:func:`kprof.analysis.timeline_bins`),
  each coloured by the kernel that took most of its time.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kprof.analysis import gpu_lane, host_lane, timeline_bins
from kprof.dashboards import style

# SVG bars with hover: 5000 draw in about a second in headless Chromium on a 2-core box; beyond, fold.
LIMIT = 5000
BINS = 800
LEGEND_KERNELS = 24  # kernels with their own legend entry; the rest share "other kernels"
STAMPS = ("start_ns", "end_ns", "api_start_ns", "api_end_ns")
HOST_COLOUR = "#b0b0b0"
MIN_HEIGHT = 300  # px, the figure's height with few lanes
SYNC_COLOUR = "#ff9f40"


def short_name(kernel: object) -> str:
    """A kernel name short enough for a box and a legend: no ``void``, template arguments, parameter list or
    namespaces (``void at::native::vectorized_layer_norm_kernel<float>(...)`` -> ``vectorized_layer_norm_kernel``)."""
    s = str(kernel)
    s = re.sub(r"^void\s+", "", s)
    depth, out = 0, []
    for ch in s:  # drop everything inside <...> and (...)
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    s = "".join(out).strip() or str(kernel)
    return s.split("::")[-1][:60] or s[:60]


def names(kernels: pd.Series) -> pd.Series:
    """:func:`short_name` of each, computed once per distinct kernel (a trace holds few, many times)."""
    k = kernels.astype("string").fillna("?")
    return k.map({u: short_name(u) for u in k.unique()})


def relative(launches: pd.DataFrame) -> pd.DataFrame:
    """Timed rows with every stamp made relative to the first event (ns as float)."""
    df = launches[launches["start_ns"].notna()].copy()
    if df.empty:
        return df
    for c in STAMPS:
        df[c] = df[c].astype("float64")
    t0 = float(np.nanmin(df[["start_ns", "api_start_ns"]].to_numpy()))
    for c in STAMPS:
        df[c] = df[c] - t0
    return df


def collapse_gaps(
    df: pd.DataFrame, min_gap_ns: float, keep_ns: float | None = None
) -> tuple[pd.DataFrame, list[tuple[float, float]]]:
    """Cut every idle stretch (no event on any lane) longer than ``min_gap_ns`` down to ``keep_ns`` (default a
    twentieth of it). Returns the shifted table and, per cut, (where it is now in ns, idle ns removed)."""
    if df.empty or not min_gap_ns:
        return df, []
    keep = min_gap_ns / 20 if keep_ns is None else keep_ns
    starts = np.concatenate([df["start_ns"].to_numpy(), df["api_start_ns"].dropna().to_numpy()])
    ends = np.concatenate([df["end_ns"].to_numpy(), df["api_end_ns"].dropna().to_numpy()])
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    gap_at = np.flatnonzero(starts[1:] - ends[:-1] > min_gap_ns)  # idle between event i and i+1
    if gap_at.size == 0:
        return df, []
    gap_start, gap_len = ends[gap_at], starts[gap_at + 1] - ends[gap_at]
    removed = np.cumsum(gap_len - keep)

    def shift(t: pd.Series) -> pd.Series:
        k = np.searchsorted(
            gap_start, t.to_numpy(), side="left"
        )  # gaps that start before t (an end at a gap's start stays)
        return t - np.where(k > 0, removed[np.maximum(k - 1, 0)], 0.0)

    out = df.copy()
    for c in STAMPS:
        out[c] = shift(out[c])
    marks = [
        (float(s - (removed[i - 1] if i else 0.0) + keep / 2), float(g))
        for i, (s, g) in enumerate(zip(gap_start, gap_len))
    ]
    return out, marks


def _hover(g: pd.DataFrame, call: bool = False) -> np.ndarray:
    """Hover text per bar, built as one string array (plotly validates a string array at numpy speed; ten
    columns of object customdata cost seconds at 5000 bars)."""

    def txt(col: str) -> pd.Series:
        return g[col].astype("string").fillna("—") if col in g else pd.Series("—", index=g.index, dtype="string")

    occ = g["occupancy_theoretical_pct"].fillna(g["occupancy_est_pct"]).round(0).astype("string").fillna("—")
    dur = (g["duration_ns"].astype(float) / 1e3).round(3).astype("string").fillna("—")
    s = (
        "<b>"
        + ("call: " if call else "")
        + g["kernel"].astype("string").fillna("?").str[:90]
        + "</b><br>case "
        + txt("case")
        + "<br>"
        + dur
        + " µs · grid "
        + txt("grid_x")
        + "×"
        + txt("grid_y")
        + "×"
        + txt("grid_z")
        + " · block "
        + txt("block_x")
        + "×"
        + txt("block_y")
        + "×"
        + txt("block_z")
        + "<br>registers "
        + txt("registers_per_thread")
        + " · shared mem "
        + txt("shared_mem_bytes")
        + " B<br>launch latency "
        + txt("launch_latency_ns")
        + " ns · occupancy "
        + occ
        + " %<br><i>click for the full row</i>"
    )
    return s.to_numpy(dtype=str)


HOVER = "%{hovertext}<extra></extra>"


def figure(
    runs: dict[str, pd.DataFrame],
    *,
    collapse_ns: float = 0.0,
    search: str = "",
    selected: int | None = None,
    limit: int = LIMIT,
    bins: int = BINS,
) -> tuple[go.Figure, str | None, pd.DataFrame]:
    """The timeline of one or more launch tables (``{"A": launches, "B": launches}``; one table draws without
    a prefix). Returns the figure, a note for the page (folding, untimed rows) and the drawn rows (``_row``
    is each row's number there, which a selection reports back)."""
    parts, marks = [], []
    for name, launches in runs.items():
        df = relative(launches)
        if df.empty:
            continue
        df, cut = collapse_gaps(df, collapse_ns)
        prefix = f"{name} · " if len(runs) > 1 else ""
        df["_gpu_lane"] = prefix + gpu_lane(df)
        df["_host_lane"] = prefix + host_lane(df)
        df["_run"] = name
        parts.append(df)
        marks += cut
    if not parts:
        return go.Figure(), "no launch here has timestamps (ncu and summary rows have none)", pd.DataFrame()
    df = pd.concat(parts, ignore_index=True)
    df["_row"] = np.arange(len(df))
    df["kind"] = df["kind"].fillna("kernel")
    df["_name"] = names(df["kernel"])
    lanes = _lane_order(df)
    if len(df) > limit:
        fig, note = _folded(df, bins, limit), None
        note = (
            f"{len(df)} launches, more than a browser draws one by one ({limit}): each bar is every event of "
            f"its lane in one of {bins} intervals, coloured by the kernel that took most of its time. Zoom with "
            f"the time window, or pick cases, to {limit} launches or fewer to see single launches."
        )
    else:
        fig, note = _single(df, search, selected), None
    if marks:
        _gap_marks(fig, marks, lanes)
    fig.update_yaxes(
        type="category", categoryorder="array", categoryarray=lanes[::-1], fixedrange=True, title_text=None
    )
    fig.update_xaxes(
        title_text="µs from the first event" + (" (idle gaps collapsed)" if marks else ""),
        rangeslider=dict(visible=True, thickness=0.09),
        showspikes=True,
        spikemode="across",
        spikethickness=1,
    )
    fig.update_layout(
        barmode="overlay",
        height=max(MIN_HEIGHT, 150 + 34 * len(lanes)),
        dragmode="zoom",
        margin=dict(t=40, b=30, l=10, r=10),
        legend=dict(title="kernel", itemsizing="constant"),
        uniformtext=dict(minsize=9, mode="hide"),
        hovermode="closest",
    )
    return fig, note, df


def _gap_marks(fig: go.Figure, marks: list[tuple[float, float]], lanes: list[str]) -> None:
    """Where idle time was cut: one dotted line per cut (a single trace: thousands of layout shapes would take
    plotly seconds), hover saying how much; a label above the plot while there are few."""
    at = np.array([m[0] for m in marks]) / 1e3
    xs = np.stack([at, at, np.full_like(at, np.nan)], axis=1).ravel()  # NaN breaks the line between cuts
    ys = np.tile(np.array([0.0, len(lanes) - 1.0, np.nan]), len(marks))  # category positions, bottom to top
    label = np.array([f"{style.us(g / 1e3)} idle cut here" for _, g in marks])
    text = np.stack([label, label, np.full_like(label, "")], axis=1).ravel()
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            name="idle gaps (cut)",
            text=text,
            hoverinfo="text",
            line=dict(color="#888", width=1, dash="dot"),
        )
    )
    if len(marks) <= 12:
        for at_ns, gap_ns in marks:
            fig.add_annotation(
                x=at_ns / 1e3,
                y=1.0,
                yref="paper",
                text=f"⋯ {style.us(gap_ns / 1e3)} idle",
                showarrow=False,
                font=dict(size=9, color="#666"),
                yanchor="bottom",
            )


def _lane_order(df: pd.DataFrame) -> list[str]:
    out = []
    for _, g in df.groupby("_run", sort=True):
        host = g.loc[g["api_start_ns"].notna(), "_host_lane"].unique().tolist()
        out += sorted(host) + sorted(g.loc[g["kind"] != "sync", "_gpu_lane"].unique().tolist())
    return out


def _legend_names(df: pd.DataFrame) -> list[str]:
    gpu = df[df["kind"] != "sync"]
    total = gpu.groupby("_name")["duration_ns"].sum().sort_values(ascending=False)
    return total.index[:LEGEND_KERNELS].tolist()


def _single(df: pd.DataFrame, search: str, selected: int | None) -> go.Figure:
    fig = go.Figure()
    host = df[df["api_start_ns"].notna()]
    if not host.empty:
        colours = np.where(host["kind"] == "sync", SYNC_COLOUR, HOST_COLOUR)
        fig.add_trace(
            go.Bar(
                base=host["api_start_ns"] / 1e3,
                x=(host["api_end_ns"] - host["api_start_ns"]).clip(lower=1) / 1e3,
                y=host["_host_lane"],
                orientation="h",
                name="launch / sync calls",
                marker=dict(color=colours),
                customdata=host["_row"].to_numpy(),
                hovertext=_hover(host, call=True),
                hovertemplate=HOVER,
            )
        )
    gpu = df[df["kind"] != "sync"]
    span = float(df["end_ns"].max() - df["start_ns"].min()) or 1.0
    named = set(_legend_names(df))
    query = search.strip().lower()
    for name in [*_legend_names(df), None]:
        g = gpu[gpu["_name"] == name] if name is not None else gpu[~gpu["_name"].isin(named)]
        if g.empty:
            continue
        matched = (
            not query
            or (name is not None and query in name.lower())
            or (name is None and g["kernel"].astype(str).str.lower().str.contains(query, regex=False).any())
        )
        label = _fitted(g["_name"], g["duration_ns"] / span)
        fig.add_trace(
            go.Bar(
                base=g["start_ns"] / 1e3,
                x=g["duration_ns"].astype(float).clip(lower=1) / 1e3,
                y=g["_gpu_lane"],
                orientation="h",
                name=name if name is not None else f"other kernels ({g['_name'].nunique()})",
                marker=dict(color=style.colour(name) if name is not None else "#d0d0d0", line=dict(width=0)),
                opacity=1.0 if matched else 0.15,
                text=label,
                textposition="inside",
                insidetextanchor="start",
                textfont=dict(size=11),
                customdata=g["_row"].to_numpy(),
                hovertext=_hover(g),
                hovertemplate=HOVER,
            )
        )
    if selected is not None and 0 <= selected < len(df):
        _mark(fig, df.iloc[selected])
    return fig


def _fitted(names: pd.Series, fraction: pd.Series, plot_px: float = 1000, char_px: float = 6.5) -> np.ndarray:
    """Each box's label cut to what fits its width at the default zoom ('' below four characters); the
    figure's uniformtext rule hides what still does not fit."""
    chars = (fraction.to_numpy() * plot_px / char_px).astype(int)
    out = [n if len(n) <= c else (n[: c - 1] + "…" if c >= 4 else "") for n, c in zip(names.to_numpy(), chars)]
    return np.array(out, dtype=str)


def _mark(fig: go.Figure, r: pd.Series) -> None:
    """The selected launch: outlined, and a line from its launch call to its kernel."""
    if pd.notna(r["start_ns"]) and r["kind"] != "sync":
        fig.add_trace(
            go.Bar(
                base=[r["start_ns"] / 1e3],
                x=[max(r["duration_ns"], 1) / 1e3],
                y=[r["_gpu_lane"]],
                orientation="h",
                name="selected",
                showlegend=False,
                hoverinfo="skip",
                marker=dict(color="rgba(0,0,0,0)", line=dict(color="black", width=2.5)),
            )
        )
    if pd.notna(r["api_start_ns"]) and r["kind"] != "sync":
        fig.add_trace(
            go.Scatter(
                x=[r["api_start_ns"] / 1e3, r["start_ns"] / 1e3],
                y=[r["_host_lane"], r["_gpu_lane"]],
                mode="lines+markers",
                name="launch -> kernel",
                hoverinfo="skip",
                line=dict(color="#d62728", width=2),
                marker=dict(size=6, symbol="arrow-bar-up"),
            )
        )


def _folded(df: pd.DataFrame, bins: int, limit: int) -> go.Figure:
    parts = []
    for _, g in df.groupby("_run", sort=True):
        # timeline_bins names lanes itself ("GPU {device} · stream {stream}", "host thread {tid}"): hand it this
        # run's lane names as the device and thread, then strip its wording again
        f = timeline_bins(g.assign(device=g["_gpu_lane"], stream=None, tid=g["_host_lane"]), bins)
        kernels = f["track"] == "kernels"
        f["lane"] = np.where(
            kernels,
            f["lane"].str.removeprefix("GPU ").str.removesuffix(" · stream ?"),
            f["lane"].str.removeprefix("host thread "),
        )
        parts.append(f)
    folded = pd.concat(parts, ignore_index=True)
    folded["_name"] = names(folded["top_kernel"])
    fig = go.Figure()
    for (track, name), g in folded.groupby(["track", "_name"], sort=False):
        span = (g["end_ns"] - g["start_ns"]).clip(lower=1.0)
        busy = (100 * g["busy_ns"] / span).clip(upper=100)
        fig.add_trace(
            go.Bar(
                base=g["start_ns"] / 1e3,
                x=span / 1e3,
                y=g["lane"],
                orientation="h",
                name=name if track == "kernels" else "launch / sync calls",
                legendgroup=f"{track}{name}",
                showlegend=track == "kernels",
                marker=dict(color=style.colour(name) if track == "kernels" else HOST_COLOUR),
                customdata=np.stack(
                    [
                        g["events"],
                        busy.round(0),
                        g["busy_ns"] / 1e3,
                        g["top_kernel"].astype(str).str[:80],
                        g["kernels"],
                        g["cases"],
                    ],
                    axis=-1,
                ),
                hovertemplate=(
                    "%{customdata[0]} events, busy %{customdata[1]}% (%{customdata[2]:.1f} µs)<br>"
                    "most time: %{customdata[3]}<br>%{customdata[4]} kernels, %{customdata[5]} cases"
                    "<extra>folded</extra>"
                ),
            )
        )
    fig.update_layout(title=dict(text="Timeline (folded into intervals)", font=dict(size=13)))
    return fig


def launch_row(df: pd.DataFrame, row: int) -> pd.DataFrame:
    """One drawn launch as a two-column table of every field it has (grid, block, registers, occupancy,
    latency, config and autotune pick...)."""
    r = df.iloc[row]
    keep = {
        k: v
        for k, v in r.items()
        if not str(k).startswith("_")
        and v is not None
        and not (isinstance(v, float) and np.isnan(v))
        and v is not pd.NA
    }
    for c in STAMPS:  # shown as on the axis, not as raw clock values
        if c in keep:
            keep[c.replace("_ns", "") + " (µs on the axis)"] = round(float(keep.pop(c)) / 1e3, 3)
    return pd.DataFrame({"field": list(keep), "value": [str(v) for v in keep.values()]})
