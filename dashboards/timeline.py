"""The Trace page's timeline: launch table(s) in, one Vega-Lite spec out (no Streamlit here, so it tests alone).

Vega-Lite rather than plotly: in a fresh headless Chromium on a 2-core box the same timeline alone drew in
1.7-2.2 s against 2.6-4.6 s with 46 launches, 4.1-5.5 s against 7.2-9.4 s with 4900
(``benchmarks/dashboard_pages.py --widgets trace``); plotly's code alone is a 4.7 MB chunk.

What it draws, and why:
- one lane per (device, stream) for GPU work and per host thread for launch/sync calls, lanes fixed (the
  y axis does not zoom), zoom and pan along time only with the brush of an overview strip below (the whole
  trace), which sets the main chart's time range;
- every kernel in its own colour (:func:`kprof.dashboards.style.colour` of its short name: the same kernel is
  the same colour on every page and run), one legend entry each, its name written on boxes wide enough;
- a search box of the chart's own (a bound parameter): the kernels whose short or full name does not contain
  what is typed there are dimmed, in the browser;
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

from kprof.analysis import gpu_lane, host_lane, timeline_bins
from kprof.dashboards import style

# bars with hover: 4900 draw in about 3 s more than 46 in headless Chromium on a 2-core box; beyond 5000, fold
LIMIT = 5000
BINS = 800
LEGEND_KERNELS = 24  # kernels with their own legend entry; the rest share "other kernels"
STAMPS = ("start_ns", "end_ns", "api_start_ns", "api_end_ns")
HOST_COLOUR = "#b0b0b0"
MIN_HEIGHT = 120  # px, the main chart's height with few lanes
LANE_PX = 34
WIDTH = 1000  # px, the plot's width (legend under it): the wide page on a 1500 px screen with the sidebar
OTHER = "other kernels"
CALLS = "launch / sync calls"
PICK = "pick"  # the click selection's name: the page reads the clicked launch's row from it
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


def _hover(g: pd.DataFrame, call: bool = False) -> dict[str, list[str]]:
    """Hover fields per bar, as readable text columns (built column-wise: a row loop over 5000 launches
    costs a second)."""

    def txt(col: str) -> pd.Series:
        return g[col].astype("string").fillna("—") if col in g else pd.Series("—", index=g.index, dtype="string")

    occ = g["occupancy_theoretical_pct"].fillna(g["occupancy_est_pct"]).round(0).astype("string").fillna("—")
    dur = (g["duration_ns"].astype(float) / 1e3).round(3).astype("string").fillna("—")
    out = {
        "kernel": ("call: " if call else "") + g["kernel"].astype("string").fillna("?").str[:90],
        "case": txt("case"),
        "duration": dur + " µs",
        "grid": txt("grid_x") + "×" + txt("grid_y") + "×" + txt("grid_z"),
        "block": txt("block_x") + "×" + txt("block_y") + "×" + txt("block_z"),
        "registers": txt("registers_per_thread"),
        "shared_mem": txt("shared_mem_bytes") + " B",
        "latency": txt("launch_latency_ns") + " ns",
        "occupancy": occ + " %",
    }
    return {k: v.tolist() for k, v in out.items()}


TOOLTIP = [
    {"field": "kernel"},
    {"field": "case"},
    {"field": "duration"},
    {"field": "grid"},
    {"field": "block"},
    {"field": "registers"},
    {"field": "shared_mem", "title": "shared mem"},
    {"field": "latency", "title": "launch latency"},
    {"field": "occupancy", "title": "occupancy (theor.)"},
    {"field": "hint", "title": " "},
]


def figure(
    runs: dict[str, pd.DataFrame],
    *,
    collapse_ns: float = 0.0,
    search: str = "",
    selected: int | None = None,
    limit: int = LIMIT,
    bins: int = BINS,
) -> tuple[dict, str | None, pd.DataFrame]:
    """The timeline of one or more launch tables (``{"A": launches, "B": launches}``; one table draws without
    a prefix) as a Vega-Lite spec (empty when nothing has timestamps). Returns the spec, a note for the page
    (folding, untimed rows) and the drawn rows (``_row`` is each row's number there, which a click on a
    launch reports back through the ``pick`` selection)."""
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
        return {}, "no launch here has timestamps (ncu and summary rows have none)", pd.DataFrame()
    df = pd.concat(parts, ignore_index=True)
    df["_row"] = np.arange(len(df))
    df["kind"] = df["kind"].fillna("kernel")
    df["_name"] = names(df["kernel"])
    lanes = _lane_order(df)
    note = None
    if len(df) > limit:
        bars, domain = _folded(df, bins)
        note = (
            f"{len(df)} launches, more than a browser draws one by one ({limit}): each bar is every event of "
            f"its lane in one of {bins} intervals, coloured by the kernel that took most of its time. Narrow "
            f"the time window above, or pick cases, to {limit} launches or fewer to see single launches."
        )
    else:
        bars, domain = _single(df, search)
    title = "µs from the first event" + (" (idle gaps collapsed)" if marks else "")
    spec = _spec(bars, domain, lanes, marks, title, df, selected, folded=note is not None, search=search)
    return spec, note, df


def _records(columns: dict[str, list]) -> list[dict]:
    keys = list(columns)
    return [dict(zip(keys, vals)) for vals in zip(*columns.values())]


def _single(df: pd.DataFrame, search: str) -> tuple[list[dict], list[str]]:
    """One bar per kernel launch (its GPU lane) and per launch/sync call (its host thread's lane)."""
    gpu = df[df["kind"] != "sync"]
    legend = _legend_names(df)
    named = set(legend)
    key = gpu["_name"].where(gpu["_name"].isin(named), OTHER)
    query = search.strip().lower()
    dim = (
        ~(
            gpu["_name"].str.lower().str.contains(query, regex=False)
            | gpu["kernel"].astype(str).str.lower().str.contains(query, regex=False)
        )
        if query
        else pd.Series(False, index=gpu.index)
    )
    kernels = {
        "lane": gpu["_gpu_lane"].tolist(),
        "s": (gpu["start_ns"] / 1e3).tolist(),
        "e": (gpu["start_ns"] / 1e3 + gpu["duration_ns"].astype(float).clip(lower=1) / 1e3).tolist(),
        "name": gpu["_name"].tolist(),
        "key": key.tolist(),
        "row": gpu["_row"].astype(int).tolist(),
        "dim": dim.tolist(),
        **_hover(gpu),
    }
    host = df[df["api_start_ns"].notna()]
    calls = {
        "lane": host["_host_lane"].tolist(),
        "s": (host["api_start_ns"] / 1e3).tolist(),
        "e": (host["api_start_ns"] / 1e3 + (host["api_end_ns"] - host["api_start_ns"]).clip(lower=1) / 1e3).tolist(),
        "name": [""] * len(host),
        "key": np.where(host["kind"] == "sync", "sync calls", CALLS).tolist(),
        "row": host["_row"].astype(int).tolist(),
        "dim": [False] * len(host),
        **_hover(host, call=True),
    }
    bars = _records(kernels) + _records(calls)
    for b in bars:
        b["hint"] = "click for the full row"
    present = set(key) | set(calls["key"])
    return bars, [k for k in [*legend, OTHER, CALLS, "sync calls"] if k in present]


def _colour(domain: list[str]) -> dict:
    fixed = {OTHER: "#d0d0d0", CALLS: HOST_COLOUR, "sync calls": SYNC_COLOUR}
    return {
        "field": "key",
        "type": "nominal",
        "scale": {"domain": domain, "range": [fixed.get(k) or style.colour(k) for k in domain]},
        "legend": {"title": "kernel", "orient": "bottom", "columns": 4, "labelLimit": 230},
    }


FIND = "find_kernel"  # the search box's parameter
FIND_LABEL = "find a kernel (dims the others) "
# dimmed: a kernel whose short name and (hover) name lack what is typed in the chart's search box, or that the
# page's ``search`` dimmed (``dim``); launch calls (no name) and folded intervals (no name field) never are
DIM_TEST = (
    f"datum.dim || ({FIND} != '' && isString(datum.name) && datum.name != '' && "
    f"indexof(lower(datum.name + ' ' + datum.kernel), lower(trim({FIND}))) < 0)"
)


def _spec(
    bars: list[dict],
    domain: list[str],
    lanes: list[str],
    marks: list[tuple[float, float]],
    title: str,
    df: pd.DataFrame,
    selected: int | None,
    folded: bool,
    search: str = "",
) -> dict:
    data = {"values": bars}
    whole = {"field": "s", "type": "quantitative", "title": title, "axis": {"grid": False}}
    # every layer of the main chart on the brush's range (a layer without it would widen the shared scale back
    # to the whole trace)
    x = {**whole, "scale": {"domain": {"param": "brush", "encoding": "x"}}}
    y = {"field": "lane", "type": "nominal", "sort": lanes, "scale": {"domain": lanes}, "title": None}
    colour = _colour(domain)
    tooltip = FOLDED_TOOLTIP if folded else TOOLTIP
    bar_layer = {
        "data": data,
        "mark": {"type": "rect", "height": {"band": 0.8}, "cursor": "pointer", "clip": True},
        "encoding": {
            "x": x,
            "x2": {"field": "e"},
            "y": y,
            "color": colour,
            "opacity": {"condition": {"test": DIM_TEST, "value": 0.15}, "value": 1.0},
            "tooltip": tooltip,
        },
        # a click on a launch selects its row (the page reruns with it); a folded bar has no row to report
        "params": [{"name": PICK, "select": {"type": "point", "fields": ["row"], "on": "click"}}],
    }
    layers = [bar_layer]
    if not folded:
        # a kernel's name on its box where it fits at the current zoom (measured in pixels on the x scale)
        fits = "scale('main_x', datum.e) - scale('main_x', datum.s) > 6.5 * length(datum.name) + 8"
        layers.append(
            {
                "data": data,
                "transform": [{"filter": "datum.name != ''"}],
                "mark": {"type": "text", "align": "left", "baseline": "middle", "dx": 4, "fontSize": 11, "clip": True},
                "encoding": {"x": x, "y": y, "text": {"condition": {"test": fits, "field": "name"}, "value": ""}},
            }
        )
    if marks:
        layers.append(_gap_layer(marks, x))
    if selected is not None and 0 <= selected < len(df) and not folded:
        layers += _selected_layers(df.iloc[selected], x, y)
    main = {"name": "main", "width": WIDTH, "height": max(MIN_HEIGHT, LANE_PX * len(lanes)), "layer": layers}
    overview = {
        "width": WIDTH,
        "height": 14 * len(lanes) + 10,
        "data": data,
        "mark": "rect",
        "encoding": {
            "x": {
                **whole,
                "title": "whole trace: drag here to pick a time range",
                "axis": {"grid": False, "labels": False},
            },
            "x2": {"field": "e"},
            "y": {**y, "axis": None},
            "color": colour,
        },
        # zoom and pan along time only, lanes fixed: the strip's brush is the main chart's time range (drag it
        # to pan, scroll over it to zoom). Not also the main chart's own wheel zoom: Vega-Lite lets a scale
        # bound to a zoom ignore the brush's range, so the two could not be used together
        "params": [{"name": "brush", "select": {"type": "interval", "encodings": ["x"], "zoom": "wheel!"}}],
    }
    # the kernel search is the chart's own text box (a parameter bound to an input, at the top level as
    # Vega-Lite wants for a multi-view chart): typing dims the other kernels in the browser, with no rerun and
    # none of a Streamlit text input's code, which a fresh browser loaded for this page alone
    find = {
        "name": FIND,
        "value": search,
        "bind": {"input": "text", "name": FIND_LABEL, "placeholder": "part of a name"},
    }
    # no ARIA descriptions (one expression per bar, for screen readers; the page's tables carry the launches as
    # text); drawn as SVG still, so that its boxes are elements a browser test can find and click
    return {
        "params": [find],
        "vconcat": [main, overview],
        "spacing": 8,
        "resolve": {"scale": {"color": "shared"}},
        "config": {"aria": False},
    }


def _gap_layer(marks: list[tuple[float, float]], x: dict) -> dict:
    """Where idle time was cut: a dotted line per cut, hover saying how much; labels above while there are few."""
    cuts = [{"s": at / 1e3, "idle": f"{style.us(gap / 1e3)} idle cut here"} for at, gap in marks]
    layers = [
        {
            "mark": {"type": "rule", "color": "#888", "strokeDash": [2, 3], "clip": True},
            "encoding": {"x": x, "tooltip": [{"field": "idle", "title": "gap"}]},
        }
    ]
    if len(marks) <= 12:
        layers.append(
            {
                "mark": {"type": "text", "y": -6, "fontSize": 9, "color": "#666"},
                "encoding": {"x": x, "text": {"field": "idle"}},
            }
        )
    return {"data": {"values": cuts}, "layer": layers}


def _selected_layers(r: pd.Series, x: dict, y: dict) -> list[dict]:
    """The selected launch: outlined, and a line from its launch call to its kernel."""
    if r["kind"] == "sync" or pd.isna(r["start_ns"]):
        return []
    box = {"s": r["start_ns"] / 1e3, "e": (r["start_ns"] + max(r["duration_ns"], 1)) / 1e3, "lane": r["_gpu_lane"]}
    out = [
        {
            "data": {"values": [box]},
            "mark": {
                "type": "rect",
                "height": {"band": 0.95},
                "fill": None,
                "stroke": "black",
                "strokeWidth": 2.5,
                "clip": True,
            },
            "encoding": {"x": x, "x2": {"field": "e"}, "y": y},
        }
    ]
    if pd.notna(r["api_start_ns"]):
        flow = {
            "s": r["api_start_ns"] / 1e3,
            "e": r["start_ns"] / 1e3,
            "lane": r["_host_lane"],
            "to": r["_gpu_lane"],
            "what": "launch -> kernel",
        }
        out.append(
            {
                "data": {"values": [flow]},
                "mark": {"type": "rule", "color": "#d62728", "strokeWidth": 2, "clip": True},
                "encoding": {
                    "x": x,
                    "x2": {"field": "e"},
                    "y": y,
                    "y2": {"field": "to"},
                    "tooltip": [{"field": "what"}],
                },
            }
        )
    return out


FOLDED_TOOLTIP = [
    {"field": "events"},
    {"field": "busy"},
    {"field": "top", "title": "most time"},
    {"field": "kernels"},
    {"field": "cases"},
]


def _folded(df: pd.DataFrame, bins: int) -> tuple[list[dict], list[str]]:
    """Each lane cut into ``bins`` intervals, each drawn as one bar coloured by the kernel that took most of
    its time (:func:`kprof.analysis.timeline_bins`)."""
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
    f = pd.concat(parts, ignore_index=True)
    f["_name"] = names(f["top_kernel"])
    kernels = f["track"] == "kernels"
    top = f.loc[kernels].groupby("_name")["busy_ns"].sum().sort_values(ascending=False).index[:LEGEND_KERNELS]
    key = np.where(kernels, f["_name"].where(f["_name"].isin(set(top)), OTHER), CALLS)
    span = (f["end_ns"] - f["start_ns"]).clip(lower=1.0)
    busy = (100 * f["busy_ns"] / span).clip(upper=100).round(0)
    bars = _records(
        {
            "lane": f["lane"].tolist(),
            "s": (f["start_ns"] / 1e3).tolist(),
            "e": (f["start_ns"] / 1e3 + span / 1e3).tolist(),
            "key": key.tolist(),
            "dim": [False] * len(f),
            "events": f["events"].astype(int).tolist(),
            "busy": (busy.astype("string") + "% (" + (f["busy_ns"] / 1e3).round(1).astype("string") + " µs)").tolist(),
            "top": f["top_kernel"].astype(str).str[:80].tolist(),
            "kernels": f["kernels"].astype(int).tolist(),
            "cases": f["cases"].astype(int).tolist(),
        }
    )
    present = set(key)
    return bars, [k for k in [*top, OTHER, CALLS] if k in present]


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
