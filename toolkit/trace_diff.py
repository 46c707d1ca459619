"""``kprof diff TRACE_A TRACE_B``: two profiler outputs compared per kernel launch configuration.

Launches are grouped by (case, kernel, launch configuration): the kprof case range they ran in (when both
traces carry case ranges; launches outside any range form their own group), the kernel name (the parser's
normalised name when it gives one), and every launch-configuration column the launch table fills - grid,
block, shared memory, registers, Triton specialisation. Launches of one kernel with two grids (two shapes)
are therefore two rows, never one pooled distribution.

* Both sides traced (one row per launch): the per-launch durations are compared with
  :func:`kprof.diff.compare_samples`. When both sides have the same number of launches in a group the i-th
  launch of A is paired with the i-th of B (two traces of one program repeat one sequence; the first launch
  after a switch is cold in both), and the bootstrap resamples pairs. Two trace files are two captures, so two
  runs: each comparison adds the default run-to-run floor of its size (:func:`kprof.variance.default_floor`),
  as ``kprof diff`` of separate stored runs does. Two committed Kineto captures of unchanged PyTorch kernels on
  an H100, from two sessions, read a 1-µs kernel +14.6% SLOWER without it. A trace against itself is SAME in every
  group: every matched launch has the same duration, and one capture read twice has no second run to vary (told
  over the whole files: one group matching by chance between two captures still takes the floor).
* A side is a summary (nsys ``cuda_gpu_kern_sum``, Proton trees: one row per kernel with a launch count and
  a mean): launch counts, means and totals are compared. Without per-launch samples there is no spread, so no
  interval and no significance test; the row says so, and its verdict is SAME only when count and mean are
  identical, else UNCERTAIN with the measured change.
* Groups present on one side only are listed, with their launches and total time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kprof import launch_table
from kprof.diff import DiffRule, compare_samples, sort_worst_first
from kprof.errors import KprofError
from kprof.fmt import fmt_num, markdown_table
from kprof.variance import WITHIN_RUN, Floor, default_floor

# launch-configuration columns, in the order they are shown; a column empty in both traces is left out
CONFIG_COLUMNS = (
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "shared_mem_bytes",
    "registers_per_thread",
    "config",
)
OUTSIDE = "(outside any case)"
SUMMARY_UNTESTED = "summary only: count, mean and total compared; spread, interval and significance not testable"


def match_names(df: pd.DataFrame) -> pd.Series:
    """The name two traces are matched on: the parser's normalised kernel name (``kernel_norm``: demangled,
    ``.kd``/clone suffixes stripped; spelling differs between tools) where it gives one, else the raw name."""
    raw = df["kernel"].astype(str)
    if "kernel_norm" not in df.columns:
        return raw
    norm = df["kernel_norm"].astype("string")
    return norm.where(norm.notna() & (norm != ""), raw).astype(str)


def _launch_label(row: pd.Series, cols: list[str]) -> str:
    def dims(prefix: str) -> str | None:
        vals = [row.get(f"{prefix}_{a}") for a in "xyz"]
        if all(v is None or v == "-" for v in vals):
            return None
        return f"{prefix} " + "x".join(str(v) for v in vals)

    parts = [p for p in (dims("grid"), dims("block")) if p]
    for c, label in (("shared_mem_bytes", "smem"), ("registers_per_thread", "regs"), ("config", "")):
        if c in cols and row.get(c) not in (None, "-"):
            parts.append(f"{label} {row[c]}".strip())
    return " ".join(parts) or "-"


def _prepare(df: pd.DataFrame, by_case: bool, cols: list[str]) -> pd.DataFrame:
    k = launch_table.kernels(df).copy()
    k["_name"] = match_names(k)
    k["_case"] = k["case"].astype("string").fillna(OUTSIDE) if by_case else ""
    for c in cols:
        k[c] = k[c].astype("string").fillna("-")
    k["_n"] = launch_table.launches(k)
    k["_traced"] = (k["_n"] == 1) & k["start_ns"].notna()
    k["_us"] = k["duration_ns"].astype(float) / 1e3
    return k


@dataclass
class TraceDiff:
    table: pd.DataFrame
    only_in_a: pd.DataFrame
    only_in_b: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        vc = self.table["verdict"].value_counts()
        return {v: int(vc.get(v, 0)) for v in ("SLOWER", "UNCERTAIN", "SAME", "FASTER")}


def _summary_row(ga: pd.DataFrame, gb: pd.DataFrame) -> dict:
    na, nb = int(ga["_n"].sum()), int(gb["_n"].sum())
    ta, tb = float((ga["_us"] * ga["_n"]).sum()), float((gb["_us"] * gb["_n"]).sum())
    mean_a, mean_b = ta / na if na else math.nan, tb / nb if nb else math.nan
    ratio = mean_b / mean_a if mean_a > 0 else math.nan
    same = na == nb and mean_a == mean_b
    why = (
        f"identical summary ({na} launches, mean {mean_a:.2f} us)"
        if same
        else f"mean {100 * (ratio - 1):+.1f}%, total {100 * (tb / ta - 1) if ta else math.nan:+.1f}%, launches "
        f"{na}->{nb}; no per-launch samples, so no interval or test"
    )
    return {
        "median_a": mean_a,
        "median_b": mean_b,
        "ratio": ratio,
        "ci_lo": math.nan,
        "ci_hi": math.nan,
        "p_value": math.nan,
        "n_a": na,
        "n_b": nb,
        "total_a_us": ta,
        "total_b_us": tb,
        "verdict": "SAME" if same else "UNCERTAIN",
        "why": why,
        "statistics": SUMMARY_UNTESTED,
    }


def _one_side(groups: dict, keys: list[str]) -> pd.DataFrame:
    rows = [
        {**dict(zip(keys, k)), "launches": int(g["_n"].sum()), "total_us": float((g["_us"] * g["_n"]).sum())}
        for k, g in groups.items()
    ]
    return pd.DataFrame(rows, columns=[*keys, "launches", "total_us"])


def _trace_floor(xa: np.ndarray, one_capture: bool) -> Floor:
    """Two trace files are two captures, so two runs: the device's default run-to-run floor for the group's size
    (:func:`kprof.variance.default_floor`), unless the files are one capture read twice (:func:`_one_capture`),
    where there is no second run to vary."""
    if one_capture:
        return WITHIN_RUN
    return default_floor(float(np.median(xa)) if xa.size else None)


def _one_capture(pairs: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether every traced group has the same launch durations on both sides: one capture read twice (or by two
    parsers). Decided over the whole files, not per group: in two captures a rarely launched small kernel can read
    the same quantised durations by chance, and one group alone would then be judged SAME without a floor."""
    return bool(pairs) and all(xa.size == xb.size and np.array_equal(xa, xb) for xa, xb in pairs)


