"""Charts drawn as positioned HTML for ``st.html``: no chart library for a fresh browser to fetch, compile and
draw (no Streamlit here, so they test alone).

Why not Vega-Lite for Compare, Correctness and Sweep: on the 2-core box where the page times are taken, a
fresh browser reached Compare's last element in 2.27 s without its Vega-Lite chart and 2.63 s with it, and
Correctness's in 1.77 against 2.20 s: Vega's code and its first draw were the difference. Drawn here,
Compare's first visit took 1.97 s at the median against 2.59, and Sweep's 1.99 against 2.25
(``benchmarks/results/dashboard-pages/``). Trace and Roofline keep Vega-Lite: they zoom, and Trace's clicks
select launches.
Why not SVG: ``st.html`` keeps HTML only (DOMPurify's html profile), so marks are absolutely placed
elements, lines are rotated borders, and picking a version out is CSS (``:has`` on a checkbox), with no
script. Each mark carries its value in ``data-`` attributes and its details in a native tooltip."""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import numpy as np
import pandas as pd

from kprof.dashboards import style
from kprof.dashboards.figures import best_per_shape, nice_ticks, ok_rows, shape_order
from kprof.fmt import number


def place(left: float, top: float, css: str, inner: str = "", **attrs: str) -> str:
    """One absolutely placed element; ``attrs`` become attributes (``data_x`` -> ``data-x``, ``class_`` ->
    ``class``), escaped."""
    extra = "".join(f' {k.rstrip("_").replace("_", "-")}="{escape(str(val))}"' for k, val in attrs.items())
    return f'<div style="position:absolute;left:{left:.1f}px;top:{top:.1f}px;{css}"{extra}>{inner}</div>'


def segment(x1: float, y1: float, x2: float, y2: float, css: str, **attrs: str) -> str:
    """A straight line from (x1, y1) to (x2, y2): a top border of that length, turned about its start."""
    length, angle = math.hypot(x2 - x1, y2 - y1), math.atan2(y2 - y1, x2 - x1)
    return place(
        x1, y1, f"width:{length:.1f}px;height:0;{css};transform:rotate({angle:.4f}rad);transform-origin:0 0", **attrs
    )


