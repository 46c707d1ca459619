"""Trace: a run's launch table as a timeline, with a per-kernel summary; any profiler."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kprof.analysis import kernel_summary
from kprof.dashboards import data, figures
from kprof.dashboards.views.common import header, pick_run


def render() -> None:
    runs = header("Trace")
    if runs is None:
        return
    run_id = pick_run(runs, "trace_run")
    if run_id is None:
        return
    lt = data.get_launches(run_id)
    if lt.empty:
        st.warning("This run has no launch table: it was profiled with `--profiler none` or on the CPU. "
                   "`kprof profile FAMILY --profiler torch|nsys|ncu|proton` records one.")
        return
    cases = sorted(lt["case"].dropna().unique())
    c1, c2 = st.columns(2)
    chosen = c1.multiselect("cases", cases, default=cases[:1], key="trace_cases")
    kernels = sorted(lt["kernel"].dropna().unique())
    pick_k = c2.multiselect("kernels", kernels, key="trace_kernels")
    df = lt[lt["case"].isin(chosen)] if chosen else lt
    if pick_k:
        df = df[df["kernel"].isin(pick_k)]
    df = time_window(df)
    fig, note = figures.timeline(df)
    if note:
        st.info(note)
    if fig.data:
        st.plotly_chart(fig)
    st.subheader("Per kernel")
    st.dataframe(kernel_summary(df), hide_index=True)
    st.caption(f"{len(df)} of {len(lt)} rows; source: {', '.join(sorted(lt['source'].dropna().unique()))}. "
               "`kprof export RUN --perfetto FILE` opens the whole run in ui.perfetto.dev.")


def time_window(df: pd.DataFrame) -> pd.DataFrame:
    """A slider over the selection's time span: the zoom that stays usable on a large trace, since the
    timeline draws single launches again once the window holds few enough of them."""
    starts = df["api_start_ns"].fillna(df["start_ns"])
    if starts.notna().sum() < 2:
        return df
    t0, t1 = float(starts.min()), float(df["end_ns"].fillna(df["api_end_ns"]).max())
    span = max((t1 - t0) / 1e3, 1.0)
    lo, hi = st.slider("time window (µs from the first event)", 0.0, span, (0.0, span), format="%.1f")
    if lo <= 0.0 and hi >= span:
        return df
    keep = ((df["start_ns"] - t0) / 1e3).between(lo, hi) | ((df["api_start_ns"] - t0) / 1e3).between(lo, hi)
    return df[keep]
