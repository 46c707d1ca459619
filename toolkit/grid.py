"""The grid table: at every point of a family's shape grid, the best kprof version against the best peer.

``kprof profile FAMILY --grid PART`` races every provider at every point of one part of the family's grid
(``grid:`` in its ``sweep.yaml``), interleaved, in the declared timing mode; ``kprof grid RUN...`` reads one
or more such runs (the parts of one grid, the same device) and prints, per (shape, dtype):

* the fastest Triton version and its time, the fastest peer (eager, ``F.*``, torch.compile, libraries such
  as Liger) and its time, their ratio and a verdict: ``win`` at <= 0.98, ``tie`` up to 1.02, ``loss`` above,
  and ``uncertain`` where a win or a loss is within the two cases' own spread (kprof does not call it);
* for memory-bound points, the best version's bandwidth as a fraction of the device's copy ceiling;
* for matrix families, the ratio to the family's ``roofline`` yardstick (one cuBLAS product of the shape);
* given the family's dispatch (the provider ``kprof.kernels.ops`` runs), its time over the best kprof
  version's: where it is above 1.02 the dispatch misses a faster version a model would not get.

Reads the store's metrics only (the data flow's last step before a report).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

PEER_KINDS = ("eager", "library", "compile", "peer")
WIN, TIE = 0.98, 1.02


@dataclass(frozen=True)
class GridSummary:
    """Counts of each verdict over the points of a grid table."""

    points: int
    wins: int
    ties: int
    losses: int
    uncertain: int
    no_peer: int
    not_measured: int = 0


def _best(rows: pd.DataFrame) -> pd.Series | None:
    ok = rows[rows["ok"].astype(bool) & rows["gpu_time_us"].notna()]
    return None if ok.empty else ok.loc[ok["gpu_time_us"].idxmin()]


def verdict(ratio: float, spread: float) -> str:
    """``win`` / ``tie`` / ``loss`` for best-kprof over best-peer time; ``uncertain`` for a win or a loss
    whose margin past the tie band the cases' own spread (IQR/median, the larger of the two) could make:
    the same rule both ways, so a win is claimed no more easily than a loss."""
    if math.isnan(ratio):
        return "no peer"
    s = spread if not math.isnan(spread) else 0.0
    if ratio <= WIN:
        return "uncertain" if WIN - ratio < s else "win"
    if ratio <= TIE:
        return "tie"
    return "uncertain" if ratio - TIE <= s else "loss"


def grid_table(metrics: pd.DataFrame, dispatch: str | None = None, prepared: Sequence[str] = ()) -> pd.DataFrame:
    """One row per (shape, dtype) of ``metrics`` (one or more runs' rows, concatenated); ``dispatch``: the
    provider the ops API runs for this family, compared with the best kprof version at each point other than
    the ``prepared`` ones (versions on weights derived before the call, which the plain op cannot use: the
    ops API runs them only through its prepared objects)."""
    rows = []
    for (shape, dtype), g in metrics.groupby(["shape", "dtype"], sort=False):
        kp = _best(g[g["kind"] == "triton"])
        plain = _best(g[(g["kind"] == "triton") & ~g["provider"].isin(list(prepared))])
        disp = _best(g[g["provider"] == dispatch]) if dispatch else None
        peer = _best(g[g["kind"].isin(PEER_KINDS)])
        roof = _best(g[g["kind"] == "roofline"])
        t_k = float(kp["gpu_time_us"]) if kp is not None else math.nan
        t_p = float(peer["gpu_time_us"]) if peer is not None else math.nan
        ratio = t_k / t_p if kp is not None and peer is not None else math.nan
        spread = max(
            float(kp.get("noise", math.nan)) if kp is not None else math.nan,
            float(peer.get("noise", math.nan)) if peer is not None else math.nan,
        )
        bound = str(kp.get("bound", "")) if kp is not None else ""
        rows.append(
            {
                "shape": shape,
                "dtype": dtype,
                "best_kprof": kp["provider"] if kp is not None else None,
                "kprof_us": t_k,
                "best_peer": peer["provider"] if peer is not None else None,
                "peer_us": t_p,
                "ratio": ratio,
                "spread": spread,
                "verdict": verdict(ratio, spread) if kp is not None else "not measured",
                "why": _why_unmeasured(g) if kp is None else "",
                "bound": bound,
                "pct_copy": float(kp["pct_peak_bw"]) if kp is not None and bound == "memory" else math.nan,
                "bytes": float(kp["bytes"]) if kp is not None and pd.notna(kp.get("bytes")) else math.nan,
                "vs_roofline": t_k / float(roof["gpu_time_us"]) if kp is not None and roof is not None else math.nan,
                "timing_mode": kp.get("timing_mode") if kp is not None else None,
                "dispatch_vs_best": (
                    float(disp["gpu_time_us"]) / float(plain["gpu_time_us"])
                    if disp is not None and plain is not None
                    else math.nan
                ),
            }
        )
    return pd.DataFrame(rows)


def _why_unmeasured(g: pd.DataFrame) -> str:
    """The first note of the point's Triton cases that did not give a time (an error, a skip, out of memory)."""
    tri = g[g["kind"] == "triton"]
    notes = [str(n) for n in tri.get("note", pd.Series(dtype=object)).dropna() if str(n).strip()]
    return notes[0][:160] if notes else ("no Triton version ran" if tri.empty else "no Triton case gave a time")


def summarize(table: pd.DataFrame) -> GridSummary:
    v = table["verdict"].value_counts()
    return GridSummary(
        points=len(table),
        wins=int(v.get("win", 0)),
        ties=int(v.get("tie", 0)),
        losses=int(v.get("loss", 0)),
        uncertain=int(v.get("uncertain", 0)),
        no_peer=int(v.get("no peer", 0)),
        not_measured=int(v.get("not measured", 0)),
    )


def render(
    table: pd.DataFrame, runs: Sequence[str], family: str, dispatch: str | None = None, prepared: Sequence[str] = ()
) -> str:
    """Markdown: the summary line, then one row per point, losses first."""
    s = summarize(table)
    d = table.get("dispatch_vs_best", pd.Series(dtype=float)).dropna()
    mode = next((m for m in table["timing_mode"].dropna()), "cold")
    order = {"loss": 0, "uncertain": 1, "tie": 2, "win": 3}
    t = table.assign(_o=table["verdict"].map(order).fillna(4)).sort_values(["_o", "ratio"], ascending=[True, False])
    lines = [
        f"# kprof grid · {family} · runs {', '.join(runs)}",
        "",
        f"{s.points} points: **{s.wins} win, {s.ties} tie, {s.losses} loss**, {s.uncertain} uncertain "
        f"(a win or a loss within the cases' own spread), {s.no_peer} without a peer, {s.not_measured} not measured "
        f"(reason in the last column). Times: `{mode}` mode, µs. "
        f"win: best kprof <= {WIN} x best peer; tie: up to {TIE} x.",
        "",
        *(
            [
                f"Dispatch (`{dispatch}`, what `kprof.kernels.ops` runs): within {TIE} x the best kprof version at "
                f"{int((d <= TIE).sum())} of {len(d)} points; `{dispatch} / best` is its time over the best's"
                + (
                    f" (versions on prepared weights, {', '.join(f'`{p}`' for p in prepared)}, left out of that best: "
                    "the plain op cannot use them; the ops API's prepared objects run them)."
                    if prepared
                    else "."
                ),
                "",
            ]
            if dispatch and len(d)
            else []
        ),
        "| shape | dtype | verdict | best kprof | µs | best peer | µs | ratio | spread | % of copy "
        "| vs roofline | " + (f"{dispatch} / best | " if dispatch else "") + "why not measured |",
        "|---|---|---|---|---:|---|---:|---:|---:|---:|---:|" + ("---:|" if dispatch else "") + "---|",
    ]
    for r in t.itertuples():
        lines.append(
            f"| {r.shape} | {r.dtype} | {r.verdict} | {_cell(r.best_kprof) or '—'} | {_num(r.kprof_us)} | "
            f"{r.best_peer or '—'} | {_num(r.peer_us)} | {_num(r.ratio, 3)} | {_pct(r.spread)} | "
            f"{_num(r.pct_copy, 1)} | {_num(r.vs_roofline, 3)} | "
            + (f"{_num(r.dispatch_vs_best, 3)} | " if dispatch else "")
            + f"{_cell(r.why)} |"
        )
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return str(text or "").replace("|", "/").replace("\n", " ")


def _num(v: float, digits: int = 2) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _pct(v: float) -> str:
    return "—" if v is None or math.isnan(v) else f"{100 * v:.1f}%"
