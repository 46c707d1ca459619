"""Compare: every version of a family side by side, per dtype, against a PyTorch baseline of the user's choice."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kprof.dashboards import data, figures, html_chart, style
from kprof.dashboards.views.common import csv_download, gpu_run, label, pickable
from kprof.dashboards.views.common import table as show_table

NCU_COLUMNS = (
    "occupancy_achieved_pct",
    "occupancy_limiter",
    "dram_bytes_per_call",
    "dram_vs_model",
    "registers_per_thread",
    "local_bytes",
    "spill_bytes",
)


def render() -> None:
    picked = gpu_run("Compare versions", "compare_run")
    if picked is None:
        return
    run, metrics, controls, _ = picked
    run_id = run["id"]
    runs = data.all_runs()
    same = pickable(runs[(runs["family"] == run["family"]) & (runs["id"] != run_id)], gpu_only=True)
    same = same[same["swept"] == 0] if "swept" in same else same  # sweeps (~90 configurations) have their page
    offered = {label(r): r["id"] for _, r in same.iterrows()}
    # behind a switch: the picker's code (a multiselect) is loaded only by those who add runs
    adding = controls.toggle("add runs of this family", key="compare_add", disabled=not offered)
    extra = (
        controls.multiselect(
            "runs to add (their versions are dashed, named `version @ run`)", list(offered), key="compare_more"
        )
        if adding
        else []
    )
    m = with_added(run, with_time(metrics).assign(unlike=""), [offered[name] for name in extra], controls)
    bad = m[m["status"].isin(["fail", "error"])]
    if not bad.empty:
        controls.error(
            f"**{len(bad)} cases failed** (wrong results or errors; not plotted; the Correctness page "
            "has them all):\n\n" + "\n".join(f"- `{r.case}`: {r.status}: {r.note}" for r in bad.head(20).itertuples())
        )
    dtypes = list(m["dtype"].dropna().unique())
    if not dtypes:
        st.warning("This run has no cases.")
        return
    dtype = controls.radio("dtype", dtypes, horizontal=True, key="compare_dtype")
    against_baseline(m, dtype, run_id, run.get("ceiling_gbps"))


def with_added(run: dict, m: pd.DataFrame, others: list[str], controls) -> pd.DataFrame:
    """This run's cases and those of the ``others`` runs, their versions named ``version @ run`` (e.g. two revisions
    side by side: triton_looped vs triton_looped @ 58fe); an added case measured otherwise than this run's says how
    in ``unlike`` (:func:`unlike`), and the page says so above the chart."""
    if not others:
        return m
    parts = [m]
    ref = measured_on(run, m) if not m.empty else None
    for other in others:
        om = with_time(data.get_metrics(other))
        why_not = unlike(ref, data.get_run(other), om) if ref else ""  # no case here: nothing to rank against
        om = om.assign(provider=om["provider"] + " @ " + other[-4:], unlike=why_not)
        why = sorted(set(om["unlike"]) - {""})
        if why:
            controls.warning(
                f"Run `{other}` was measured otherwise: {'; '.join(why)}. Its versions are drawn and listed, "
                "but given no speedup over this run's baseline and never starred as the best: the difference "
                "is not the code's alone. Add a run of this GPU and timing mode to rank them."
            )
        parts.append(om)
    return pd.concat(parts, ignore_index=True)


def case_devices(run: dict, metrics: pd.DataFrame) -> pd.Series:
    """The GPU each case was measured on: its fan-out worker's where the run has them, else the run's."""
    dev = data.get_case_devices(run["id"])
    by_case = dict(zip(dev["case_id"], dev["gpu_name"])) if "gpu_name" in dev else {}
    return metrics["case"].map(by_case).astype(object).fillna(run.get("device_name") or "an unnamed GPU").astype(str)


def _modes(metrics: pd.DataFrame) -> pd.Series:
    """Each case's timing mode; runs stored before modes were declared were timed with CUDA events."""
    modes = metrics["timing_mode"] if "timing_mode" in metrics else pd.Series(None, index=metrics.index, dtype=object)
    return modes.astype(object).fillna("events (before timing modes)").astype(str)


def measured_on(run: dict, metrics: pd.DataFrame) -> tuple[str, str]:
    """(GPU, timing mode) of this run's cases as the page shows them (one GPU kind: :func:`by_gpu_kind`)."""
    return str(case_devices(run, metrics).mode().iloc[0]), str(_modes(metrics).mode().iloc[0])


