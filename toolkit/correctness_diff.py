"""Correctness between two runs: which cases broke, which were fixed, whose error grew.

Per case present in both runs (matched on family, provider, shape, dtype):

* **BROKEN**: correct in A, wrong or raising in B - a correctness regression (``kprof diff
  --fail-on-regression`` exits 1 on it, whatever the timings say);
* **FIXED**: wrong or raising in A, correct in B;
* **STILL-BROKEN**: wrong or raising in both;
* **ERR-GREW**: correct in both, but B's relative error is more than :data:`GROWTH` times A's and uses at
  least :data:`BUDGET_SHARE` of the tolerance: still passing, worth a look (inputs are random, so smaller
  growth is not told apart from the draw);
* **SAME-CORRECT**: correct in both, error not grown as above;
* **NOT-CHECKED**: skipped on a side (with its reason); a skip is neither a pass nor a failure.

Cases wrong or raising in B that A never had wrong (new in B, or skipped in A) are listed apart
(:func:`new_failures`): ``--fail-on-regression`` exits 1 on them too. So are kprof's own versions correct in A that
B skipped (:func:`unchecked_in_b`, B's reason given): a version B could no longer compile or run reads as skipped
there, and a gate that passed on it would vouch for code nobody checked. A peer B skipped (Liger not installed
there) is no code under test and does not fail it.

Needs no timings, so two CPU interpreter runs get verdicts on what they measured.
"""

from __future__ import annotations

import math
import re
from functools import cache

import pandas as pd

CORRECTNESS_VERDICTS = ("BROKEN", "STILL-BROKEN", "ERR-GREW", "NOT-CHECKED", "FIXED", "SAME-CORRECT")
GROWTH = 2.0
BUDGET_SHARE = 0.1
_BAD = ("fail", "error")
MATCH_KEYS = ("family", "provider", "shape", "dtype")


@cache
def family_tolerance(family: str, dtype: str) -> float:
    """The family's relative-error tolerance for ``dtype`` (NaN when the family cannot be loaded here)."""
    try:
        from kprof.registry import get_family

        return float(get_family(family).tolerances[dtype])
    except Exception:  # noqa: BLE001 - a family of another checkout, or no torch: the note may still say it
        return math.nan


def _tolerance(family: str, dtype: str, note: object) -> float:
    tol = family_tolerance(str(family), str(dtype))
    if math.isnan(tol) and isinstance(note, str):
        m = re.search(r"tolerance ([0-9.eE+-]+)", note)
        if m:
            tol = float(m.group(1))
    return tol


def _num(v: object) -> float:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
    return x


def judge(status_a: str, status_b: str, err_a: float, err_b: float, tol: float) -> tuple[str, str]:
    """Verdict and reason for one case."""
    if status_a == "ok" and status_b == "skipped":
        return "NOT-CHECKED", "correct in A, skipped in B"
    if status_a == "skipped" or status_b == "skipped":
        side = "A" if status_a == "skipped" else "B"
        return "NOT-CHECKED", f"skipped in {side}"
    if status_a == "ok" and status_b in _BAD:
        return "BROKEN", f"correct in A, {status_b} in B" + (
            f" (rel err {err_b:.2e} vs tolerance {tol:.0e})"
            if status_b == "fail" and err_b == err_b and tol == tol
            else ""
        )
    if status_a in _BAD and status_b == "ok":
        return "FIXED", f"{status_a} in A, correct in B"
    if status_a in _BAD and status_b in _BAD:
        return "STILL-BROKEN", f"{status_a} in A, {status_b} in B"
    if status_a == "ok" and status_b == "ok":
        if err_b == err_b and err_a == err_a:
            budget = err_b / tol if tol == tol and tol > 0 else math.nan
            grew = err_b > GROWTH * err_a and (budget != budget or budget >= BUDGET_SHARE)
            if grew:
                share = f", {100 * budget:.0f}% of the tolerance" if budget == budget else ""
                return "ERR-GREW", f"rel err {err_a:.2e} -> {err_b:.2e}{share}"
            return "SAME-CORRECT", f"rel err {err_a:.2e} -> {err_b:.2e}"
        return "SAME-CORRECT", "correct in both"
    return "NOT-CHECKED", f"status {status_a} in A, {status_b} in B"


