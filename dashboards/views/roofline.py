"""Roofline: achieved FLOP rate against arithmetic intensity, with the measured memory ceiling."""

from __future__ import annotations

import streamlit as st

from kprof.dashboards import figures
from kprof.dashboards.views.common import gpu_run


def render() -> None:
    picked = gpu_run("Roofline", "roof_run")
    if picked is None:
        return
    run, m = picked
    if figures.ok_rows(m).empty:
        st.warning("No correct timed case in this run.")
        return
    st.plotly_chart(figures.roofline(m, run.get("ceiling_gbps")))
    st.caption("Intensity and FLOP/s from the family's bytes and FLOPs models (the minimum work). The dashed "
               "line is the copy bandwidth measured in the run; a memory-bound kernel sits on it at best.")