def diff_traces(launches_a: pd.DataFrame, launches_b: pd.DataFrame, rule: DiffRule | None = None) -> TraceDiff:
    """Per (case, kernel, launch configuration): the verdict, and the groups found on one side only."""
    rule = rule if rule is not None else DiffRule()
    by_case = bool(launches_a["case"].notna().any() and launches_b["case"].notna().any())
    # a configuration column splits groups only where both traces fill it: Proton records no grid, so an nsys
    # trace against a Proton one matches on kernel (and case) alone instead of matching nothing
    cols = [
        c
        for c in CONFIG_COLUMNS
        if c in launches_a and c in launches_b and launches_a[c].notna().any() and launches_b[c].notna().any()
    ]
    ka, kb = _prepare(launches_a, by_case, cols), _prepare(launches_b, by_case, cols)
    keys = ["_case", "_name", *cols]
    ga = {k: g for k, g in ka.groupby(keys, dropna=False)}
    gb = {k: g for k, g in kb.groupby(keys, dropna=False)}
    common = sorted(set(ga) & set(gb), key=str)
    traced = {
        key: (ga[key].sort_values("start_ns")["_us"].to_numpy(), gb[key].sort_values("start_ns")["_us"].to_numpy())
        for key in common
        if ga[key]["_traced"].all() and gb[key]["_traced"].all()
    }
    one_capture = _one_capture(list(traced.values()))
    rows = []
    for key in common:
        a, b = ga[key], gb[key]
        head = dict(zip(keys, key))
        label = {
            "case": head["_case"] if by_case else head["_name"],
            "kernel": head["_name"],
            "launch": _launch_label(pd.Series(head), cols),
        }
        if key in traced:
            xa, xb = traced[key]
            floor = _trace_floor(xa, one_capture)
            res = compare_samples(xa, xb, rule, floor, paired=True)
            res.pop("variance", None)
            between = (
                f", default run-to-run floor {100 * floor.half_width(rule.confidence):.1f}%"
                if floor.sigma_run > 0
                else ", one capture"
            )
            rows.append(
                {
                    **label,
                    **res,
                    "total_a_us": float(xa.sum()),
                    "total_b_us": float(xb.sum()),
                    "statistics": "per launch" + (", paired by order" if xa.size == xb.size else "") + between,
                }
            )
        else:
            rows.append({**label, **_summary_row(a, b)})
    only_a = _one_side({k: ga[k] for k in set(ga) - set(gb)}, keys)
    only_b = _one_side({k: gb[k] for k in set(gb) - set(ga)}, keys)
    for df in (only_a, only_b):
        df.insert(0, "launch", [_launch_label(r, cols) for _, r in df.iterrows()] if len(df) else [])
    only_a = only_a.rename(columns={"_case": "case", "_name": "kernel"})[
        [c for c in ("case", "kernel", "launch", "launches", "total_us") if c != "case" or by_case]
    ]
    only_b = only_b.rename(columns={"_case": "case", "_name": "kernel"})[
        [c for c in ("case", "kernel", "launch", "launches", "total_us") if c != "case" or by_case]
    ]
    if not rows:
        raise KprofError(
            "the two traces have no kernel launch configuration in common (matched by kernel name, "
            f"grid, block and the other launch columns{', within each kprof case' if by_case else ''}); "
            f"{len(only_a)} groups only in A, {len(only_b)} only in B"
        )
    notes = []
    if any(r["statistics"] == SUMMARY_UNTESTED for r in rows):
        notes.append("summary input: " + SUMMARY_UNTESTED)
    if not by_case:
        notes.append(
            "not matched by kprof case (a trace has no case ranges): same kernel and launch "
            "configuration from different cases share a row"
        )
    return TraceDiff(
        table=sort_worst_first(pd.DataFrame(rows)),
        only_in_a=only_a.sort_values("total_us", ascending=False),
        only_in_b=only_b.sort_values("total_us", ascending=False),
        notes=notes,
    )


