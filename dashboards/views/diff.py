"""Diff: two runs (typically two revisions), per case verdict and kernel-level changes (kprof.diff)."""

from __future__ import annotations

import streamlit as st

from kprof.dashboards import data
from kprof.dashboards.views.common import header, pick_run
from kprof.errors import KprofError

COLOURS = {"SLOWER": "#f8d0d0", "FASTER": "#d4f4dd", "UNCERTAIN": "#fff3c4", "SAME": ""}


def render() -> None:
    runs = header("Diff")
    if runs is None:
        return
    gpu = runs[runs["mode"] == "gpu"]
    if len(gpu) < 2:
        st.warning("Diff needs two GPU runs of one family: `kprof profile rmsnorm --rev main --rev my-branch`.")
        return
    c1, c2 = st.columns(2)
    with c1:
        a = pick_run(runs, "diff_a", "before (A)", index=1, gpu_only=True)
    with c2:
        b = pick_run(runs, "diff_b", "after (B)", index=0, gpu_only=True)
    threshold = st.slider("threshold (%)", 1, 20, 3, key="diff_threshold") / 100
    try:
        res = data.get_diff(a, b, threshold)
    except KprofError as exc:
        st.warning(str(exc))
        return
    c = res.counts
    cols = st.columns(4)
    for col, v in zip(cols, ("SLOWER", "FASTER", "SAME", "UNCERTAIN")):
        col.metric(v.lower(), c[v])
    for w in res.warnings:
        st.warning(w)
    t = res.table()[["case", "median_a", "median_b", "ratio", "ci_lo", "ci_hi", "p_value", "verdict", "changes", "why",
                     "variance"]]
    st.dataframe(t.style.apply(lambda r: [f"background-color: {COLOURS.get(r['verdict'], '')}" for _ in r], axis=1),
                 hide_index=True)
    for case in res.broken:  # correctness regressions count before any timing
        st.error(f"{case}: correct in A, not in B")
    st.caption(res.rule.describe() + ". Same code as `kprof diff`.")
