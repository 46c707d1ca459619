"""The dashboard's charts as Vega-Lite specs: DataFrame in, spec (a dict) out (no Streamlit here, so they test
alone)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

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
    """1-2-5 ticks spanning [lo, hi] for a log axis (a log axis's own ticks crowd or skip decades)."""
    if not (lo > 0 and hi > 0):
        return []
    out = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        out += [m * 10.0**e for m in (1, 2, 5)]
    inside = [v for v in out if lo / 1.5 <= v <= hi * 1.5]
    if not inside:  # a range narrower than one 1-2-5 step (one value): the steps on either side of it
        return [max(v for v in out if v <= lo), min(v for v in out if v >= hi)]
    if len(inside) <= 8:
        return inside
    # too many for one axis: the decades from the one at or below lo to the one at or above hi (keeping only
    # the 1s inside lo/1.5 .. hi*1.5 could end a decade short: 1.38-353 µs ended at 100)
    return [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


COMPARE_HEIGHT = 820  # px: the four panels and their titles
PANEL_HEIGHT = 280
PANEL_WIDTH = 390  # two side by side, axes included, in a wide page on a 1500 px screen with the sidebar open
BEST = "best version at the shape"  # drawn as a star in the legend too
# a five-pointed star as an SVG path in Vega's unit square (Vega has no star symbol)
STAR = (
    "M0,-1L0.225,-0.309L0.951,-0.309L0.363,0.118L0.588,0.809L0,0.382L-0.588,0.809L-0.363,0.118L-0.951,-0.309"
    "L-0.225,-0.309Z"
)
THIS_RUN, ADDED_RUN = "this run", "added run (dashed)"


def _json_value(v: object) -> object:
    """A cell as JSON carries it to the browser: NaN and NA as null (the spec is parsed as strict JSON)."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def compare_records(df: pd.DataFrame, best: pd.Series) -> list[dict]:
    """One record per plotted case: the four panels' values, hover texts with units, whether the version
    is another run's (dashed) and whether it is the fastest correct one at its shape (starred)."""
    out = []
    for (_, r), is_best in zip(df.iterrows(), best):
        provider = str(r["provider"])
        rec = {
            "shape": str(r["shape"]),
            "provider": provider,
            "run": ADDED_RUN if " @ " in provider else THIS_RUN,
            "best": bool(is_best),
            "time": style.us(r["gpu_time_us"]),
            "bandwidth": f"{number(r.get('gbps'), '.0f')} GB/s",
            "vs_baseline": f"{number(r.get('speedup'), '.2f')}×",
            "occupancy": f"{number(r.get('occupancy_theoretical_pct'), '.0f')}%",
        }
        rec.update({col: _json_value(r.get(col)) for col, *_ in COMPARE_PANELS})
        out.append(rec)
    return out


def compare_panels(
    metrics: pd.DataFrame,
    dtype: str,
    ceiling: float | None = None,
    baseline: str = "best PyTorch per shape",
    width: int = PANEL_WIDTH,
) -> dict:
    """Compare's four panels for one dtype as one Vega-Lite spec (``st.vega_lite_chart``): shapes as
    categories in sweep order, every provider in its colour (:func:`style.colour`; another run's version
    ``provider @ run`` dashed in the same colour), one legend for the four panels (click a version there
    to pick it out in all four), the fastest correct version at each shape starred in the time and speedup
    panels, the time axis logarithmic with 1-2-5 ticks in µs / ms, hover with every panel's value.

    Vega-Lite rather than plotly: a fresh browser draws it about a second sooner (plotly's code alone is a
    4.7 MB chunk; the roofline's docstring says what was measured). The data is inline in each panel:
    Streamlit ships a top-level or named data set as Arrow, whose code the browser would then load too."""
    order = shape_order(metrics[metrics["dtype"] == dtype])
    df = ok_rows(metrics[metrics["dtype"] == dtype]).copy()
    df["shape"] = df["shape"].astype(str)
    df["_o"] = df["shape"].map({s: i for i, s in enumerate(order)})
    df = df.sort_values(["_o", "provider"], kind="stable")
    values = compare_records(df, best_per_shape(df) if not df.empty else pd.Series(dtype=bool))
    providers = sorted({v["provider"] for v in values})
    added = any(v["run"] == ADDED_RUN for v in values)
    colour = {
        "field": "provider",
        "type": "nominal",
        "scale": {"domain": providers, "range": [style.colour(p) for p in providers]},
        # under the panels, in columns: version names are long (a sweep's `v[BLOCK_N=4096,num_warps=8]`)
        "legend": {"title": "version", "labelLimit": 300, "orient": "bottom", "columns": 4},
    }
    marks = [THIS_RUN, *([ADDED_RUN] if added else []), BEST]
    shape_enc = {
        "field": "run",
        "type": "nominal",
        "scale": {"domain": marks, "range": ["circle", *(["diamond"] if added else []), STAR]},
        "legend": {
            "title": None,
            "orient": "bottom",
            "labelLimit": 300,
            "symbolStrokeColor": "black",
            "symbolFillColor": "white",
        },
    }
    picked = {"condition": {"param": "pick", "value": 1.0}, "value": 0.12}  # legend click: that version only
    tooltip = [
        {"field": "provider", "title": "version"},
        {"field": "shape"},
        {"field": "time", "title": "GPU time"},
        {"field": "bandwidth"},
        {"field": "vs_baseline", "title": f"speedup over {baseline}"},
        {"field": "occupancy", "title": "theoretical occupancy"},
    ]
    x = {
        "field": "shape",
        "type": "nominal",
        "sort": order,
        "scale": {"domain": order},
        "title": "shape (rows × N)",
        "axis": {"labelAngle": -35, "labelLimit": 120, "labelOverlap": False},  # every shape named
    }
    panels = []
    for k, (col, title, unit, log_y) in enumerate(COMPARE_PANELS):
        vals = pd.Series([v[col] for v in values if v[col] is not None and v[col] > 0], dtype=float)
        y = {"field": col, "type": "quantitative", "title": unit, "scale": {"type": "log" if log_y else "linear"}}
        if log_y and not vals.empty:
            y["axis"] = {"values": nice_ticks(float(vals.min()), float(vals.max()))}
            if unit == "µs":
                y["axis"]["labelExpr"] = (
                    "datum.value >= 1000 ? format(datum.value / 1000, '~g') + ' ms' : format(datum.value, '~g') + ' µs'"
                )
        if not log_y:
            y["scale"]["zero"] = col != "gpu_time_us"
        data = {"values": values}
        has = {"filter": f"isValid(datum['{col}']) && datum['{col}'] > 0"}
        line = {
            "data": data,
            "transform": [has],
            "mark": {"type": "line", "point": {"size": 45, "filled": True}, "strokeWidth": 2},
            "encoding": {
                "x": x,
                "y": y,
                "color": colour,
                "detail": {"field": "provider"},
                # the same field, domain and legend as the shape: Vega-Lite merges the two into one legend
                "strokeDash": {
                    **shape_enc,
                    "scale": {"domain": marks, "range": [[1, 0] if m != ADDED_RUN else [6, 4] for m in marks]},
                },
                "shape": shape_enc,
                "opacity": picked,
                "tooltip": tooltip,
            },
        }
        if not vals.empty and not any("params" in pl["layer"][0] for pl in panels if pl["layer"]):
            line["params"] = [{"name": "pick", "select": {"type": "point", "fields": ["provider"]}, "bind": "legend"}]
        layers = [line] if not vals.empty else []
        if k in (0, 2) and not vals.empty:
            layers.append(
                {
                    "data": data,
                    "transform": [has, {"filter": "datum.best"}, {"calculate": repr(BEST), "as": "run"}],
                    "mark": {"type": "point", "size": 420, "filled": False, "strokeWidth": 1.6, "color": "black"},
                    "encoding": {
                        "x": x,
                        "y": y,
                        "shape": shape_enc,
                        "tooltip": [{"field": "provider", "title": "best"}, *tooltip[1:]],
                    },
                }
            )
        if col == "speedup" and not vals.empty:
            layers.append(_rule(1.0, "#555", [2, 3], f"= {baseline}", y))
        if col == "gbps" and ceiling:
            layers.append(_rule(float(ceiling), "#333", [6, 4], f"measured copy ceiling {ceiling:.0f} GB/s", y))
        if vals.empty:
            layers.append(
                {
                    "data": {"values": [{"text": f"no {style.COLUMNS.get(col, (col,))[0]} in this run"}]},
                    "mark": {"type": "text", "x": width / 2, "y": PANEL_HEIGHT / 2, "color": "#666", "fontSize": 13},
                    "encoding": {"text": {"field": "text"}},
                }
            )
        panels.append(
            {
                "title": title.format(baseline=baseline),
                "width": width,
                "height": PANEL_HEIGHT,
                "layer": layers,
            }
        )
    return {
        # two rows of two: Streamlit sizes a vconcat of hconcats by the panels' own sizes (a flat "concat"
        # with "columns" drew nothing in Streamlit 1.67)
        "vconcat": [{"hconcat": panels[:2], "spacing": 40}, {"hconcat": panels[2:], "spacing": 40}],
        "spacing": 24,
        "resolve": {"scale": {"color": "shared", "shape": "shared", "strokeDash": "shared"}},
        **LIGHT,
    }


# Drawn on a canvas, without ARIA descriptions: Streamlit draws a chart as SVG, one DOM element per point, line,
# tick and label (about 750 for Compare's panels), and Vega-Lite writes a description for every mark for screen
# readers (an expression evaluated per point). Streamlit itself turns both off for charts of thousands of
# marks. Hover, the legend's click and the stars are the same on a canvas; the table under the chart holds
# every value as accessible text.
LIGHT = {"usermeta": {"embedOptions": {"renderer": "canvas"}}, "config": {"aria": False}}


def _rule(at: float, colour: str, dash: list[int], text: str, y: dict) -> dict:
    """A labelled horizontal line across a panel (the copy ceiling, speedup 1)."""
    y = {**y, "field": "y"}
    return {
        "data": {"values": [{"y": at, "text": text}]},
        "layer": [
            {"mark": {"type": "rule", "color": colour, "strokeDash": dash}, "encoding": {"y": y}},
            {
                "mark": {"type": "text", "align": "right", "dy": -7, "x": "width", "color": colour, "fontSize": 10},
                "encoding": {"y": y, "text": {"field": "text"}},
            },
        ],
    }


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
