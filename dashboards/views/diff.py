"""Diff: two runs (typically two revisions), per case verdict and kernel-level changes (kprof.diff)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kprof.dashboards import data, style
from kprof.dashboards.views.common import header, pick_run, pickable
from kprof.dashboards.views.common import table as show_table
from kprof.errors import KprofError

COLOURS = {"SLOWER": "#f8d0d0", "FASTER": "#d4f4dd", "UNCERTAIN": "#fff3c4", "SAME": ""}


def default_pair(pool: pd.DataFrame) -> tuple[int, int]:
    """Picker positions of (A, B) in ``pool`` (newest first): the two revisions of the newest `--rev A --rev B` run
    in the command's order (the baseline before), else the newest run that has an earlier one to compare with and
    that earlier run (:func:`_previous`). Not simply the two newest runs: two families have no case in common, and
    two GPUs differ by more than the code."""
    if len(pool) >= 2:
        r0, r1 = pool.iloc[0], pool.iloc[1]
        if r0["created_at"] == r1["created_at"] and r0["command"] == r1["command"] and r0.get("rev") and r1.get("rev"):
            return 0, 1
    for b in range(len(pool)):
        a = _previous(pool, b)
        if a is not None:
            return a, b
    return 1, 0  # no family ran twice: the page says the pair has nothing in common


def _previous(pool: pd.DataFrame, b: int) -> int | None:
    """The position of the newest run older than ``pool``'s ``b``-th of its family, on its GPU where there is one."""
    older = pool.iloc[b + 1 :]
    family = older[older["family"] == pool.iloc[b]["family"]]
    device = family[family["device_name"] == pool.iloc[b]["device_name"]] if "device_name" in family else family
    for candidates in (device, family):
        if not candidates.empty:
            return b + 1 + older.index.get_loc(candidates.index[0])
    return None


def render() -> None:
    runs = header("Diff")
    if runs is None:
        return
    pool = pickable(runs, gpu_only=True)
    if len(pool) < 2:
        st.warning("Diff needs two GPU runs of one family: `kprof profile rmsnorm --rev main --rev my-branch`.")
        return
    ia, ib = default_pair(pool)
    c1, c2 = st.columns(2)
    with c1:
        a = pick_run(runs, "diff_a", "before (A)", index=ia, gpu_only=True)
    with c2:
        b = pick_run(runs, "diff_b", "after (B)", index=ib, gpu_only=True)
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
    if res.unmeasured:  # kprof diff --fail-on-regression fails on this
        st.error(res.unmeasured)
    if res.not_compared:  # also cases timed on one side only, and cases only in B, which unmeasured leaves out
        st.info(res.not_compared)
    table = res.table()
    t = table[
        [
            c
            for c in (
                "case",
                "median_a",
                "median_b",
                "ratio",
                "ci_lo",
                "ci_hi",
                "p_value",
                "verdict",
                "changes",
                "why",
                "variance",
            )
            if c in table
        ]
    ]
    t = t.assign(p_value=t["p_value"].map(style.p_value))
    show_table(t, t["verdict"].map(lambda v: COLOURS.get(v, "")))
    for case in getattr(res, "broken", []):  # correctness regressions count before any timing
        st.error(f"{case}: correct in A, not in B")
    for case in getattr(res, "new_failures", []):  # kprof diff --fail-on-regression fails on these too
        st.error(f"{case}: wrong in B, never wrong in A (new in B, or skipped in A)")
    for case in getattr(res, "unchecked_in_b", []):  # correct in A, skipped in B: the gate fails on these too
        st.error(f"{case}: B did not check it")
    st.caption(res.rule.describe() + ". Same code as `kprof diff`. B / A above 1: B is slower.")