def to_markdown(d: TraceDiff, a: str, b: str, rule: DiffRule) -> str:
    c = d.counts
    lines = [
        "# kprof diff of traces",
        "",
        f"- **A**: `{a}`",
        f"- **B**: `{b}`",
        f"- **verdicts**: {c['SLOWER']} slower, {c['FASTER']} faster, {c['SAME']} same, {c['UNCERTAIN']} uncertain "
        f"({len(d.table)} launch groups in both; {len(d.only_in_a)} only in A, {len(d.only_in_b)} only in B)",
        f"- **rule**: {rule.describe()} (per launch; two trace files are two runs, so each verdict adds the "
        "default run-to-run floor, the statistics column says how much)",
    ]
    lines += [f"- **note**: {n}" for n in d.notes]
    rows = [
        [
            str(r.case)[:60],
            str(r.kernel)[:60],
            r.launch,
            fmt_num(r.median_a, "{:.2f}"),
            fmt_num(r.median_b, "{:.2f}"),
            fmt_num(r.ratio, "{:.3f}"),
            f"{fmt_num(r.ci_lo, '{:.3f}')}-{fmt_num(r.ci_hi, '{:.3f}')}",
            fmt_num(r.p_value, "{:.2g}"),
            f"{r.n_a}/{r.n_b}",
            f"**{r.verdict}**",
            r.statistics,
            r.why,
        ]
        for r in d.table.itertuples()
    ]
    lines += [
        "",
        markdown_table(
            [
                "case",
                "kernel",
                "launch",
                "A µs",
                "B µs",
                "B/A",
                "95% interval",
                "p",
                "launches",
                "verdict",
                "statistics",
                "why",
            ],
            rows,
            "lllrrrlrrlll",
        ),
    ]
    for label, df in (("Only in A", d.only_in_a), ("Only in B", d.only_in_b)):
        if len(df):
            lines += [
                "",
                f"## {label}",
                "",
                markdown_table(
                    [*df.columns[:-1], "total µs"],
                    [[*(str(v)[:60] for v in r[:-1]), f"{r[-1]:.2f}"] for r in df.itertuples(index=False)],
                    "l" * (len(df.columns) - 2) + "rr",
                ),
            ]
    return "\n".join(lines) + "\n"


def to_json(d: TraceDiff) -> dict:
    def recs(df: pd.DataFrame) -> list[dict]:
        return [
            {
                k: (None if isinstance(v, float) and math.isnan(v) else (v.item() if isinstance(v, np.generic) else v))
                for k, v in r.items()
            }
            for r in df.to_dict("records")
        ]

    return {
        "counts": d.counts,
        "notes": d.notes,
        "groups": recs(d.table),
        "only_in_a": recs(d.only_in_a),
        "only_in_b": recs(d.only_in_b),
    }
