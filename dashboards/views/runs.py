"""Runs: every run in the store, filterable."""

from __future__ import annotations

import streamlit as st

from kprof.dashboards.views.common import header
from kprof.envinfo import short_commit


def render() -> None:
    runs = header("Runs")
    if runs is None:
        return
    c1, c2 = st.columns(2)
    fams = c1.multiselect("family", sorted(runs["family"].dropna().unique()))
    statuses = c2.multiselect("status", sorted(runs["status"].dropna().unique()))
    df = runs
    if fams:
        df = df[df["family"].isin(fams)]
    if statuses:
        df = df[df["status"].isin(statuses)]
    show = df.assign(
        kind=df["mode"].map({"gpu": "GPU", "interpreter": "CPU interpreter (correctness only)"}),
        git=df["git_commit"].map(short_commit) + df["git_dirty"].map({1: " (dirty)"}).fillna(""),
    )
    cols = [
        "id",
        "created_at",
        "family",
        "kind",
        "status",
        "rev",
        "git",
        "device_name",
        "profiler",
        "cases",
        "failures",
    ]
    st.dataframe(
        show[[c for c in cols if c in show]],
        hide_index=True,
        column_config={"rev": st.column_config.Column("revision"), "created_at": "started", "device_name": "device"},
    )
    st.caption(f"{len(df)} of {len(runs)} runs. Failed cases: `kprof show RUN`; compare two: the Diff page.")
