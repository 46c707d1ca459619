"""Trace: a run's launch table (or a trace file) as a timeline, with a per-kernel summary; any profiler.

Sources: a run of the store, a trace file named on `kprof dashboard TRACE...`, or one uploaded here (nsys
.sqlite, ncu raw CSV, rocprof, Proton, torch.profiler JSON, or a launch table CSV from `kprof parse --csv`).
A second source draws under the first (lanes A and B), each from its own first event."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from kprof.analysis import kernel_summary
from kprof.dashboards import data, timeline
from kprof.dashboards.views.common import header, label
from kprof.dashboards.views.common import table as show_table

GAPS = {"off": 0.0, "longer than 10 µs": 10e3, "longer than 100 µs": 100e3, "longer than 1 ms": 1e6}
GAPS_DEFAULT = "longer than 100 µs"
NONE = "(none)"
# Behind one switch: the time window, the Perfetto export and the upload box. Their widgets' code (the
# slider's number and date formatting, the uploader, the download link) cost a fresh browser about 0.6 s
# on this page (first visit 3.1 -> 2.45 s, median of 4, 100-run store, 2-core box); a trace named on the
# command line opens without them.
MORE = "time window, Perfetto export, open a trace file"


def render() -> None:
    runs = header("Trace")
    if runs is None:
        return
    sources = source_options(runs)
    if not sources:
        st.warning(
            "No run with a launch table and no trace file: `kprof profile FAMILY --profiler torch|nsys|ncu|"
            "proton` records one, or open a trace with `kprof dashboard TRACE` or the upload box below."
        )
        upload_box()
        return
    controls = st.container()
    slot = st.empty()  # the timeline's place, under the controls
    c1, c2 = controls.columns(2)
    first = c1.selectbox("trace (a run with launch data, or a trace file)", list(sources), key="trace_run")
    second = c2.selectbox("second trace, drawn below (A/B)", [NONE, *sources], key="trace_other")
    lt = load(sources[first])
    if lt is None or lt.empty:
        slot.empty()
    if lt is None:
        return
    if lt.empty:
        st.warning(
            "This run has no launch table: it was profiled with `--profiler none` or on the CPU. "
            "`kprof profile FAMILY --profiler torch|nsys|ncu|proton` records one."
        )
        return
    cases = run_order(lt)
    # the kernel search is a box of the chart itself (timeline.FIND): it dims in the browser, without a rerun
    c1, c2 = controls.columns([3, 2])
    chosen = c1.multiselect("cases", cases, default=cases[:1], key="trace_cases")
    gaps = c2.selectbox("collapse idle gaps", list(GAPS), index=list(GAPS).index(GAPS_DEFAULT), key="trace_gaps")
    df = lt[lt["case"].isin(chosen)] if chosen else lt
    # on by itself when the selection is too big to draw launch by launch: the time window is how to unfold it
    more = controls.toggle(MORE, value=len(df) > timeline.LIMIT, key="trace_more")
    if more:
        df = time_window(df, controls)
    shown = {"A": df}
    if second != NONE:
        other = load(sources[second])
        if other is not None and not other.empty:
            shown["B"] = other[other["case"].isin(chosen)] if chosen and other["case"].isin(chosen).any() else other
    # a click reruns the page with the chart's new selection in its widget state: take it before drawing, so the
    # one rerun draws the launch -> kernel line (reading it from the chart's return value took a second rerun)
    picked = selected_row(st.session_state.get("trace_fig"))
    if picked is not None:
        st.session_state["trace_selected"] = picked
    spec, note, drawn = timeline.figure(shown, collapse_ns=GAPS[gaps], selected=st.session_state.get("trace_selected"))
    if note:
        controls.info(note + ("" if more else f" The time window is under “{MORE}”."))
    if not spec:
        slot.empty()
    else:
        # a click on a launch (the `pick` selection) reruns the page; zoom and the overview's brush stay in
        # the browser
        slot.vega_lite_chart(spec, key="trace_fig", on_select="rerun", selection_mode=[timeline.PICK], width="content")
        row = st.session_state.get("trace_selected")
        if row is not None and row < len(drawn):
            st.subheader("Selected launch")
            show_table(timeline.launch_row(drawn, row))
        else:
            st.caption(
                "Zoom along time in the strip under the chart (the whole trace): drag there to pick a time range, "
                "drag the range to pan, scroll over it to zoom, double-click to reset; the lanes stay put. Click a "
                "launch for its full row and its launch -> kernel line. Find a kernel in the box under the legend."
            )
    st.subheader("Per kernel")
    summary = kernel_summary(df)
    show_table(summary)
    st.caption(
        f"{len(df)} of {len(lt)} rows; source: {', '.join(sorted(lt['source'].dropna().astype(str).unique()))}. "
        + (
            "The export holds the cases and time window chosen here; open it at ui.perfetto.dev."
            if more
            else f"More under “{MORE}” above."
        )
    )
    if more:
        st.download_button(
            "Export this view for ui.perfetto.dev (JSON)",
            perfetto_json(df, first),
            file_name="kprof-trace.json",
            mime="application/json",
        )
        upload_box()


def run_order(lt: pd.DataFrame) -> list[str]:
    """Cases in the order they ran (first timestamp), the order a user thinks of them in."""
    first = lt.assign(_t=lt["start_ns"].fillna(lt["api_start_ns"])).groupby("case")["_t"].min()
    return [str(c) for c in first.sort_values(kind="stable", na_position="last").index]


def source_options(runs: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Label -> ("run", id) for runs with launch data, ("file", path) for traces named on the command line or
    uploaded."""
    out = {f"file: {p}": ("file", p) for p in data.trace_files()}
    counts = data.launch_counts()
    with_data = runs[runs["id"].isin(counts.index)]
    timed = with_data["id"].map(counts["timed"]) > 0
    for _, r in pd.concat([with_data[timed], with_data[~timed]]).iterrows():  # drawable runs first
        out[label(r) + ("" if counts.at[r["id"], "timed"] else " · no timestamps")] = ("run", r["id"])
    return out


