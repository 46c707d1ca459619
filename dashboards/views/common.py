"""Bits every page uses: the demo switch and banner, store errors shown in the page, run pickers."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kprof.dashboards import data, style
from kprof.envinfo import short_commit


def header(title: str) -> pd.DataFrame | None:
    """Title, the demo switch, the data source line; the runs (None, after saying why, when there are none)."""
    st.title(title)
    st.sidebar.toggle(
        "demo data",
        key=data.DEMO_KEY,
        help="Show the bundled store of real H100 runs instead of your store (it opens on `main`).",
    )
    try:
        src = data.source()
        runs = data.all_runs()
    except data.StoreProblem as exc:
        st.error(f"The run store cannot be read: {exc}")
        return None
    if src.demo:
        st.info(
            f"**Demo data** - {src.why}, so this shows a bundled store of real H100 runs (rmsnorm and swiglu, bf16). "
            + (
                "Switch *demo data* off in the sidebar for your runs."
                if src.store_has_runs
                else "Profile your own with `scripts/run_profile.sh rmsnorm` and reload."
            )
        )
    else:
        st.caption(f"store: `{src.path}` · the sidebar's *demo data* switch shows the bundled H100 runs")
    if runs.empty:
        st.warning("No runs in the store. `kprof profile rmsnorm` makes one.")
        return None
    return runs


def _git(r: pd.Series) -> str:
    commit = r.get("git_commit")
    git = "?" if commit is None or pd.isna(commit) or not commit else short_commit(commit)
    return git + ("*" if r.get("git_dirty") == 1 else "")


def label(r: pd.Series) -> str:
    """A run as a picker shows it: revision name (or commit), family, profiler, when, id."""
    rev = r.get("rev")
    name = f"{rev} ({_git(r)})" if isinstance(rev, str) and rev else _git(r)
    kind = "CPU" if r.get("mode") == "interpreter" else str(r.get("profiler"))
    when = str(r.get("created_at") or "")[:16].replace("T", " ")
    status = "" if r["status"] == "complete" else f" ({r['status']})"
    return f"{name} · {r['family']} · {kind} · {when}{status} · {r['id']}"  # the id last: tests split on it


def pickable(runs: pd.DataFrame, gpu_only: bool = False, sweeps: bool = False) -> pd.DataFrame:
    """The runs a picker offers, newest first: GPU runs only where asked, sweeps only where asked or when
    there is nothing else."""
    pool = runs[runs["mode"] == "gpu"] if gpu_only else runs
    if not sweeps and "swept" in pool and (pool["swept"] == 0).any():
        pool = pool[pool["swept"] == 0]
    return pool


def pick_run(
    runs: pd.DataFrame,
    key: str,
    label_text: str = "run",
    index: int = 0,
    gpu_only: bool = False,
    sweeps: bool = False,
    container=None,
) -> str | None:
    """A run picker, newest first. Sweep runs (one version over its meta-parameters) are left to the Sweep
    page unless ``sweeps`` or there is nothing else."""
    pool = pickable(runs, gpu_only, sweeps)
    if pool.empty:
        st.warning(
            "No GPU run in the store: this page shows GPU timings (the Correctness page shows CPU runs). "
            "Profile on a GPU machine, or switch *demo data* on in the sidebar."
        )
        return None
    labels = {label(r): r["id"] for _, r in pool.iterrows()}
    choice = (container or st).selectbox(label_text, list(labels), index=min(index, len(labels) - 1), key=key)
    return labels.get(choice, pool.iloc[0]["id"])


def gpu_run(title: str, key: str) -> tuple[dict, pd.DataFrame, object, object] | None:
    """Page prologue for pages about one GPU run: header, run picker, the run record and its metrics, the
    container of the page's controls (the picker is its first) and an empty slot under it for the chart."""
    runs = header(title)
    if runs is None:
        return None
    picker = st.container()
    slot = st.empty()
    run_id = pick_run(runs, key, gpu_only=True, container=picker)
    if run_id is None:
        slot.empty()
        return None
    metrics = by_gpu_kind(run_id, data.get_metrics(run_id), picker, f"{key}_gpu_kind")
    return data.get_run(run_id), metrics, picker, slot


def by_gpu_kind(run_id: str, metrics: pd.DataFrame, container, key: str) -> pd.DataFrame:
    """A fan-out run whose cases ran on several GPU kinds: the cases of the kind picked in ``container``, so
    the page never ranks an H100's case against an H200's. Other runs: ``metrics`` as they are."""
    dev = data.get_case_devices(run_id)
    kinds = sorted(dev["gpu_name"].dropna().unique()) if "gpu_name" in dev else []
    if len(kinds) < 2:
        return metrics
    kind = container.radio(
        f"GPU kind: this run measured its cases on {len(kinds)} kinds; versions are compared within one",
        kinds,
        horizontal=True,
        key=key,
    )
    return metrics[metrics["case"].isin(set(dev.loc[dev["gpu_name"] == kind, "case_id"]))]


def csv_download(df: pd.DataFrame, file_name: str, label: str = "Download the table (CSV)") -> None:
    """``df`` as a CSV download button that does not rerun the page when clicked. Not a markdown link holding
    the file as a data address: markdown with HTML made a fresh browser fetch and run a 188 kB HTML parser
    (``rehype-raw``) for that one link, as the page's last file, and put the whole CSV into the page; the
    button's code is two files of about 2 kB, and the server hands the file out on the click."""
    st.download_button(label, df.to_csv(index=False), file_name=file_name, mime="text/csv", on_click="ignore")


def table(df: pd.DataFrame, shade: pd.Series | None = None, height_px: int = 480) -> None:
    """A read-only table as formatted HTML (:func:`kprof.dashboards.style.html_table`): a fresh browser shows
    it about 0.7 s sooner than ``st.dataframe``'s grid, whose code it then never loads. Large tables that are
    sorted and scrolled (the Runs page's) keep the grid."""
    st.html(style.html_table(df, shade, height_px))
