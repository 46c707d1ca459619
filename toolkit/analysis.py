"""Analyses over launch tables: plain functions, DataFrame in, DataFrame out, no plotting.

* :func:`kernel_summary` - per kernel (and kind): launches, total / mean / median time, cases.
* :func:`case_kernel_times` - per (case, kernel): launches and median duration, from any profiler.
* :func:`compare_profilers` - the same cases measured by several profilers, side by side, with each
  profiler's median relative to a reference profiler.
* :func:`timeline_lanes` / :func:`timeline_bins` - the timeline's lanes (GPU streams, host threads), and
  the launches folded into equal time intervals per lane, for traces too large to draw launch by launch.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from kprof import launch_table


def kernel_summary(launches: pd.DataFrame) -> pd.DataFrame:
    """One row per (kernel, kind, scope), largest total time first. Summary rows count as ``count`` launches;
    one kernel under different profiler scopes (Proton) stays in separate rows."""
    cols = ["kernel", "kind", "scope", "launches", "total_us", "mean_us", "median_us", "cases"]
    if launches.empty:
        return pd.DataFrame(columns=cols)
    scope = launches["scope"] if "scope" in launches else pd.Series(pd.NA, index=launches.index)
    df = launches.assign(
        kind=launches["kind"].fillna("kernel"),
        n=launch_table.launches(launches),
        scope=scope.astype("string").fillna(""),
    )
    df = df.assign(total=df["duration_ns"].astype("float64") * df["n"])
    rows = []
    for (kernel, kind, sc), g in df.groupby(["kernel", "kind", "scope"], sort=False):
        traced = g.loc[g["n"] == 1, "duration_ns"].astype("float64")
        rows.append(
            {
                "kernel": kernel,
                "kind": kind,
                "scope": sc or pd.NA,
                "launches": int(g["n"].sum()),
                "total_us": g["total"].sum() / 1e3,
                "mean_us": g["total"].sum() / g["n"].sum() / 1e3,
                "median_us": float(np.median(traced)) / 1e3 if len(traced) == len(g) else np.nan,
                "cases": int(g["case"].nunique()),
            }
        )
    return pd.DataFrame(rows, columns=cols).sort_values("total_us", ascending=False).reset_index(drop=True)


def case_kernel_times(launches: pd.DataFrame) -> pd.DataFrame:
    """Per (case, kernel) of the attributed kernel rows: launches, median, p20, p80 and mean (us). Kernels
    are keyed by ``kernel_norm`` (the profiler-independent name); ``kernel`` shows the first spelling."""
    cols = ["case", "kernel", "kernel_norm", "launches", "median_us", "p20_us", "p80_us", "mean_us"]
    k = launch_table.kernels(launches)
    k = k[k["case"].notna()]
    if k.empty:
        return pd.DataFrame(columns=cols)
    if "kernel_norm" not in k or k["kernel_norm"].isna().any():
        k = launch_table.validate(k)
    rows = []
    for (case, norm), g in k.groupby(["case", "kernel_norm"], sort=False):
        kernel = g["kernel"].iloc[0]
        n = launch_table.launches(g)
        d = g["duration_ns"].astype("float64")
        traced = d[n == 1]
        p20, p50, p80 = np.percentile(traced, [20, 50, 80]) if len(traced) else (np.nan, np.nan, np.nan)
        rows.append(
            {
                "case": case,
                "kernel": kernel,
                "kernel_norm": norm,
                "launches": int(n.sum()),
                "median_us": p50 / 1e3,
                "p20_us": p20 / 1e3,
                "p80_us": p80 / 1e3,
                "mean_us": float((d * n).sum() / n.sum()) / 1e3,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def compare_profilers(tables: Mapping[str, pd.DataFrame], reference: str | None = None) -> pd.DataFrame:
    """Median kernel duration per (case, kernel) under each profiler, and each one's ratio to ``reference``.

    Kernels are matched by case and by normalised name (``kernel_norm``: demangled, without return type,
    parameter lists and clone suffixes, so nsys, Kineto, Proton and rocprof spellings meet); where names
    still differ (ncu abbreviates template parameters), kernels are paired by rank of total time when each
    profiler saw the same number of distinct kernels in that case. ``match`` says which rule paired the row.
    """
    per = {name: case_kernel_times(t) for name, t in tables.items()}
    names = list(per)
    reference = reference or names[0]
    rows: list[dict] = []
    cases = sorted(set().union(*[set(p["case"]) for p in per.values()]))
    for case in cases:
        by_prof = {
            n: per[n][per[n]["case"] == case].sort_values("mean_us", ascending=False, kind="stable") for n in names
        }
        ref = by_prof[reference]
        for rank, r in enumerate(ref.itertuples()):
            row: dict = {"case": case, "kernel": r.kernel, "rank": rank}
            matches = []
            for n in names:
                g = by_prof[n]
                hit = g[g["kernel_norm"] == r.kernel_norm]
                how = "name"
                if hit.empty and len(g) == len(ref):
                    hit, how = g.iloc[[rank]], "rank"
                if hit.empty:
                    continue
                h = hit.iloc[0]
                row[f"{n}_median_us"] = h["median_us"] if not pd.isna(h["median_us"]) else h["mean_us"]
                row[f"{n}_launches"] = h["launches"]
                matches.append(how)
            row["match"] = "rank" if "rank" in matches else "name"
            rows.append(row)
    df = pd.DataFrame(rows)
    for n in names:
        if n != reference and f"{n}_median_us" in df and f"{reference}_median_us" in df:
            df[f"{n}_vs_{reference}"] = df[f"{n}_median_us"] / df[f"{reference}_median_us"]
    return df


TIMELINE_COLUMNS = ["lane", "track", "start_ns", "end_ns", "kernel", "case"]


def gpu_lane(rows: pd.DataFrame) -> pd.Series:
    """The timeline lane of GPU work: one per (device, stream)."""
    return (
        "GPU "
        + rows["device"].astype("string").fillna("?")
        + " · stream "
        + rows["stream"].astype("string").fillna("?")
    )


def host_lane(rows: pd.DataFrame) -> pd.Series:
    """The timeline lane of a launch or sync call: one per host thread."""
    return "host thread " + rows["tid"].astype("string").fillna("?")


def timeline_lanes(launches: pd.DataFrame) -> pd.DataFrame:
    """Every timed event on its timeline lane, one row each: GPU work (``track`` "kernels") on one lane per
    (device, stream) from start to end; the launch or sync call (``track`` "calls") on one lane per host
    thread from API start to API end. Rows without timestamps (ncu, summaries) have no place on a timeline."""
    timed = launches[launches["start_ns"].notna()]
    gpu = timed[timed["kind"].fillna("kernel") != "sync"]
    host = timed[timed["api_start_ns"].notna()]
    parts = [
        pd.DataFrame(
            {
                "lane": gpu_lane(gpu),
                "track": "kernels",
                "start_ns": gpu["start_ns"],
                "end_ns": gpu["end_ns"],
                "kernel": gpu["kernel"],
                "case": gpu["case"],
            }
        ),
        pd.DataFrame(
            {
                "lane": host_lane(host),
                "track": "calls",
                "start_ns": host["api_start_ns"],
                "end_ns": host["api_end_ns"],
                "kernel": host["kernel"],
                "case": host["case"],
            }
        ),
    ]
    out = (
        pd.concat([p for p in parts if not p.empty], ignore_index=True)
        if any(not p.empty for p in parts)
        else pd.DataFrame(columns=TIMELINE_COLUMNS)
    )
    out["start_ns"] = out["start_ns"].astype("float64")
    out["end_ns"] = out["end_ns"].astype("float64")
    return out[TIMELINE_COLUMNS]


def timeline_bins(launches: pd.DataFrame, bins: int = 1000) -> pd.DataFrame:
    """The timeline folded into ``bins`` equal intervals of the whole span, per lane: first start, last end,
    events, busy time (sum of durations), the kernel that took most of it, and how many distinct kernels
    and cases. Every timed event lands in exactly one interval (by its start), so counts and busy time add
    up to the unfolded table's."""
    cols = ["lane", "track", "bin", "start_ns", "end_ns", "events", "busy_ns", "top_kernel", "kernels", "cases"]
    ev = timeline_lanes(launches)
    if ev.empty:
        return pd.DataFrame(columns=cols)
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    t0, t1 = ev["start_ns"].min(), ev["end_ns"].max()
    width = max((t1 - t0) / bins, 1.0)
    ev = ev.assign(
        bin=((ev["start_ns"] - t0) // width).clip(upper=bins - 1).astype("int64"),
        dur=(ev["end_ns"] - ev["start_ns"]).clip(lower=0),
        kernel=ev["kernel"].astype("string").fillna("?"),
    )
    keys = ["lane", "track", "bin"]
    out = ev.groupby(keys, sort=True).agg(
        start_ns=("start_ns", "min"),
        end_ns=("end_ns", "max"),
        events=("start_ns", "size"),
        busy_ns=("dur", "sum"),
        kernels=("kernel", "nunique"),
        cases=("case", "nunique"),
    )
    top = (
        ev.groupby([*keys, "kernel"], sort=False)["dur"]
        .sum()
        .reset_index()
        .sort_values("dur", kind="stable")
        .drop_duplicates(keys, keep="last")
        .set_index(keys)["kernel"]
        .rename("top_kernel")
    )
    return out.join(top).reset_index()[cols]