def unlike(ref: tuple[str, str], run: dict, metrics: pd.DataFrame) -> pd.Series:
    """Per case of an added run, how its measurement differs from this run's (``ref``: :func:`measured_on`),
    "" where it does not. Such a time is not ranked against this run's (another GPU, a warm call against a
    cold one): the baseline and the best version stay this run's."""
    device, mode = ref
    return pd.Series(
        [
            "; ".join(
                ([f"on {d}, this run on {device}"] if d != device else [])
                + ([f"timed {t}, this run {mode}"] if t != mode else [])
            )
            for d, t in zip(case_devices(run, metrics), _modes(metrics))
        ],
        index=metrics.index,
        dtype=object,
    )


@st.fragment
def against_baseline(m: pd.DataFrame, dtype: str, run_id: str, ceiling: float | None) -> None:
    """The baseline picker and all that depends on it: a new baseline reruns this part only (the run, its
    metrics and the controls above stay as they are)."""
    baseline = st.selectbox(
        "baseline (speedup = its time / the version's time)", list(figures.BASELINES), key="compare_baseline"
    )
    m = figures.with_baseline(m, baseline)
    st.html(html_chart.compare_panels(m, dtype, ceiling=ceiling, baseline=baseline))
    if not m["occupancy_theoretical_pct"].notna().any():
        st.info("No occupancy in this run (profiled with `--profiler none`, or a backend without launch data).")
    table = summary_table(m, dtype)
    # read-only: an HTML table (common.table says why); the CSV below has every digit
    show_table(table, best_shade(table))
    csv_download(table, f"kprof-{run_id}-{dtype}.csv")
    ncu = [c for c in NCU_COLUMNS if c in table]
    st.caption(
        timing_caption(m) + " ★ and green: the fastest correct version at "
        f"the shape. Speedup against {baseline}. "
        + (f"Copy ceiling measured in this run: {ceiling:.0f} GB/s. " if ceiling else "")
        + ("Nsight Compute columns: " + ", ".join(style.COLUMNS[c][0] for c in ncu) + "." if ncu else "")
    )


BEST_COLOUR = "#d4f4dd"


def best_shade(table: pd.DataFrame) -> pd.Series:
    """The summary table's row colours: the fastest correct version at each shape shaded."""
    return table["best"].map({True: BEST_COLOUR, False: ""})


def with_time(metrics: pd.DataFrame) -> pd.DataFrame:
    """The time column the pages plot, whichever timing mode the run declared (:data:`style.TIME_PREFERENCE`)."""
    col = style.time_column(metrics)
    return metrics if col == "gpu_time_us" else metrics.assign(gpu_time_us=metrics[col])


def summary_table(m: pd.DataFrame, dtype: str) -> pd.DataFrame:
    """One row per (shape, version), shapes in sweep order, fastest first; ncu columns where measured."""
    table = m[m["dtype"] == dtype].copy()
    table["best"] = figures.best_per_shape(table)
    cols = [
        "shape",
        "provider",
        "status",
        "best",
        "gpu_time_us",
        "noise",
        "cold_placement_spread",
        "gbps",
        "pct_peak_bw",
        "cold_writeback_us",
        "speedup",
        "warm_us",
        "graph_time_us",
        "host_time_us",
        "timer",
        "launch_latency_us",
        "kernels_per_call",
        "occupancy_theoretical_pct",
        "waves",
        *NCU_COLUMNS,
        "max_rel_err",
        "note",
    ]
    keep = [
        c
        for c in cols
        if c in table and (c in ("shape", "provider", "status", "best", "gpu_time_us") or table[c].notna().any())
    ]
    order = {s: i for i, s in enumerate(figures.shape_order(table))}
    table = table.assign(_o=table["shape"].map(order)).sort_values(["_o", "gpu_time_us"])
    return table[keep].reset_index(drop=True)


def timing_caption(m: pd.DataFrame) -> str:
    """What gpu_time_us means in this run: the declared mode's one-sentence definition (runs stored before
    declared modes were event-timed, and say so)."""
    from kprof.timing import EVENTS_DEFINITION, MODE_DEFINITIONS

    modes = m["timing_mode"].dropna() if "timing_mode" in m else pd.Series(dtype=object)
    if modes.empty:
        return "Times (GPU time): " + EVENTS_DEFINITION
    mode = str(modes.mode().iloc[0])
    fell = int((m.get("timer", pd.Series(dtype=object)) == "events").sum())
    return f"Times (GPU time) are the `{mode}` mode: {MODE_DEFINITIONS[mode].split(': ', 1)[1]}" + (
        f" {fell} case(s) fell back to CUDA events (column timer)." if fell else ""
    )
