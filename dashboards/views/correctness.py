"""Correctness: every run, CPU interpreter runs included: ok / fail / skipped per case, error against tolerance."""

from __future__ import annotations

import functools
import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from kprof.dashboards import style
from kprof.dashboards.views.common import chart_slot, header, pick_run

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
    slot = chart_slot(ERROR_HEIGHT)
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
    where = "on the CPU under Triton's interpreter" if run.get("mode") == "interpreter" else \
        f"on {run.get('device_name') or 'the GPU'}"
    counts = m["status"].value_counts()
    cols = top.columns(4)
    for col, s in zip(cols, ("ok", "fail", "error", "skipped")):
        col.metric(s, int(counts.get(s, 0)))
    bad = m[m["status"].isin(["fail", "error"])]
    if bad.empty:
        top.success(f"Every case that ran {where} matched the reference within tolerance.")
    else:
        top.error(f"**{len(bad)} cases failed** {where}:\n\n"
                 + "\n".join(f"- `{r.case}`: {r.status}: {r.note}" for r in bad.head(20).itertuples()))
    slot.plotly_chart(error_figure(m), key="correct_fig")
    statuses = st.multiselect("status", sorted(m["status"].dropna().unique()), key="correct_status")
    table = m[m["status"].isin(statuses)] if statuses else m
    cols = ["case", "provider", "shape", "dtype", "status", "max_rel_err", "tolerance", "err_vs_tol", "max_abs_err",
            "note"]
    table = table[[c for c in cols if c in table]].copy()
    table["_k"] = table["shape"].map(style.shape_key)
    table = table.sort_values(["provider", "_k", "dtype"]).drop(columns="_k")
    st.dataframe(table, hide_index=True, column_config=style.column_config(table), key="correct_table")
    st.caption("Error: the largest relative error of the output against the float64 reference. Tolerance: the "
               "one a failed case's note states, else the family's tolerance for the dtype in the code now. "
               "Skipped cases did not run here (the note says why).")


def error_figure(m: pd.DataFrame) -> go.Figure:
    """Each case's error / tolerance by version (log axis, the line at 1 is the tolerance)."""
    fig = go.Figure()
    shown = m[m["err_vs_tol"].notna() & (m["err_vs_tol"] > 0)]
    for status, g in shown.groupby("status"):
        fig.add_trace(go.Scatter(
            x=g["provider"], y=g["err_vs_tol"], mode="markers", name=status,
            marker=dict(color=STATUS_COLOURS.get(status, "#1f77b4"), size=8, opacity=0.75),
            text=g["shape"] + " " + g["dtype"], customdata=g[["max_rel_err", "tolerance"]].to_numpy(),
            hovertemplate="%{x} %{text}<br>error %{customdata[0]:.2e} / tolerance %{customdata[1]:.0e}"
                          " = %{y:.3f}<extra>%{fullData.name}</extra>"))
    fig.add_hline(y=1.0, line_dash="dash", line_color="#d62728", annotation_text="tolerance")
    fig.update_layout(title="Error relative to tolerance, per case (below the line passes)", height=ERROR_HEIGHT,
                      yaxis_title="max rel. error / tolerance", margin=dict(t=50, b=40))
    ticks = [10.0 ** e * m for e in range(-6, 3) for m in (1, 3)]
    fig.update_yaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks], minor=dict(showgrid=False))
    fig.update_xaxes(type="category")
    return fig
