"""Analyses over launch tables: plain functions, DataFrame in, DataFrame out, no plotting.

* :func:`kernel_summary` - per kernel (and kind): launches, total / mean / median time, cases.
* :func:`case_kernel_times` - per (case, kernel): launches and median duration, from any profiler.
* :func:`compare_profilers` - the same cases measured by several profilers, side by side, with each
  profiler's median relative to a reference profiler.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from kprof import launch_table


def kernel_summary(launches: pd.DataFrame) -> pd.DataFrame:
    """One row per (kernel, kind), largest total time first. Summary rows count as ``count`` launches."""
    cols = ["kernel", "kind", "launches", "total_us", "mean_us", "median_us", "cases"]
    if launches.empty:
        return pd.DataFrame(columns=cols)
    df = launches.assign(kind=launches["kind"].fillna("kernel"), n=launch_table.launches(launches))
    df = df.assign(total=df["duration_ns"].astype("float64") * df["n"])
    rows = []
    for (kernel, kind), g in df.groupby(["kernel", "kind"], sort=False):
        traced = g.loc[g["n"] == 1, "duration_ns"].astype("float64")
        rows.append({
            "kernel": kernel, "kind": kind, "launches": int(g["n"].sum()), "total_us": g["total"].sum() / 1e3,
            "mean_us": g["total"].sum() / g["n"].sum() / 1e3,
            "median_us": float(np.median(traced)) / 1e3 if len(traced) == len(g) else np.nan,
            "cases": int(g["case"].nunique()),
        })
    return pd.DataFrame(rows, columns=cols).sort_values("total_us", ascending=False).reset_index(drop=True)


def case_kernel_times(launches: pd.DataFrame) -> pd.DataFrame:
    """Per (case, kernel) of the attributed kernel rows: launches, median, p20, p80 and mean (us)."""
    cols = ["case", "kernel", "launches", "median_us", "p20_us", "p80_us", "mean_us"]
    k = launch_table.kernels(launches)
    k = k[k["case"].notna()]
    if k.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for (case, kernel), g in k.groupby(["case", "kernel"], sort=False):
        n = launch_table.launches(g)
        d = g["duration_ns"].astype("float64")
        traced = d[n == 1]
        p20, p50, p80 = np.percentile(traced, [20, 50, 80]) if len(traced) else (np.nan, np.nan, np.nan)
        rows.append({"case": case, "kernel": kernel, "launches": int(n.sum()), "median_us": p50 / 1e3,
                     "p20_us": p20 / 1e3, "p80_us": p80 / 1e3, "mean_us": float((d * n).sum() / n.sum()) / 1e3})
    return pd.DataFrame(rows, columns=cols)


def compare_profilers(tables: Mapping[str, pd.DataFrame], reference: str | None = None) -> pd.DataFrame:
    """Median kernel duration per (case, kernel) under each profiler, and each one's ratio to ``reference``.

    Kernels are matched by case and by name; names differ between tools for the same kernel (nsys and
    Kineto demangle, Proton does not, ncu drops template parameters it prints differently), so within a
    case, kernels whose names do not match are paired by rank of total time when each profiler saw the
    same number of distinct kernels in that case. ``match`` says which rule paired the row.
    """
    per = {name: case_kernel_times(t) for name, t in tables.items()}
    names = list(per)
    reference = reference or names[0]
    rows: list[dict] = []
    cases = sorted(set().union(*[set(p["case"]) for p in per.values()]))
    for case in cases:
        by_prof = {n: per[n][per[n]["case"] == case].sort_values("mean_us", ascending=False, kind="stable")
                   for n in names}
        ref = by_prof[reference]
        for rank, r in enumerate(ref.itertuples()):
            row: dict = {"case": case, "kernel": r.kernel, "rank": rank}
            matches = []
            for n in names:
                g = by_prof[n]
                hit = g[g["kernel"] == r.kernel]
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
