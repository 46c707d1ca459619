"""Roofline: achieved FLOP rate against arithmetic intensity, with the measured memory ceiling."""

from __future__ import annotations

import streamlit as st

from kprof.dashboards import data, figures
from kprof.dashboards.views.common import header, pick_run


def render() -> None:
    runs = header("Roofline")
    if runs is None:
        return
    run_id = pick_run(runs, "roof_run", gpu_only=True)
    if run_id is None:
        return
    run = data.get_run(run_id)
    m = data.get_metrics(run_id)
    if figures.ok_rows(m).empty:
        st.warning("No correct timed case in this run.")
        return
    st.plotly_chart(figures.roofline(m, run.get("ceiling_gbps")))
    st.caption("Intensity and FLOP/s from the family's bytes and FLOPs models (the minimum work). The dashed "
               "line is the copy bandwidth measured in the run; a memory-bound kernel sits on it at best.")
