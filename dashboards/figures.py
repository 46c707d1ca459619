"""The roofline as a Vega-Lite spec, and what every chart shares: correct rows, shapes in sweep order, the
baselines, the best version per shape, log ticks (DataFrame in, values out; no Streamlit here, so they test
alone). Compare's panels and Sweep's heatmap are HTML: :mod:`kprof.dashboards.html_chart`."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from kprof.dashboards import style
from kprof.registry import YARDSTICK_KINDS
from kprof.report import timed_by
from kprof.shapes import parse_shape


def elements(shape: str) -> int:
    return int(np.prod(parse_shape(shape)))


def ok_rows(metrics: pd.DataFrame) -> pd.DataFrame:
    """Correct, timed cases only: a failed case is never plotted as if it had a valid time."""
    return metrics[(metrics["status"] == "ok") & metrics["gpu_time_us"].notna()]


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


def _baseline_rows(metrics: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The correct runs of the providers ``baseline`` names (for "best PyTorch per shape", every PyTorch
    provider of the run)."""
    ok = ok_rows(metrics)
    ok = ok[~ok["provider"].astype(str).str.contains(" @ ")]  # added runs are compared, never the yardstick
    providers = BASELINES.get(baseline)
    if providers is None:
        pytorch = ok["kind"].isin(PYTORCH_KINDS) if "kind" in ok else ok["provider"].str.startswith("torch")
        return ok[pytorch]
    return ok[ok["provider"].isin(providers)]


def baseline_times(metrics: pd.DataFrame, baseline: str) -> pd.Series:
    """Per (shape, dtype), the baseline's time: the fastest correct run of the chosen providers (for
    "best PyTorch per shape", every PyTorch provider of the run)."""
    return _baseline_rows(metrics, baseline).groupby(["shape", "dtype"])["gpu_time_us"].min()


def with_baseline(metrics: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """``speedup`` = baseline time / time (above 1: faster than the baseline); NaN where either is missing, or
    where the two times are not one measurement (CUPTI against the CUDA-event fallback: ``kprof.report.timed_by``,
    the rule of the report's vs column)."""
    rows = _baseline_rows(metrics, baseline)
    rows = rows.assign(_by=timed_by(rows)).dropna(subset=["gpu_time_us"])
    best = rows.loc[rows.groupby(["shape", "dtype"])["gpu_time_us"].idxmin()].set_index(["shape", "dtype"])
    keys = pd.MultiIndex.from_arrays([metrics["shape"], metrics["dtype"]])
    b = pd.Series(best["gpu_time_us"].reindex(keys).to_numpy(), index=metrics.index)
    b_by = pd.Series(best["_by"].reindex(keys).to_numpy(), index=metrics.index)
    t = metrics["gpu_time_us"].where(metrics["gpu_time_us"] > 0)
    same = (b_by == pd.Series(timed_by(metrics), index=metrics.index)) & alike(metrics)
    return metrics.assign(speedup=(b / t).where(same))


def alike(metrics: pd.DataFrame) -> pd.Series:
    """True where a row was measured as the page's run was: Compare marks an added run's cases measured on
    another GPU or in another timing mode (``unlike``, the reason), which are drawn but never ranked against it."""
    if "unlike" not in metrics:
        return pd.Series(True, index=metrics.index)
    return metrics["unlike"].fillna("").astype(str) == ""


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


def best_per_shape(metrics: pd.DataFrame) -> pd.Series:
    """True where the row is the fastest correct provider of its (shape, dtype); roofline yardsticks and floors
    (one cuBLAS product, a copy of x: not the family's function) and cases not measured alike (:func:`alike`)
    are never the best."""
    ok = ok_rows(metrics)
    ok = ok[alike(ok)]  # another GPU's or timing mode's time: not this run's to rank
    if "kind" in ok:
        ok = ok[~ok["kind"].isin(YARDSTICK_KINDS)]
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
