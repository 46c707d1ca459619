"""The correctness gate of ``kprof profile`` / ``kprof sweep``: a wrong kernel fails the command.

A case *fails the gate* when its output is wrong (``fail``: error above the family's tolerance, NaN, elements
never written, wrong shape) or its provider raised (``error``). A case *skipped* with its reason (a GPU-only
provider in an interpreter run, a configuration that cannot compile) is not a failure. A run in which no case
was checked at all (every case skipped) fails too: a gate that checked nothing must not read as a pass.

The command prints one stderr line per failing case, after the run is stored and its report printed, and exits
1 (``--allow-failures``: 0). Exit 2 stays for usage mistakes caught before anything runs (unknown family, bad
shape syntax); a shape the kernels reject at run time (``--shape 0x64``) is a run whose cases error: exit 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from kprof.registry import YARDSTICK_KINDS

FAILING = ("fail", "error")


@dataclass(frozen=True)
class Failure:
    run_id: str
    label: str  # which run (its --rev when revisions were compared)
    case: str  # family/provider/shape/dtype, or "" for a whole-run failure
    status: str  # fail | error | unchecked
    detail: str

    def line(self) -> str:
        where = f"{self.case} " if self.case else ""
        return f"kprof: {self.status.upper()} {where}[{self.label}]: {self.detail}"


def _first_line(text: Any, limit: int = 300) -> str:
    if not isinstance(text, str) or not text.strip():
        return "no message recorded"
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:limit]  # traceback.format_exception_only ends with "Type: message"


def _detail(row: Any) -> str:
    if row.status == "error":
        return f"raised {_first_line(row.note)}"
    note = _first_line(row.note) if isinstance(row.note, str) and row.note.strip() else "output differs from the oracle"
    rel, mx = row.max_rel_err, row.max_abs_err
    sizes = []
    if isinstance(rel, float) and math.isfinite(rel) and "relative error" not in note:
        sizes.append(f"relative error {rel:.3g}")
    if isinstance(mx, float) and not math.isnan(mx):
        sizes.append(f"max abs error {mx:.3g}")
    return note + (f" ({', '.join(sizes)})" if sizes else "")


def run_failures(run: dict, metrics: Any) -> list[Failure]:
    """Failures of one stored run (``run`` as :meth:`RunStore.run` gives it, ``metrics`` its cases)."""
    cfg = run.get("config") or {}
    label = f"run {run['id']}" + (f", --rev {cfg['revision']}" if cfg.get("revision") else "")
    out = [Failure(run["id"], label, r.case, r.status, _detail(r)) for r in metrics.itertuples() if r.status in FAILING]
    # a yardstick (a copy of the bytes, cuBLAS's product alone) runs "ok" without an oracle check: it checks nothing
    yardstick = metrics["kind"].isin(YARDSTICK_KINDS) if "kind" in metrics else pd.Series(False, index=metrics.index)
    if len(metrics) and not ((metrics["status"] != "skipped") & ~yardstick).any():
        skipped = int((metrics["status"] == "skipped").sum())
        out.append(
            Failure(
                run["id"],
                label,
                "",
                "unchecked",
                f"none of the {len(metrics)} cases was checked against the oracle ({skipped} skipped, "
                f"{len(metrics) - skipped} yardsticks, which are timed but never checked)"
                if yardstick.any()
                else f"all {len(metrics)} cases were skipped, none was checked against the oracle",
            )
        )
    elif not len(metrics):
        out.append(Failure(run["id"], label, "", "unchecked", "the run holds no case"))
    return out


def check(store: Any, run_ids: Sequence[str]) -> list[Failure]:
    """Every failure of the runs ``run_ids`` in ``store`` (a :class:`kprof.store.RunStore`)."""
    out: list[Failure] = []
    for run_id in run_ids:
        out += run_failures(store.run(run_id), store.metrics(run_id))
    return out


def summary(failures: Sequence[Failure], allow: bool) -> str:
    cases = sum(1 for f in failures if f.case)
    what = f"{cases} case(s) failed their correctness check or raised" if cases else "no case was checked"
    if allow:
        return f"kprof: {what}; exit status 0 because of --allow-failures"
    return f"kprof: {what} (exit status 1; --allow-failures exits 0)"