def load(src: tuple[str, str]) -> pd.DataFrame | None:
    kind, ref = src
    if kind == "run":
        return data.get_launches(ref)
    try:
        return data.read_trace(ref)
    except Exception as exc:  # noqa: BLE001 - a file the user picked: say what is wrong with it, in the page
        st.error(f"kprof cannot read the trace {ref}: {exc}")
        return None


def upload_box() -> None:
    up = st.file_uploader(
        "open a trace file (nsys .sqlite, ncu raw CSV, rocprof, Proton, torch.profiler JSON, "
        "`kprof parse --csv` table)",
        key="trace_upload",
    )
    if up is not None:
        path = data.save_upload(up.name, up.getvalue())
        if path not in data.trace_files():
            data.add_trace_file(path)
            st.rerun()


def selected_row(event) -> int | None:
    """The drawn row of the launch clicked in the timeline, from its ``pick`` selection: Vega-Lite reports a
    point selection as the picked fields' values (``{"row": [12]}``), a list of picked data (``[{"row":
    12}]``) in some versions; nothing picked is ``{}``."""
    try:
        picked = event["selection"][timeline.PICK]
    except (KeyError, TypeError):
        return None
    rows = (
        picked.get("row") if isinstance(picked, dict) else [p.get("row") for p in picked or [] if isinstance(p, dict)]
    )
    rows = rows if isinstance(rows, list) else [rows]
    return next((int(r) for r in rows if r is not None), None)


@st.cache_data(show_spinner=False, max_entries=16)
def perfetto_json(df: pd.DataFrame, title: str) -> str:
    from kprof.export import to_chrome_trace

    return json.dumps(to_chrome_trace(df, title=title))


def time_window(df: pd.DataFrame, where=st) -> pd.DataFrame:
    """A slider over the selection's time span: it narrows what is read and drawn (the plot's own zoom only
    magnifies what is drawn), so a folded trace draws single launches again once the window holds few."""
    starts = df["api_start_ns"].fillna(df["start_ns"])
    if starts.notna().sum() < 2:
        return df
    t0, t1 = float(starts.min()), float(df["end_ns"].fillna(df["api_end_ns"]).max())
    span = max((t1 - t0) / 1e3, 1.0)
    lo, hi = where.slider(
        "time window (µs from the first event)", 0.0, span, (0.0, span), format="%.1f", key="trace_window"
    )
    if lo <= 0.0 and hi >= span:
        return df
    keep = ((df["start_ns"] - t0) / 1e3).between(lo, hi) | ((df["api_start_ns"] - t0) / 1e3).between(lo, hi)
    return df[keep]
