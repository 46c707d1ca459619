"""Bits every page uses: the demo banner, store errors shown in the page, run pickers."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kprof.dashboards import data
from kprof.envinfo import short_commit


def header(title: str) -> pd.DataFrame | None:
    """Title, the data source line, and the runs table; None (after saying why) when there is nothing."""
    st.title(title)
    try:
        src = data.source()
        runs = data.all_runs()
    except data.StoreProblem as exc:
        st.error(f"The run store cannot be read: {exc}")
        return None
    if src.demo:
        st.info(f"**Demo data** - {src.why}, so this shows a bundled store of real H100 runs (rmsnorm and swiglu, bf16). "
                "Profile your own with `scripts/run_profile.sh rmsnorm` and reload.")
    else:
        st.caption(f"store: `{src.path}`")
    if runs.empty:
        st.warning("No runs in the store. `kprof profile rmsnorm` makes one.")
        return None
    return runs


def label(r: pd.Series) -> str:
    commit = r.get("git_commit")
    git = ("?" if commit is None or pd.isna(commit) or not commit else short_commit(commit)) + ("*" if r.get("git_dirty") == 1 else "")
    return f"{r['id']} · {r['family']} · {r['profiler']} · {git} · {r['status']}"


def pickable(runs: pd.DataFrame, gpu_only: bool = False, sweeps: bool = False) -> pd.DataFrame:
    """The runs a picker offers, newest first: GPU runs only where asked, sweeps only where asked or when
    there is nothing else."""
    pool = runs[runs["mode"] == "gpu"] if gpu_only else runs
    if not sweeps and "swept" in pool and (pool["swept"] == 0).any():
        pool = pool[pool["swept"] == 0]
    return pool


def pick_run(runs: pd.DataFrame, key: str, label_text: str = "run", index: int = 0, gpu_only: bool = False,
             sweeps: bool = False) -> str | None:
    """A run picker, newest first. Sweep runs (one version over its meta-parameters) are left to the Sweep
    page unless ``sweeps`` or there is nothing else."""
    pool = pickable(runs, gpu_only, sweeps)
    if pool.empty:
        st.warning("No GPU run in the store: this page shows GPU timings. Profile on a GPU machine.")
        return None
    labels = {label(r): r["id"] for _, r in pool.iterrows()}
    choice = st.selectbox(label_text, list(labels), index=min(index, len(labels) - 1), key=key)
    return labels[choice]


def gpu_run(title: str, key: str) -> tuple[dict, pd.DataFrame] | None:
    """Page prologue for pages about one GPU run: header, run picker, the run record and its metrics."""
    runs = header(title)
    if runs is None:
        return None
    run_id = pick_run(runs, key, gpu_only=True)
    if run_id is None:
        return None
    return data.get_run(run_id), data.get_metrics(run_id)
