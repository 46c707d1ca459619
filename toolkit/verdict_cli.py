"""What ``kprof diff`` and ``kprof noise`` print and write (the command definitions stay in ``kprof.cli``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kprof import diff as d
from kprof import variance
from kprof.safe_text import for_terminal

_COLOUR = {
    "SLOWER": "red",
    "FASTER": "green",
    "SAME": "",
    "UNCERTAIN": "yellow",
    "BROKEN": "red",
    "STILL-BROKEN": "red",
    "ERR-GREW": "yellow",
    "FIXED": "green",
    "SAME-CORRECT": "",
    "NOT-CHECKED": "yellow",
}


def _txt(value: Any, width: int) -> str:
    """Text from a trace or a run (kernel names, case ids, error messages) as a table cell: cut to ``width``,
    then escaped, so ``kern[/]`` or a terminal escape sequence in a kernel name prints as the text it is."""
    return for_terminal(str(value)[:width])


def _v(verdict: str) -> str:
    c = _COLOUR.get(verdict, "")
    return f"[{c}]{verdict}[/{c}]" if c else verdict


def _f(x: Any, spec: str) -> str:
    return "—" if x is None or (isinstance(x, float) and x != x) else format(x, spec)


def short_variance(text: str) -> str:
    """The variance label without its provenance (the markdown and JSON keep the whole sentence)."""
    head = str(text).split(" (")[0]
    if head.startswith("within-run"):
        return head + " (interleaved)"
    return head + (" (calibrated)" if head.startswith("run-to-run") else " (uncalibrated)")


def diff_files(
    a: str, b: str, fmt: str | None, rule: d.DiffRule, markdown: Path | None, json_out: Path | None, console: Console
) -> dict[str, int]:
    """Two trace files: print and write the trace diff; the verdict counts."""
    from kprof.profilers import parse_trace
    from kprof.trace_diff import diff_traces, to_json, to_markdown

    res = diff_traces(parse_trace(Path(a), fmt), parse_trace(Path(b), fmt), rule)
    t = Table(
        "case",
        "kernel",
        "launch",
        "A µs",
        "B µs",
        "B/A",
        "95% interval",
        "n A/B",
        "verdict",
        "why",
        title=f"{a} -> {b}",
    )
    for r in res.table.itertuples():
        t.add_row(
            _txt(r.case, 45),
            _txt(r.kernel, 45),
            _txt(r.launch, 40),
            _f(r.median_a, ".2f"),
            _f(r.median_b, ".2f"),
            _f(r.ratio, ".3f"),
            f"{_f(r.ci_lo, '.3f')}-{_f(r.ci_hi, '.3f')}",
            f"{r.n_a}/{r.n_b}",
            _v(r.verdict),
            _txt(r.why, 70),
        )
    console.print(t)
    for label, df in (("only in A", res.only_in_a), ("only in B", res.only_in_b)):
        for r in df.head(20).itertuples(index=False):
            console.print(
                f"{label}: {' · '.join(_txt(v, 60) for v in r[:-2])} ({r.launches} launches, {r.total_us:.1f} µs)"
            )
        if len(df) > 20:
            console.print(f"{label}: ... {len(df) - 20} more (--markdown FILE lists them all)")
    for n in res.notes:
        console.print(f"note: {n}")
    if markdown:
        markdown.write_text(to_markdown(res, a, b, rule))
    if json_out:
        json_out.write_text(json.dumps(to_json(res), indent=1))
    return res.counts


def diff_stored(
    store: Any,
    a: str,
    b: str,
    rule: d.DiffRule,
    kind: str,
    markdown: Path | None,
    json_out: Path | None,
    console: Console,
    err_console: Console,
) -> d.DiffResult:
    """Two stored runs: print timings and correctness verdicts, write markdown/JSON; the result."""
    res = d.diff_runs(store, a, b, rule, kind=kind)
    for w in res.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {w}")
    console.print(f"comparison: {d._COMPARISON_NOTE.get(res.comparison, res.comparison)}")
    if not res.cases.empty:
        t = Table(
            "case",
            "A µs",
            "B µs",
            "B/A",
            "95% interval",
            "p",
            "verdict",
            "variance accounted for",
            "kernel changes / why",
            title=f"{res.a['id']} -> {res.b['id']}",
        )
        for r in res.table().itertuples():
            t.add_row(
                _txt(r.case, 60),
                _f(r.median_a, ".2f"),
                _f(r.median_b, ".2f"),
                _f(r.ratio, ".3f"),
                f"{_f(r.ci_lo, '.3f')}-{_f(r.ci_hi, '.3f')}",
                _f(r.p_value, ".2g"),
                _v(r.verdict),
                short_variance(r.variance),
                _txt("; ".join(x for x in (r.why if r.verdict == "UNCERTAIN" else "", r.changes) if x), 110),
            )
        console.print(t)
        for text in sorted(set(res.cases["variance"]))[:3]:
            console.print(f"variance: {text}")
    shown = res.correctness
    if not res.cases.empty:  # timings shown: list only what is not simply still correct
        shown = shown[shown["verdict"] != "SAME-CORRECT"]
    if not shown.empty:
        t = Table("case", "status A -> B", "rel err A", "rel err B", "tolerance", "verdict", "why", title="correctness")
        for r in shown.itertuples():
            t.add_row(
                _txt(r.case, 60),
                f"{r.status_a} -> {r.status_b}",
                _f(r.rel_err_a, ".2e"),
                _f(r.rel_err_b, ".2e"),
                _f(r.tolerance, ".0e"),
                _v(r.verdict),
                _txt(r.why, 90),
            )
        console.print(t)
    if res.not_compared:  # the verdicts above say nothing of these
        console.print(res.not_compared)
    cc = res.correctness_counts
    console.print("correctness: " + ", ".join(f"{n} {v.lower()}" for v, n in cc.items() if n))
    for case in res.broken:
        err_console.print(f"[red]correctness regression:[/red] {for_terminal(case)} is correct in A and not in B")
    for case in res.new_failures:
        err_console.print(f"[red]wrong in B:[/red] {for_terminal(case)} fails in B and was never wrong in A")
    for case in res.unchecked_in_b:
        err_console.print(f"[red]not checked in B:[/red] {for_terminal(case)}")
    if markdown:
        markdown.write_text(d.to_markdown(res))
    if json_out:
        json_out.write_text(json.dumps(d.to_json(res), indent=1))
    return res


def noise(store: Any, refs: list[str], kind: str, json_out: Path | None, console: Console) -> variance.Calibration:
    cal = variance.calibrate(store, refs, kind)
    conf = d.DiffRule().confidence
    t = Table(
        "size class",
        "cases",
        "df",
        "σ run (pooled)",
        "σ run (95% upper)",
        "floor, pair of runs",
        title=f"run-to-run noise on {cal.device} from {len(cal.runs)} runs"
        + ("" if cal.kind == "gpu" else f", {cal.kind} samples"),
    )
    for r in cal.classes.itertuples():
        fl = variance.Floor(float(r.sigma_upper), "calibrated")
        t.add_row(
            r.size_class,
            str(r.cases),
            str(r.df),
            f"{100 * r.sigma:.2f}%",
            f"{100 * r.sigma_upper:.2f}%",
            f"{100 * fl.half_width(conf):.1f}%",
        )
    console.print(t)
    worst = cal.cases.sort_values("sigma", ascending=False).head(10)
    t = Table("case", "median µs", "runs", "σ run", "largest spread", title="cases that moved most between runs")
    for r in worst.itertuples():
        t.add_row(r.key, f"{r.median_us:.2f}", str(r.runs), f"{100 * r.sigma:.2f}%", f"{100 * r.max_pair_dev:.1f}%")
    console.print(t)
    console.print(
        f"stored in {store.path}: later `kprof diff --samples {cal.kind}` of separate runs on {cal.device} use it "
        "(floor = the change two runs of unchanged code reach at 95%)"
    )
    if json_out:
        json_out.write_text(
            json.dumps(
                {
                    "device": cal.device,
                    "samples": cal.kind,
                    "created_at": cal.created_at,
                    "runs": list(cal.runs),
                    "classes": cal.classes.to_dict("records"),
                    "cases": cal.cases.to_dict("records"),
                },
                indent=1,
                default=float,
            )
        )
    return cal


def fail_message(
    counts: dict[str, int],
    broken: list[str],
    unmeasured: str = "",
    new_failures: Sequence[str] = (),
    unchecked: Sequence[str] = (),
) -> str:
    """The line ``--fail-on-regression`` prints when it fails ("" when it passes), naming each cause for what it is:
    a regression (cases SLOWER, correctness regressions), cases wrong in B that A never had wrong (a version added
    wrong), kprof's versions correct in A that B skipped (``DiffResult.unchecked_in_b``: B checked nothing to
    pass), or a run B that cannot clear cases it never measured (``DiffResult.unmeasured``). An unfinished B is not
    a regression: called one, the line sent readers after a slowdown that was never measured."""
    found = fail_reasons(counts, broken)
    parts = [f"regression: {'; '.join(found)}"] if found else []
    if new_failures:
        parts.append(f"wrong in B: {len(new_failures)} case(s) new in B or skipped in A (first: {new_failures[0]})")
    if unchecked:
        parts.append(
            f"not checked in B: {len(unchecked)} case(s) of kprof's versions correct in A were skipped in B "
            f"(first: {unchecked[0]})"
        )
    if unmeasured:
        parts.append(f"not cleared: {unmeasured}")  # what B never measured, it cannot pass
    return f"kprof diff: {'; '.join(parts)}" if parts else ""


def fail_reasons(counts: dict[str, int], broken: list[str]) -> list[str]:
    """The regressions ``--fail-on-regression`` fails on: cases SLOWER, cases correct in A and not in B."""
    out = []
    if counts.get("SLOWER", 0):
        out.append(f"{counts['SLOWER']} case(s) SLOWER")
    if broken:
        out.append(f"{len(broken)} correctness regression(s)")
    return out
