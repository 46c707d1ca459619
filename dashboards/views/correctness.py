"""Correctness: every run, CPU interpreter runs included: ok / fail / skipped per case, error against tolerance."""

from __future__ import annotations

import functools
import re

import pandas as pd
import streamlit as st

from kprof.dashboards import style
from kprof.dashboards.views.common import header, pick_run
from kprof.dashboards.views.common import table as show_table

_TOL = re.compile(r"tolerance\s+([0-9.eE+-]+)")
ERROR_HEIGHT = 360
STATUS_COLOURS = {"ok": "#2ca02c", "fail": "#d62728", "error": "#d62728", "skipped": "#9e9e9e"}


@functools.lru_cache(maxsize=1)  # process-wide: the server's warm-up fills it before its runtime starts
def family_tolerances() -> dict[str, dict[str, float]]:
    """Each family's tolerance per dtype as the code defines it now (importing the kernels takes seconds,
    so once per server)."""
    try:
        from kprof.kernels import discover

        return {name: dict(f.tolerances) for name, f in discover().items()}
    except Exception:  # noqa: BLE001 - a family that does not import here: its tolerances stay unknown, the page says so
        return {}


def with_tolerance(m: pd.DataFrame) -> pd.DataFrame:
    """``tolerance``: the one the run's note states where it failed on it, else the family's current one;
    ``err_vs_tol``: max relative error / tolerance (above 1 fails)."""
    tols = family_tolerances()
    noted = m["note"].astype("string").str.extract(_TOL, expand=False).astype(float) if "note" in m else None
    current = [tols.get(f, {}).get(d) for f, d in zip(m["family"], m["dtype"])]
    tol = pd.Series(current, index=m.index, dtype=float)
    if noted is not None:
        tol = noted.fillna(tol)
    return m.assign(tolerance=tol, err_vs_tol=m["max_rel_err"].astype(float) / tol)


def render() -> None:
    runs = header("Correctness")
    if runs is None:
        return
    top = st.container()
    slot = st.empty()  # the chart's place above the table, filled once the counts are out
    run_id = pick_run(runs, "correct_run", container=top)
    if run_id is None:
        slot.empty()
        return
    from kprof.dashboards import data

    run = data.get_run(run_id)
    m = data.get_metrics(run_id)
    if m.empty:
        slot.empty()
        st.warning("This run has no cases (it stopped before the first one).")
        return
    m = with_tolerance(m)
    where = (
        "on the CPU under Triton's interpreter"
        if run.get("mode") == "interpreter"
        else f"on {run.get('device_name') or 'the GPU'}"
    )
    counts = m["status"].value_counts()
    cols = top.columns(4)
    for col, s in zip(cols, ("ok", "fail", "error", "skipped")):
        col.metric(s, int(counts.get(s, 0)))
    bad = m[m["status"].isin(["fail", "error"])]
    if bad.empty:
        top.success(f"Every case that ran {where} matched the reference within tolerance.")
    else:
        top.error(
            f"**{len(bad)} cases failed** {where}:\n\n"
            + "\n".join(f"- `{r.case}`: {r.status}: {r.note}" for r in bad.head(20).itertuples())
        )
    slot.vega_lite_chart(error_figure(m), key="correct_fig")
    statuses = st.multiselect("status", sorted(m["status"].dropna().unique()), key="correct_status")
    table = m[m["status"].isin(statuses)] if statuses else m
    cols = [
        "case",
        "provider",
        "shape",
        "dtype",
        "status",
        "max_rel_err",
        "tolerance",
        "err_vs_tol",
        "max_abs_err",
        "note",
    ]
    table = table[[c for c in cols if c in table]].copy()
    table["_k"] = table["shape"].map(style.shape_key)
    table = table.sort_values(["provider", "_k", "dtype"]).drop(columns="_k")
    show_table(table, table["status"].map(lambda s: "#f8d0d0" if s in ("fail", "error") else ""))
    st.caption(
        "Error: the largest relative error of the output against the float64 reference. Tolerance: the "
        "one a failed case's note states, else the family's tolerance for the dtype in the code now. "
        "Skipped cases did not run here (the note says why)."
    )


def error_figure(m: pd.DataFrame) -> dict:
    """Each case's error / tolerance by version as a Vega-Lite spec (log axis; the dashed line at 1 is the
    tolerance, below it passes), coloured by status.

    Vega-Lite rather than plotly: a fresh browser draws it about 0.9 s sooner (the figures module's roofline
    says what was measured), and this page, the one a user without a GPU opens, has no other chart."""
    shown = m[m["err_vs_tol"].notna() & (m["err_vs_tol"] > 0)]
    points = pd.DataFrame(
        {
            "provider": shown["provider"].astype(str),
            "status": shown["status"].astype(str),
            "case": shown["shape"].astype(str) + " " + shown["dtype"].astype(str),
            "err_vs_tol": shown["err_vs_tol"].astype(float),
            "max_rel_err": shown["max_rel_err"].astype(float),
            "tolerance": shown["tolerance"].astype(float),
        }
    )
    statuses = sorted(points["status"].unique())
    colour = {
        "field": "status",
        "type": "nominal",
        "legend": {"title": "status"},
        "scale": {"domain": statuses, "range": [STATUS_COLOURS.get(s, "#1f77b4") for s in statuses]},
    }
    ticks = [10.0**e * k for e in range(-6, 3) for k in (1, 3)]
    y = {
        "field": "err_vs_tol",
        "type": "quantitative",
        "title": "max rel. error / tolerance",
        "scale": {"type": "log"},
        "axis": {"values": ticks, "format": "~g"},
    }
    return {
        "title": "Error relative to tolerance, per case (below the line passes)",
        "height": ERROR_HEIGHT,
        "layer": [
            {
                "data": {"values": points.to_dict("records")},
                "mark": {"type": "point", "filled": True, "size": 64, "opacity": 0.75},
                "encoding": {
                    "x": {"field": "provider", "type": "nominal", "title": None, "axis": {"labelAngle": 0}},
                    "y": y,
                    "color": colour,
                    "tooltip": [
                        {"field": "provider", "title": "version"},
                        {"field": "case"},
                        {"field": "status"},
                        {"field": "max_rel_err", "title": "error", "format": ".2e"},
                        {"field": "tolerance", "format": ".0e"},
                        {"field": "err_vs_tol", "title": "error / tolerance", "format": ".3f"},
                    ],
                },
            },
            {
                "data": {"values": [{"err_vs_tol": 1.0, "label": "tolerance"}]},
                "layer": [
                    {"mark": {"type": "rule", "strokeDash": [6, 4], "color": "#d62728"}, "encoding": {"y": y}},
                    {
                        "mark": {"type": "text", "align": "right", "dy": -7, "x": "width", "color": "#d62728"},
                        "encoding": {"y": y, "text": {"field": "label"}},
                    },
                ],
            },
        ],
    }
