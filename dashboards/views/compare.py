"""Compare: every provider of a family side by side, per dtype, against PyTorch."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kprof.dashboards import data, figures
from kprof.dashboards.views.common import gpu_run
from kprof.report import with_speedup


def render() -> None:
    picked = gpu_run("Compare versions", "compare_run")
    if picked is None:
        return
    run, metrics = picked
    run_id = run["id"]
    m = with_speedup(metrics, "torch_eager")
    runs = data.all_runs()
    same = runs[(runs["family"] == run["family"]) & (runs["mode"] == "gpu") & (runs["id"] != run_id)]
    extra = st.multiselect("add runs of this family (their providers get the run's id suffix)", list(same["id"]),
                           key="compare_more")
    if extra:  # e.g. two revisions side by side: triton_looped vs triton_looped @ 58fe
        parts = [m]
        for other in extra:
            om = with_speedup(data.get_metrics(other), "torch_eager")
            parts.append(om.assign(provider=om["provider"] + " @ " + other[-4:]))
        m = pd.concat(parts, ignore_index=True)
    bad = m[m["status"].isin(["fail", "error"])]
    if not bad.empty:
        st.error(f"**{len(bad)} cases failed** (wrong results or errors; not plotted):\n\n"
                 + "\n".join(f"- `{r.case}`: {r.status}: {r.note}" for r in bad.itertuples()))
    dtypes = list(m["dtype"].dropna().unique())
    if not dtypes:
        st.warning("This run has no cases.")
        return
    dtype = st.radio("dtype", dtypes, horizontal=True, key="compare_dtype")
    ceiling = run.get("ceiling_gbps")
    st.plotly_chart(figures.compare_panels(m, dtype, ceiling=ceiling))
    if not m["occupancy_theoretical_pct"].notna().any():
        st.info("No occupancy in this run (profiled with `--profiler none`, or a backend without launch data).")
    table = m[m["dtype"] == dtype].copy()
    table["best"] = figures.best_per_shape(table)
    cols = ["shape", "provider", "status", "best", "gpu_time_us", "noise", "gbps", "pct_peak_bw", "speedup",
            "warm_us", "graph_time_us", "host_time_us", "timer", "launch_latency_us", "kernels_per_call", "occupancy_theoretical_pct", "max_rel_err", "note"]
    table = table[[c for c in cols if c in table]].sort_values(["shape", "gpu_time_us"])
    st.dataframe(table.style.apply(lambda r: ["background-color: #d4f4dd" if r["best"] else "" for _ in r], axis=1),
                 hide_index=True)
    st.download_button("Download the table (CSV)", table.to_csv(index=False), file_name=f"kprof-{run_id}-{dtype}.csv")
    st.caption(timing_caption(m) + " Best per shape highlighted. "
               + (f"Copy ceiling measured in this run: {ceiling:.0f} GB/s." if ceiling else ""))


def timing_caption(m: pd.DataFrame) -> str:
    """What gpu_time_us means in this run: the declared mode's one-sentence definition (runs stored before
    declared modes were event-timed, and say so)."""
    from kprof.timing import EVENTS_DEFINITION, MODE_DEFINITIONS

    modes = m["timing_mode"].dropna() if "timing_mode" in m else pd.Series(dtype=object)
    if modes.empty:
        return "Times (gpu_time_us): " + EVENTS_DEFINITION
    mode = str(modes.mode().iloc[0])
    fell = int((m.get("timer", pd.Series(dtype=object)) == "events").sum())
    return (f"Times (gpu_time_us) are the `{mode}` mode: {MODE_DEFINITIONS[mode].split(': ', 1)[1]}"
            + (f" {fell} case(s) fell back to CUDA events (column timer)." if fell else ""))