def diff_correctness(metrics_a: pd.DataFrame, metrics_b: pd.DataFrame) -> pd.DataFrame:
    """One row per case in both runs: statuses, relative errors, tolerance, verdict, why; worst first."""
    cols = [
        *MATCH_KEYS,
        "case",
        "kind",
        "status_a",
        "status_b",
        "rel_err_a",
        "rel_err_b",
        "tolerance",
        "verdict",
        "why",
    ]
    keep = [*MATCH_KEYS, "case", "status", "max_rel_err", "note", "kind"]
    a = metrics_a.reindex(columns=keep)
    b = metrics_b.reindex(columns=keep)
    both = a.merge(b, on=list(MATCH_KEYS), suffixes=("_a", "_b"))
    rows = []
    for r in both.to_dict("records"):
        tol = _tolerance(r["family"], r["dtype"], r["note_b"] if isinstance(r["note_b"], str) else r["note_a"])
        ea, eb = _num(r["max_rel_err_a"]), _num(r["max_rel_err_b"])
        verdict, why = judge(str(r["status_a"]), str(r["status_b"]), ea, eb, tol)
        if (verdict in ("BROKEN", "STILL-BROKEN") or _lost(r["status_a"], r["status_b"])) and _said(r["note_b"]):
            why += f": {r['note_b'][:120]}"
        rows.append(
            {
                **{k: r[k] for k in MATCH_KEYS},
                "case": r["case_b"],
                "kind": r["kind_b"] if isinstance(r["kind_b"], str) else r["kind_a"],
                "status_a": r["status_a"],
                "status_b": r["status_b"],
                "rel_err_a": ea,
                "rel_err_b": eb,
                "tolerance": tol,
                "verdict": verdict,
                "why": why,
            }
        )
    df = pd.DataFrame(rows, columns=cols)
    order = {v: i for i, v in enumerate(CORRECTNESS_VERDICTS)}
    return (
        df.assign(_o=df["verdict"].map(order))
        .sort_values(["_o", "case"], kind="stable")
        .drop(columns="_o")
        .reset_index(drop=True)
    )


def _lost(status_a: object, status_b: object) -> bool:
    """Correct in A, skipped in B: B's check of a case A passed is missing."""
    return str(status_a) == "ok" and str(status_b) == "skipped"


def _said(note: object) -> bool:
    return isinstance(note, str) and bool(note.strip())


def unchecked_in_b(table: pd.DataFrame) -> list[str]:
    """kprof's own versions (kind ``triton``, or of no recorded kind) in :func:`diff_correctness`'s ``table`` correct
    in A and skipped in B, each as ``case (why)``. The skip is B's own (a configuration that no longer compiles, a
    version that now declines the shape) or the runs' different environments (a GPU run against an interpreter run):
    either way B did not check what A passed, so a gate between them has nothing to pass on for these."""
    if table.empty:
        return []
    ours = table["kind"].isna() | (table["kind"] == "triton")
    lost = table[ours & table.apply(lambda r: _lost(r["status_a"], r["status_b"]), axis=1)]
    return [f"{r.case} ({r.why})" for r in lost.itertuples()]


def new_failures(metrics_a: pd.DataFrame, metrics_b: pd.DataFrame) -> list[str]:
    """Cases wrong or raising in B that A never had wrong: new in B (a version or shape A did not run) or skipped
    in A. :func:`diff_correctness` has no verdict for them (it judges cases in both runs), yet a wrong version
    added in B is what a gate between two revisions is there to stop."""
    keys = list(MATCH_KEYS)
    bad_b = metrics_b[metrics_b["status"].astype(str).isin(_BAD)]
    if bad_b.empty:
        return []
    checked_a = metrics_a[metrics_a["status"].astype(str) != "skipped"]
    seen = set(map(tuple, checked_a[keys].astype(str).to_numpy()))
    return sorted(
        str(case) for key, case in zip(map(tuple, bad_b[keys].astype(str).to_numpy()), bad_b["case"]) if key not in seen
    )


def counts(table: pd.DataFrame) -> dict[str, int]:
    vc = table["verdict"].value_counts() if not table.empty else pd.Series(dtype=int)
    return {v: int(vc.get(v, 0)) for v in CORRECTNESS_VERDICTS}


def markdown_rows(table: pd.DataFrame) -> list[list[str]]:
    def e(x: float) -> str:
        return "-" if x != x else f"{x:.2e}"

    return [
        [
            r.case,
            f"{r.status_a} -> {r.status_b}",
            e(r.rel_err_a),
            e(r.rel_err_b),
            e(r.tolerance),
            f"**{r.verdict}**",
            r.why,
        ]
        for r in table.itertuples()
    ]


MARKDOWN_HEADERS = ["case", "status A -> B", "rel err A", "rel err B", "tolerance", "verdict", "why"]
