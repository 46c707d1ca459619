"""Sweep: a heatmap of one version's time or % of roof over two meta-parameters, per shape."""

from __future__ import annotations

import streamlit as st

from kprof.dashboards import data, html_chart
from kprof.dashboards.views.common import header, pick_run
from kprof.dashboards.views.common import table as show_table
from kprof.guide import guide_table, sweep_grid, swept_params
from kprof.store import RunPlan


def render() -> None:
    runs = header("Sweep")
    if runs is None:
        return
    sweeps = runs[runs["swept"] > 0] if "swept" in runs else runs.iloc[0:0]
    if sweeps.empty:
        st.warning(
            "No sweep run in the store. Make one, e.g. `kprof sweep rmsnorm --version triton_one_row "
            "--param BLOCK_N=1024..16384 --param num_warps=1,2,4,8,16,32`."
        )
        return
    top = st.container()
    slot = st.empty()  # the heatmap's place, under the controls
    run_id = pick_run(sweeps, "sweep_run", "sweep run", sweeps=True, container=top)
    if run_id is None:
        slot.empty()
        return
    m = data.get_metrics(run_id)
    params = swept_params(m)
    if not params:
        slot.empty()
        st.warning("This run has no configurations with pinned meta-parameters.")
        return
    names = list(params)
    c1, c2, c3, c4 = top.columns(4)
    shape = c1.selectbox("shape", list(m["shape"].dropna().unique()), key="sweep_shape")
    dtype = c2.selectbox("dtype", list(m[m["shape"] == shape]["dtype"].dropna().unique()), key="sweep_dtype")
    x = c3.selectbox("x", names, index=0, key="sweep_x")
    y = c4.selectbox("y", names, index=min(1, len(names) - 1), key="sweep_y")
    timed = m["gpu_time_us"].notna().any()
    metric = top.radio(
        "colour",
        ["gpu_time_us", "pct_roof"] if timed else ["registers_per_thread"],
        horizontal=True,
        key="sweep_metric",
    )
    grid = sweep_grid(m, shape, dtype, x, y, metric)
    if grid.empty:
        slot.empty()
        st.info("No configuration of this sweep ran at this shape and dtype.")
        return
    free = [n for n in names if n not in (x, y)]
    title = f"{shape} {dtype}: {metric} over {x} x {y}" + (f" (best over {', '.join(free)})" if free else "")
    slot.html(html_chart.sweep_heatmap(grid, x, y, metric, title))
    if not timed:
        st.info("CPU interpreter sweep: configurations were checked and compiled for sm_90 offline, not timed.")
    table = guide_table(m, RunPlan.of(data.get_run(run_id)))
    st.subheader("Selection guide")
    show_table(table)
    skipped = m[(m["status"] == "skipped") & (m["shape"] == shape)]
    if not skipped.empty:
        with st.expander(f"{len(skipped)} configurations skipped at {shape}"):
            show_table(skipped[["provider", "note"]])
    st.caption(
        "Each cell: the fastest correct configuration with that pair of values (other swept parameters "
        "free). Registers, local memory and shared memory come from the compiled kernel that ran."
    )