def linear_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Ticks at a 1-2-5 step from lo (rounded down to the step) to at least hi: about ``most`` steps."""
    if not hi > lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / most
    decade = 10.0 ** math.floor(math.log10(raw))
    step = min(m * decade for m in (1, 2, 5, 10) if m * decade >= raw)
    first = math.floor(lo / step) * step
    n = math.ceil((hi - first) / step - 1e-9)
    return [round(first + i * step, 12) for i in range(n + 1)]


class Axis:
    """A y scale: value -> pixel from ``top`` (largest) to ``bottom`` (smallest), linear or logarithmic."""

    def __init__(self, ticks: list[float], values: list[float], top: float, bottom: float, log: bool) -> None:
        self.log, self.top, self.bottom = log, top, bottom
        every = [v for v in [*ticks, *values] if (v > 0 or not log)]
        self.lo, self.hi = min(every), max(every)
        if self.hi == self.lo:
            self.lo, self.hi = (self.lo / 2, self.hi * 2) if log else (self.lo - 1, self.hi + 1)
        self.ticks = ticks

    def _t(self, v: float) -> float:
        return math.log10(v) if self.log else v

    def y(self, v: float) -> float:
        frac = (self._t(v) - self._t(self.lo)) / (self._t(self.hi) - self._t(self.lo))
        return self.bottom - frac * (self.bottom - self.top)


def time_label(v: float) -> str:
    """A time tick: µs below a millisecond, ms from there (1-2-5 steps: 2 ms, never 2000 µs)."""
    return f"{v / 1000:g} ms" if v >= 1000 else f"{v:g} µs"


COMPARE_PANELS = (  # (metric, panel title, axis title, log y)
    ("gpu_time_us", "GPU time per call", "µs", True),
    ("gbps", "Bandwidth", "GB/s", False),
    ("speedup", "Speedup over {baseline}", "×", False),
    ("occupancy_theoretical_pct", "Theoretical occupancy of the main kernel", "%", False),
)
BEST = "best version at the shape"  # starred in the legend too
THIS_RUN, ADDED_RUN = "this run", "added run (dashed)"


def _value(v: object) -> object:
    """A cell as a plain Python value, NaN and NA as None (not drawn)."""
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
        rec.update({col: _value(r.get(col)) for col, *_ in COMPARE_PANELS})
        out.append(rec)
    return out


# Compare's panels: two rows of two, each a plot area with its y labels to the left and shapes below
PANEL_WIDTH = 390  # px of plot area; with the y labels, two side by side fit a wide page with the sidebar open
PANEL_HEIGHT = 260
Y_LABELS = 62  # px left of a plot area for its tick labels
TITLE = 26  # px above a plot area for its title
X_LABELS = 96  # px below a plot area for the shapes, written at a slant
GAP = 36  # px between the two panels of a row
LEGEND_COLUMNS = 3
LEGEND_ROW = 22
PICKED_OUT = 0.12  # opacity of the versions not picked, once one is


def compare_panels(
    metrics: pd.DataFrame, dtype: str, ceiling: float | None = None, baseline: str = "best PyTorch per shape"
) -> str:
    """Compare's four panels for one dtype (:data:`figures.COMPARE_PANELS`) as one block of HTML: shapes as
    categories in sweep order, every version in its colour (:func:`style.colour`; another run's
    ``provider @ run`` dashed, with diamonds, in the same colour), one legend for the four panels (tick
    versions there to pick them out in all four), the fastest correct version at each shape starred in the
    time and speedup panels, the time axis logarithmic with 1-2-5 ticks in µs / ms, and each point's hover
    with every panel's value."""
    order = shape_order(metrics[metrics["dtype"] == dtype])
    df = ok_rows(metrics[metrics["dtype"] == dtype]).copy()
    df["shape"] = df["shape"].astype(str)
    df["_o"] = df["shape"].map({s: i for i, s in enumerate(order)})
    df = df.sort_values(["_o", "provider"], kind="stable")
    records = compare_records(df, best_per_shape(df) if not df.empty else pd.Series(dtype=bool))
    providers = sorted({r["provider"] for r in records})
    index = {p: i for i, p in enumerate(providers)}
    for r in records:
        r["tip"] = _tip(r, baseline)
    out = []
    for k, (col, title, unit, log_y) in enumerate(COMPARE_PANELS):
        rules = []
        if col == "speedup":
            rules.append(Rule(1.0, "#555", "dotted", f"= {baseline}"))
        if col == "gbps" and ceiling:
            rules.append(Rule(float(ceiling), "#333", "dashed", f"measured copy ceiling {ceiling:.0f} GB/s"))
        panel = Panel(
            col,
            title.format(baseline=baseline),
            unit,
            log_y,
            left=(k % 2) * (Y_LABELS + PANEL_WIDTH + GAP) + Y_LABELS,
            top=(k // 2) * (TITLE + PANEL_HEIGHT + X_LABELS) + TITLE,
            rules=tuple(rules),
            stars=k in (0, 2),
        )
        out += _panel(panel, [r for r in records if r[col] is not None and r[col] > 0], order, index)
    top = 2 * (TITLE + PANEL_HEIGHT + X_LABELS) + 8
    legend, height = _legend(providers, index, records, top)
    width = 2 * (Y_LABELS + PANEL_WIDTH) + GAP
    css = f".kprof-compare:has(input:checked) .kp-m{{opacity:{PICKED_OUT}}}" + "".join(
        f".kprof-compare:has(.kp-i{i}:checked) .kp-v{i}{{opacity:1}}" for i in range(len(providers))
    )
    # the style element inside the block: a leading one would be parsed into the document head and dropped
    return (
        f'<div class="kprof-compare" style="position:relative;width:{width}px;height:{top + height}px;'
        f'font-size:12px;line-height:1.2"><style>{css}</style>{"".join(out)}{"".join(legend)}</div>'
    )


def _tip(r: dict, baseline: str) -> str:
    return "\n".join(
        (
            r["provider"],
            f"shape {r['shape']}",
            f"GPU time {r['time']}",
            f"bandwidth {r['bandwidth']}",
            f"speedup over {baseline} {r['vs_baseline']}",
            f"theoretical occupancy {r['occupancy']}",
        )
    )


@dataclass(frozen=True)
class Rule:
    """A labelled horizontal line across a panel (the copy ceiling, the baseline's 1.0)."""

    at: float
    colour: str
    dash: str  # CSS border style
    text: str


@dataclass(frozen=True)
class Panel:
    """One of Compare's panels: which column it plots and how, and where its plot area lies (px)."""

    col: str
    title: str
    unit: str
    log_y: bool
    left: float
    top: float
    rules: tuple[Rule, ...] = ()
    stars: bool = False

    @property
    def bottom(self) -> float:
        return self.top + PANEL_HEIGHT


def _panel(p: Panel, drawn: list[dict], order: list[str], index: dict[str, int]) -> list[str]:
    """One panel: its frame (title, ticks, shapes, rules), then each version's line and points."""
    title_css = "font-weight:600;white-space:nowrap"
    box_css = f"width:{PANEL_WIDTH}px;height:{PANEL_HEIGHT}px;border:1px solid #ccc;box-sizing:border-box"
    out = [
        place(p.left - Y_LABELS, p.top - TITLE, title_css, escape(p.title), class_="kp-title", data_panel=p.col),
        place(p.left, p.top, box_css),
    ]
    if not drawn:
        text = f"no {style.COLUMNS.get(p.col, (p.col,))[0]} in this run"
        css = f"width:{PANEL_WIDTH}px;text-align:center;color:#666"
        return [
            *out,
            place(p.left, p.top + PANEL_HEIGHT / 2 - 8, css, escape(text), class_="kp-empty", data_panel=p.col),
        ]
    values = [float(r[p.col]) for r in drawn]
    extra = [rule.at for rule in p.rules]
    ticks = nice_ticks(min(values), max(values)) if p.log_y else linear_ticks(0.0, max([*values, *extra]) * 1.05)
    axis = Axis(ticks, [*values, *extra], p.top + 6, p.bottom - 6, p.log_y)
    step = PANEL_WIDTH / max(len(order), 1)
    xs = {s: p.left + step * (i + 0.5) for i, s in enumerate(order)}
    return out + _frame(p, axis, xs) + _marks(p, axis, xs, drawn, index)


def _frame(p: Panel, axis: Axis, xs: dict[str, float]) -> list[str]:
    """A panel's grid lines and tick labels, its unit, the shapes under it (at a slant) and its rules."""
    out = []
    label_css = f"width:{Y_LABELS - 6}px;text-align:right;color:#555"
    for t in axis.ticks:
        if not axis.lo <= t <= axis.hi:
            continue
        ty = axis.y(t)
        label = time_label(t) if p.unit == "µs" else f"{t:g}"
        out.append(place(p.left, ty, f"width:{PANEL_WIDTH}px;height:0;border-top:1px solid #eee"))
        out.append(
            place(
                p.left - Y_LABELS,
                ty - 7,
                label_css,
                escape(label),
                class_="kp-tick",
                data_panel=p.col,
                data_value=f"{t:g}",
            )
        )
    if p.unit != "µs":
        out.append(place(p.left - Y_LABELS, p.top - 14, label_css + ";font-size:11px", escape(p.unit)))
    shape_css = (
        "width:120px;text-align:right;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;color:#333;"
        "transform:rotate(-35deg);transform-origin:100% 0"
    )
    for s, x in xs.items():
        out.append(place(x - 124, p.bottom + 4, shape_css, escape(s), title=s, class_="kp-shape", data_panel=p.col))
    for rule in p.rules:
        ry = axis.y(rule.at)
        line = f"width:{PANEL_WIDTH}px;height:0;border-top:1px {rule.dash} {rule.colour}"
        text = f"width:{PANEL_WIDTH - 4}px;text-align:right;color:{rule.colour};font-size:10px"
        out.append(place(p.left, ry, line, class_="kp-rule", data_panel=p.col, data_rule=f"{rule.at:g}"))
        out.append(place(p.left, ry - 15, text, escape(rule.text)))
    return out


def _marks(p: Panel, axis: Axis, xs: dict[str, float], drawn: list[dict], index: dict[str, int]) -> list[str]:
    """Each version's line (solid, or dashed for another run's), its points (circles, or diamonds) with their
    hover, and in the time and speedup panels a star on the best version at each shape."""
    out = []
    star_css = "width:20px;text-align:center;font-size:20px;line-height:20px;color:#000;pointer-events:none"
    for provider in sorted(index):
        mine = [r for r in drawn if r["provider"] == provider]
        colour, v = style.colour(provider), index[provider]
        dash = "dashed" if mine and mine[0]["run"] == ADDED_RUN else "solid"
        pts = [(xs[r["shape"]], axis.y(float(r[p.col])), r) for r in mine]
        for (x1, y1, _), (x2, y2, _) in zip(pts, pts[1:]):
            line = f"border-top:2px {dash} {colour}"
            out.append(
                segment(x1, y1, x2, y2, line, class_=f"kp-m kp-v{v} kp-line", data_provider=provider, data_panel=p.col)
            )
        for x, y, r in pts:
            shape_css = "transform:rotate(45deg)" if r["run"] == ADDED_RUN else "border-radius:50%"
            out.append(
                place(
                    x - 4,
                    y - 4,
                    f"width:8px;height:8px;background:{colour};{shape_css}",
                    class_=f"kp-m kp-v{v} kp-pt",
                    title=r["tip"],
                    data_provider=provider,
                    data_shape=r["shape"],
                    data_panel=p.col,
                    data_value=f"{float(r[p.col]):.6g}",
                    data_x=f"{x:.1f}",
                    data_y=f"{y:.1f}",
                    data_colour=colour,
                )
            )
            if p.stars and r["best"]:
                star = {"data_provider": provider, "data_shape": r["shape"], "data_panel": p.col}
                out.append(place(x - 10, y - 12, star_css, "☆", class_="kp-best", **star))
    return out


def _legend(providers: list[str], index: dict[str, int], records: list[dict], top: float) -> tuple[list[str], int]:
    """Under the panels: the versions in columns, each with a box to pick it out, and what the marks mean."""
    width = (2 * (Y_LABELS + PANEL_WIDTH) + GAP) / LEGEND_COLUMNS
    out = [
        place(0, top, "font-weight:600", "version <span style='font-weight:400;color:#555'>(tick to pick out)</span>")
    ]
    for i, p in enumerate(providers):
        x, y = (i % LEGEND_COLUMNS) * width, top + 20 + (i // LEGEND_COLUMNS) * LEGEND_ROW
        line = (
            f"display:inline-block;width:18px;height:0;border-top:3px solid {style.colour(p)};"
            "vertical-align:middle;margin:0 4px"
        )
        out.append(
            place(
                x,
                y,
                f"width:{width - 8:.0f}px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis",
                f'<label title="{escape(p)}"><input type="checkbox" class="kp-i{index[p]}" data-provider="{escape(p)}">'
                f'<span style="{line}"></span>{escape(p)}</label>',
            )
        )
    y = top + 20 + math.ceil(len(providers) / LEGEND_COLUMNS) * LEGEND_ROW + 4
    marks = [("●", THIS_RUN), *([("◆", ADDED_RUN)] if any(r["run"] == ADDED_RUN for r in records) else []), ("☆", BEST)]
    out.append(place(0, y, "color:#333", " &nbsp; ".join(f"{m} {escape(t)}" for m, t in marks), class_="kp-marks"))
    return out, int(y - top + 24)


# Sweep's heatmap: one cell per pair of values, coloured on viridis (the colours matplotlib and Vega-Lite use)
VIRIDIS = ("#440154", "#3b528b", "#21918c", "#5ec962", "#fde725")
CELL_MAX_W, CELL_MAX_H = 90, 44  # px: a cell at most, fewer values than fill the area
HEAT_W, HEAT_H = 640, 400  # px: the cells' area at most
HEAT_LEFT, HEAT_TOP = 90, 44  # px for the y values and the title


def viridis(t: float) -> str:
    """The viridis colour at ``t`` in [0, 1] (linear between five of its stops)."""
    t = min(max(t, 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    a, b = VIRIDIS[i], VIRIDIS[i + 1]
    mix = [round(int(a[j : j + 2], 16) + (int(b[j : j + 2], 16) - int(a[j : j + 2], 16)) * (t - i)) for j in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def sweep_heatmap(grid: pd.DataFrame, x: str, y: str, value: str, title: str) -> str:
    """A heatmap of a sweep over two meta-parameters (``kprof.guide.sweep_grid``): each cell coloured and
    labelled by ``value`` (brighter is better: for times the scale is reversed), hover with the configuration,
    time, % of roof, registers, spills, shared memory and occupancy; cells where nothing ran are grey, hover
    saying why. Small values of ``y`` at the bottom."""
    xs = sorted(grid[x].dropna().unique())
    ys = sorted(grid[y].dropna().unique(), reverse=True)
    ok = (grid["status"] == "ok") & grid[value].notna() if value in grid else pd.Series(False, index=grid.index)
    vals = grid.loc[ok, value].astype(float)
    lo, hi = (float(vals.min()), float(vals.max())) if not vals.empty else (0.0, 1.0)
    better_high = value in ("pct_roof", "pct_peak_bw")
    w = min(CELL_MAX_W, HEAT_W / max(len(xs), 1))
    h = min(CELL_MAX_H, HEAT_H / max(len(ys), 1))
    col = {v: HEAT_LEFT + i * w for i, v in enumerate(xs)}
    row = {v: HEAT_TOP + i * h for i, v in enumerate(ys)}
    out = [place(0, 0, "font-weight:600;white-space:nowrap", escape(title), class_="kp-title")]
    for v, left in col.items():
        out.append(
            place(left, HEAT_TOP + len(ys) * h + 4, f"width:{w:.1f}px;text-align:center;color:#333", escape(str(v)))
        )
    for v, top in row.items():
        out.append(place(0, top + h / 2 - 8, f"width:{HEAT_LEFT - 8}px;text-align:right;color:#333", escape(str(v))))
    bottom = HEAT_TOP + len(ys) * h
    out.append(place(HEAT_LEFT, bottom + 22, f"width:{len(xs) * w:.0f}px;text-align:center;color:#555", escape(x)))
    out.append(place(0, HEAT_TOP - 18, f"width:{HEAT_LEFT - 8}px;text-align:right;color:#555", escape(y)))
    box = f"width:{w - 2:.1f}px;height:{h - 2:.1f}px;line-height:{h - 2:.1f}px;text-align:center;font-size:11px"
    for r, good in zip(grid.to_dict("records"), ok):
        if r[x] not in col or r[y] not in row:
            continue
        attrs = {"class_": "kp-cell", "data_x": str(r[x]), "data_y": str(r[y]), "data_config": r["params_text"]}
        if not good:
            tip = f"{r['params_text']}\n{r['status']}: {str(r.get('note') or '')[:160]}"
            out.append(
                place(col[r[x]], row[r[y]], f"{box};background:#e6e6e6", title=tip, data_status=r["status"], **attrs)
            )
            continue
        v = float(r[value])
        shade = (v - lo) / (hi - lo) if hi > lo else 1.0
        bright = shade if better_high else 1 - shade
        tip = "\n".join(
            (
                r["params_text"],
                f"{value} {v:.3g}",
                f"time {r['gpu_time_us']:.1f} µs" if pd.notna(r.get("gpu_time_us")) else "time —",
                f"% of roof {number(r.get('pct_roof'), '.0f')}%",
                f"{number(r.get('registers_per_thread'), '.0f')} regs · {number(r.get('local_bytes'), '.0f')} B "
                f"local (spills) · {number(r.get('shared_mem_bytes'), '.0f')} B smem",
                f"occupancy {number(r.get('occupancy_theoretical_pct'), '.0f')}% theoretical, "
                f"{number(r.get('occupancy_achieved_pct'), '.0f')}% achieved",
            )
        )
        ink = "black" if bright > 0.5 else "white"
        out.append(
            place(
                col[r[x]],
                row[r[y]],
                f"{box};background:{viridis(bright)};color:{ink}",
                f"{v:.3g}",
                title=tip,
                data_status="ok",
                data_value=f"{v:.6g}",
                **attrs,
            )
        )
    # the colour scale: brighter is better, whichever way the value runs
    left = HEAT_LEFT + len(xs) * w + 24
    stops = ", ".join(VIRIDIS)  # dark at the bottom, bright on top, as the labels beside it
    top_v, bottom_v = (hi, lo) if better_high else (lo, hi)
    bar = min(bottom - HEAT_TOP, 200)  # px
    out.append(place(left, HEAT_TOP - 18, "color:#555", escape(value)))
    out.append(
        place(
            left,
            HEAT_TOP,
            f"width:14px;height:{bar:.0f}px;background:linear-gradient(to top, {stops})",
        )
    )
    out.append(place(left + 20, HEAT_TOP - 2, "color:#333", f"{top_v:.3g}", class_="kp-scale", data_end="bright"))
    out.append(
        place(
            left + 20,
            HEAT_TOP + bar - 14,
            "color:#333",
            f"{bottom_v:.3g}",
            class_="kp-scale",
            data_end="dark",
        )
    )
    return (
        f'<div class="kprof-heatmap" style="position:relative;width:{left + 90:.0f}px;height:{bottom + 44:.0f}px;'
        f'font-size:12px;line-height:1.2">{"".join(out)}</div>'
    )
