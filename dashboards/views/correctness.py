"""Correctness: every run, CPU interpreter runs included: ok / fail / skipped per case, error against tolerance."""

from __future__ import annotations

import functools
import math
import re

import pandas as pd
import streamlit as st

from kprof.dashboards import style
from kprof.dashboards.html_chart import place as at
from kprof.dashboards.views.common import header, pick_run
from kprof.dashboards.views.common import table as show_table

_TOL = re.compile(r"tolerance\s+([0-9.eE+-]+)")
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
    strip = error_strip(m)
    if strip:
        slot.html(strip)
    else:
        slot.empty()
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


STRIP_WIDTH = 760  # px: the axis and the versions' names, on a wide page with the sidebar open
NAME_PX = 190  # left margin for the version names
ROW_PX = 30  # one row of dots per version


def error_strip(m: pd.DataFrame) -> str:
    """Each case's error / tolerance by version as positioned HTML: one row of dots per version on a log axis,
    coloured by status, the tolerance (1) a dashed line (left of it passes), each dot's details in its
    native tooltip. Cases without an error figure (skipped, errors) are not drawn; the table lists them.

    Positioned HTML rather than a Vega-Lite chart or SVG: :mod:`kprof.dashboards.html_chart` says why."""
    from html import escape

    shown = m[m["err_vs_tol"].notna() & (m["err_vs_tol"] > 0)]
    if shown.empty:
        return ""
    versions = sorted(shown["provider"].astype(str).unique())
    v = shown["err_vs_tol"].astype(float)
    lo = 10.0 ** math.floor(math.log10(min(float(v.min()), 1e-3)))
    hi = 10.0 ** math.ceil(math.log10(max(float(v.max()), 1.0) * 1.5))
    span = STRIP_WIDTH - NAME_PX - 20

    def x(value: float) -> float:
        return NAME_PX + span * (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    top = 40
    bottom = top + ROW_PX * len(versions)
    height = bottom + 40
    out = [at(0, 0, "font-weight:600", "Error relative to tolerance, per case (left of the line passes)")]
    legend_x = NAME_PX
    for status in [s for s in ("ok", "fail", "error") if s in set(shown["status"].astype(str))]:
        dot = f"width:9px;height:9px;border-radius:50%;background:{STATUS_COLOURS.get(status, '#1f77b4')}"
        out += [at(legend_x, 22, dot), at(legend_x + 13, 17, "", escape(status))]
        legend_x += 60
    e = math.floor(math.log10(lo))
    while e <= math.log10(hi) + 1e-9:
        tx = x(10.0**e)
        out.append(at(tx, top, f"width:0;height:{bottom - top}px;border-left:1px solid #eee"))
        out.append(at(tx - 20, bottom + 4, "width:40px;text-align:center;color:#555", f"{10.0**e:g}"))
        e += 1
    for i, name in enumerate(versions):
        cy = top + ROW_PX * i + ROW_PX / 2
        label = f"width:{NAME_PX - 12}px;text-align:right;white-space:nowrap;overflow:hidden"
        out.append(at(0, cy - 8, label, escape(name), title=name))
        rows = shown[shown["provider"].astype(str) == name]
        for j, r in enumerate(rows.itertuples()):
            jitter = ((j * 7) % 9 - 4) * 1.5  # spreads dots at the same error over the row, the same every time
            tip = (
                f"{name} · {r.shape} {r.dtype} · {r.status} · error {r.max_rel_err:.2e} · "
                f"tolerance {r.tolerance:.0e} · error / tolerance {r.err_vs_tol:.3f}"
            )
            colour = STATUS_COLOURS.get(str(r.status), "#1f77b4")
            dot = f"width:9px;height:9px;border-radius:50%;background:{colour};opacity:0.75"
            out.append(
                at(
                    x(float(r.err_vs_tol)) - 4.5,
                    cy + jitter - 4.5,
                    dot,
                    title=tip,
                    data_status=str(r.status),
                    data_err_vs_tol=f"{float(r.err_vs_tol):.6g}",
                    data_x=f"{x(float(r.err_vs_tol)):.1f}",
                )
            )
    tol = x(1.0)
    out.append(
        at(
            tol,
            top - 6,
            f"width:0;height:{bottom - top + 6}px;border-left:1px dashed #d62728",
            data_x=f"{tol:.1f}",
            data_tolerance="1",
        )
    )
    out.append(at(tol + 4, top - 8, "color:#d62728;font-size:11px", "tolerance"))
    out.append(
        at(NAME_PX, bottom + 22, f"width:{span}px;text-align:center;color:#555", "max rel. error / tolerance (log)")
    )
    return (
        f'<div class="kprof-strip" style="position:relative;width:{STRIP_WIDTH}px;height:{height}px;'
        f'font-size:12px">{"".join(out)}</div>'
    )
