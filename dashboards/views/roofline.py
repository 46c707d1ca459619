"""Roofline: achieved FLOP rate against arithmetic intensity, with the measured memory ceiling."""

from __future__ import annotations

import streamlit as st

from kprof.dashboards import figures
from kprof.dashboards.views.common import gpu_run
from kprof.dashboards.views.common import table as show_table
from kprof.metrics import with_roofline


def render() -> None:
    picked = gpu_run("Roofline", "roof_run")
    if picked is None:
        return
    run, m, controls, slot = picked
    if figures.ok_rows(m).empty:
        slot.empty()
        st.warning("No correct timed case in this run.")
        return
    peaks = (run.get("ceiling") or {}).get("tflops") or {}
    dtypes = list(m["dtype"].dropna().unique())
    dtype = controls.radio("dtype", dtypes, horizontal=True, key="roof_dtype") if len(dtypes) > 1 else dtypes[0]
    sub = with_roofline(m[m["dtype"] == dtype], run.get("ceiling_gbps"), peaks)
    slot.vega_lite_chart(figures.roofline(sub, run.get("ceiling_gbps"), peaks.get(dtype)), key="roof_fig")
    cols = ["shape", "provider", "intensity", "bound", "tflops", "gbps", "pct_roof", "gpu_time_us"]
    table = figures.ok_rows(sub)
    show_table(table[[c for c in cols if c in table]].sort_values(["shape", "gpu_time_us"]))
    roof = (
        f"the {dtype} matrix-product rate measured in the run ({peaks[dtype]:.0f} TFLOP/s) caps it"
        if dtype in peaks
        else "no matrix-product rate was measured in this run (older runs), so only the memory roof is drawn"
    )
    st.caption(
        "Intensity and FLOP/s from the family's bytes and FLOPs models (the minimum work). The dashed "
        f"line is the copy bandwidth measured in the run; {roof}. *bound* and *% of roof* place each case "
        "against the lower roof at its intensity."
    )
