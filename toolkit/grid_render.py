"""The grid table as a reader gets it: the markdown of :func:`kprof.grid.grid_table`'s rows (title, header lines
naming the runs, device, timing modes, targets and the ops API's ops, then one row per point) and the counts a
summary gives (:func:`summarize`, :func:`target_counts`). Reads the table only; what a point's verdict is, and why,
is decided in :mod:`kprof.grid`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from kprof.grid import REACH, SMALL_CALL_US, TIE, WIN


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


def dispatch_counts(table: pd.DataFrame, column: str = "dispatch") -> tuple[int, int, int]:
    """(within the tie band, beyond it by more than the two cases' spread, neither: not judged) over the points
    whose dispatch (``column="prepared_op"``: the prepared object) was compared. A ratio a little past the band,
    inside how far two cases of the run moved, is no more a miss than a loss inside it is (``kprof grid``'s
    verdicts)."""
    within, beyond = _band(table, column)
    known = table.get(f"{column}_vs_best", pd.Series(dtype=float)).notna()
    return int(within.sum()), int(beyond.sum()), int((known & ~within & ~beyond).sum())


def _band(table: pd.DataFrame, column: str) -> tuple[pd.Series, pd.Series]:
    """(within the tie band, beyond it by more than the two cases' spread) per point of ``column``'s ratio to the
    best version (False where it was not compared)."""
    d = table.get(f"{column}_vs_best", pd.Series(dtype=float))
    spread = table.get(f"{column}_spread", pd.Series(0.0, index=table.index)).reindex(d.index).fillna(0.0)
    known, judged = (
        d.notna(),
        spread < math.inf,
    )  # infinite: timed unlike the best (:func:`kprof.grid._dispatch_vs_best`)
    return known & judged & (d <= TIE), known & judged & (d > TIE * (1 + spread))


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


def target_counts(table: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Per target: (points that meet it, points it applies to with a figure to judge)."""
    if "target" not in table:
        return {}
    judged = table[(table["target"] != "") & table["target_met"].notna()]
    return {
        label: (int(g["target_met"].astype(bool).sum()), len(g)) for label, g in judged.groupby("target", sort=True)
    }


def render(
    table: pd.DataFrame,
    runs: Sequence[str],
    family: str,
    dispatch: str | None = None,
    prepared: Sequence[str] = (),
    codes: Sequence[str] = (),
    ncu_other: Sequence[str] = (),
    ncu_untold: Sequence[str] = (),
    prepared_op: str | None = None,
    device: str | None = None,
) -> str:
    """Markdown: the summary line, then one row per point, losses first. ``codes``: each run's kernel code
    (:func:`kprof.variance.code_id`), named in the title; ``ncu_other``: the ``--ncu`` runs of other kernel code
    than the timed runs, said under it; ``ncu_untold``: those whose code cannot be compared (a run recorded no
    source hashes), said too; ``prepared_op``: the provider that runs the ops API's prepared object, its time over
    the best kprof version's said and shown per point where the runs timed it; ``device``: the runs' device, named in
    the title (` · device NAME`, which a reader such as the scoreboard finds there)."""
    s = summarize(table)
    counts = target_counts(table)
    targeted = table.get("target", pd.Series(dtype=object)) != ""
    unjudged = int((targeted & table.get("target_met", pd.Series(dtype=object)).isna()).sum())
    shown = bool(targeted.any())  # target columns wherever a point has one, judged or not
    d = table.get("dispatch_vs_best", pd.Series(dtype=float)).dropna()
    within, beyond, unjudged_d = dispatch_counts(table)
    p = table.get("prepared_op_vs_best", pd.Series(dtype=float)).dropna()
    silent_d = _silent(table, "dispatch")
    # the column only where the runs timed the object: at some point, or failed where they did
    held = prepared_op if prepared_op and (len(p) or _silent(table, "prepared_op").any()) else None
    hb = table.get("host_bound", pd.Series(False, index=table.index)).fillna(False).astype(bool)
    host_gpu = "host_provider_us" if "host_provider_us" in table else "kprof_us"
    launched_words = (
        f"the ops API's version's (`{dispatch}`; the best kprof version's where the run lacks it)"
        if dispatch
        else "the best kprof version's"
    )
    order = {"loss": 0, "uncertain": 1, "tie": 2, "win": 3}
    t = table.assign(_o=table["verdict"].map(order).fillna(4)).sort_values(["_o", "ratio"], ascending=[True, False])
    known = list(dict.fromkeys(c for c in codes if c))
    if len(known) > 1:  # runs of other code at other points: which run is which
        known = [f"{c} ({r})" for r, c in zip(runs, codes, strict=False) if c]
    code = f" · kernel code {', '.join(known)}" if known else ""
    lines = [
        f"# kprof grid · {family} · runs {', '.join(runs)}{_device_said(device)}{code}",
        "",
        f"{s.points} points: **{s.wins} win, {s.ties} tie, {s.losses} loss**, {s.uncertain} uncertain "
        f"(a win or a loss within the cases' own spread, within the ratio's run-to-run floor under "
        f"{SMALL_CALL_US:.0f} µs, within how far the same code moved between two cases of the run, or runs of the "
        "point that disagree), "
        f"{s.no_peer} without a peer, {s.not_measured} not measured "
        f"(reason in the last column). Times: {_modes_said(table)}, µs. "
        f"win: best kprof <= {WIN} x best peer; tie: up to {TIE} x.",
        "",
        *(
            [
                f"ncu: run {', '.join(ncu_other)} ran other kernel code than the timed runs (their recorded source "
                "hashes differ): where the why column quotes it, it says so, and what it measured is of that code; "
                "profile the points with ncu at the timed code to read them for it.",
                "",
            ]
            if ncu_other
            else []
        ),
        *(
            [
                f"ncu: whether run {', '.join(ncu_untold)} ran the timed runs' kernel code cannot be told (a run "
                "recorded no source hashes): its readings may be of other code.",
                "",
            ]
            if ncu_untold
            else []
        ),
        *(
            [
                f"Dispatch (`{dispatch}`, what `kprof.kernels.ops` runs): within {TIE} x the best kprof version at "
                f"{within} of {len(d)} points"
                + (f", beyond it at {beyond}" if beyond else "")
                + (
                    f", not judged at {unjudged_d} (past {TIE} x by less than the two cases moved, or timed unlike "
                    "the best: why column)"
                    if unjudged_d
                    else ""
                )
                + _silent_note(table, "dispatch")
                + f"; `{dispatch} / best` is its time over the best's, 1.000 where it ran the best's code"
                + (
                    f" (versions on prepared weights, {', '.join(f'`{p}`' for p in prepared)}, left out of that best: "
                    "the plain op cannot use them; the ops API's prepared objects run them)."
                    if prepared
                    else "."
                ),
                "",
            ]
            if dispatch and (len(d) or silent_d.any())
            else []
        ),
        *([_prepared_op_line(table, held, len(p)), ""] if held else []),
        *(
            [
                f"Host: at {int(hb.sum())} of {len(hb)} points {launched_words} host time per call "
                f"({_range(table.loc[hb, 'kprof_host_us'])} µs) exceeds its GPU time "
                f"({_range(table.loc[hb, host_gpu])} µs): a caller that launches it without a CUDA graph and without "
                "GPU work queued ahead waits for the host there, whatever the verdict (why column).",
                "",
            ]
            if hb.any()
            else []
        ),
        *(
            [
                "Targets: "
                + "; ".join(
                    f"{label}: met at {met} of {n} points{_reach_note(table, label)}"
                    for label, (met, n) in counts.items()
                )
                + (";" if counts and unjudged else "")
                + (f" {unjudged} point(s) with a target not judged (why in the last column)" if unjudged else "")
                + ".",
                "",
            ]
            if shown
            else []
        ),
        "| shape | dtype | verdict | best kprof | µs | best peer | µs | ratio | spread | % of copy "
        "| vs roofline | "
        + (f"{dispatch} / best | " if dispatch else "")
        + (f"{held} / best | " if held else "")
        + ("target | met | " if shown else "")
        + "why (not measured; what a loss or missed target measured; host-bound) |",
        "|---|---|---|---|---:|---|---:|---:|---:|---:|---:|"
        + ("---:|" if dispatch else "")
        + ("---:|" if held else "")
        + ("---|---|" if shown else "")
        + "---|",
    ]
    for r in t.itertuples():
        lines.append(
            f"| {r.shape} | {r.dtype} | {r.verdict} | {_cell(r.best_kprof) or '—'} | {_num(r.kprof_us)} | "
            f"{_cell(r.best_peer) or '—'} | {_num(r.peer_us)} | {_num(r.ratio, 3)} | {_pct(r.spread)} | "
            f"{_num(r.pct_copy, 1)} | {_num(r.vs_roofline, 3)} | "
            + (f"{_num(r.dispatch_vs_best, 3)} | " if dispatch else "")
            + (f"{_num(r.prepared_op_vs_best, 3)} | " if held else "")
            + (f"{_cell(r.target) or '—'} | {_yes(r.target_met)} | " if shown else "")
            + f"{_cell(r.why)} |"
        )
    return "\n".join(lines) + "\n"


def _device_said(device: str | None) -> str:
    """The title's `` · device NAME``; "" without a device. A reader takes NAME up to the next `` · `` or the line's
    end, so a name holding one (or a line break) has it made a space: the title stays one line, its parts apart."""
    if device is None:
        return ""
    name = " ".join(word for word in str(device).split() if word != "·")  # every " · ", and "· ·", made one space
    return f" · device {name}" if name else ""


def _modes_said(table: pd.DataFrame) -> str:
    """The summary's words for the timing modes of the points' best versions: one, several (each with its count, the
    points of all but the commonest named: two points of other modes differ by the modes too), or none declared (runs
    from before kprof declared modes)."""
    modes = table.get("timing_mode", pd.Series(dtype=object)).dropna()
    counts = modes.value_counts()
    if counts.empty:
        return "no declared timing mode (runs from before modes were declared)"
    if len(counts) == 1:
        return f"`{counts.index[0]}` mode"
    said = []
    for i, (mode, n) in enumerate(counts.items()):
        at = table.loc[modes.index[modes == mode]]
        where = ", ".join(f"{r.shape} {r.dtype}" for r in at.head(SILENT_NAMED).itertuples())
        more = f" and {n - SILENT_NAMED} more" if n > SILENT_NAMED else ""
        said.append(f"`{mode}` at {n} points" + (f" ({where}{more})" if i else ""))
    return "modes differ between points: " + ", ".join(said)


def _prepared_op_line(table: pd.DataFrame, provider: str, compared: int) -> str:
    """The summary's words for the prepared object: at how many points its own choice was within the tie band of
    the best kprof version, and where it was not."""
    within, beyond, unjudged = dispatch_counts(table, "prepared_op")
    missed = table[_band(table, "prepared_op")[1]]
    where = ", ".join(f"{r.shape} {r.dtype} ({r.prepared_op_vs_best:.3f}x)" for r in missed.itertuples())
    host = table.get("prepared_op_host_us", pd.Series(math.nan, index=table.index))
    gpu = table.get("prepared_op_gpu_us", pd.Series(math.nan, index=table.index))
    bound = host > gpu  # NaN compares False: a case without a host time is not called host-bound
    return (
        f"Prepared object (`{provider}`, what `kprof.kernels.ops`'s prepared object runs there, its own choice among "
        f"the versions on prepared weights and the plain op): within {TIE} x the best kprof version at {within} of "
        f"{compared} points"
        + (f", beyond it at {beyond}: {where}" if beyond else "")
        + (
            f", not judged at {unjudged} (past {TIE} x by less than the two cases moved, or timed unlike the best: why "
            "column)"
            if unjudged
            else ""
        )
        + _silent_note(table, "prepared_op")
        + f"; `{provider} / best` is its time over the best's, 1.000 where it ran the best's code."
        + (
            f" Its host time per call exceeds its GPU time at {int(bound.sum())} of them ({_range(host[bound])} µs "
            f"against {_range(gpu[bound])} µs): called outside a CUDA graph, with no GPU work queued ahead, the object "
            "waits for the host there."
            if bound.any()
            else ""
        )
    )


SILENT_NAMED = 8  # points named where the dispatch or the prepared object gave no time; the why column has them all


def _silent(table: pd.DataFrame, column: str) -> pd.Series:
    """Per point: ``column``'s op (``dispatch`` or ``prepared_op``) gave no time there (``{column}_silent``)."""
    flags = table.get(f"{column}_silent", pd.Series(False, index=table.index))
    return flags.astype(object).fillna(False).astype(bool)


def _silent_note(table: pd.DataFrame, column: str) -> str:
    """The summary's words for the points where ``column``'s op gave no time (``, no time from it at K of the table's
    N points (...)``), which its within / beyond count leaves out; "" where it gave one at every point."""
    gone = table[_silent(table, column)]
    if gone.empty:
        return ""
    where = ", ".join(f"{r.shape} {r.dtype}" for r in gone.head(SILENT_NAMED).itertuples())
    more = f" and {len(gone) - SILENT_NAMED} more" if len(gone) > SILENT_NAMED else ""
    return (
        f", no time from it at {len(gone)} of the table's {len(table)} points ({where}{more}; why column), left out "
        "of that count"
    )


def _reach_note(table: pd.DataFrame, label: str) -> str:
    """`` (of the misses, by a floor raced beside the yardstick: K out of reach, ...)`` where a floor judged a miss of
    this target (``target_reach``), else ``""``."""
    reach = table.loc[table["target"] == label, "target_reach"] if "target_reach" in table else pd.Series(dtype=object)
    said = [f"{int((reach == r).sum())} {r}" for r in REACH if (reach == r).any()]
    return f" (of the misses, by a floor raced beside the yardstick: {', '.join(said)})" if said else ""


def _range(values: pd.Series) -> str:
    lo, hi = float(values.min()), float(values.max())
    return f"{lo:.1f}" if lo == hi else f"{lo:.1f}-{hi:.1f}"


def _cell(text: str | None) -> str:
    """A text cell; "" for None or a pandas gap (NaN, where a table's rows lack the column)."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ""
    return str(text).replace("|", "/").replace("\n", " ")


def _num(v: float, digits: int = 2) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _pct(v: float) -> str:
    return "—" if v is None or math.isnan(v) else f"{100 * v:.1f}%"


def _yes(met: object) -> str:
    return "—" if met is None or (isinstance(met, float) and math.isnan(met)) else ("yes" if met else "**no**")
