"""Trace: a run's launch table as a timeline, with a per-kernel summary; any profiler."""

from __future__ import annotations

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
    fig, note = figures.timeline(df)
    if note:
        st.info(note)
    if fig.data:
        st.plotly_chart(fig)
    st.subheader("Per kernel")
    st.dataframe(kernel_summary(df), hide_index=True)
    st.caption(f"{len(df)} of {len(lt)} rows; source: {', '.join(sorted(lt['source'].dropna().unique()))}. "
               "`kprof export RUN --perfetto FILE` opens the whole run in ui.perfetto.dev.")
