"""The markdown report ``kprof profile`` prints at the end and stores with the run."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from kprof.envinfo import short_commit
from kprof.fmt import fmt_num, markdown_table
from kprof.fmt import number as _num
from kprof.metrics import METRIC_COLUMNS, TEXT_METRICS, headline_source
from kprof.registry import YARDSTICK_KINDS
from kprof.shapes import shape_key as _shape_key
from kprof.timing import PLACEMENT_NOTE_FRACTION

INTERPRETER_NOTICE = (
    "> **CPU interpreter run - correctness only.** No GPU was found, so the Triton versions ran in "
    "Triton's interpreter (`TRITON_INTERPRET=1`) on the CPU and the baselines ran in CPU PyTorch. "
    "Nothing here is a GPU timing and no timings are shown; run on a GPU machine for those."
)


def _spread_cell(r: Any, mode: str) -> str:
    """IQR/median of the ranked samples; for a cold-ranked case whose placements were further apart than
    :data:`~kprof.timing.PLACEMENT_NOTE_FRACTION`, that spread in brackets after it."""
    cell = f"{fmt_num(100 * r.noise, '{:.0f}')}%"
    placed = getattr(r, "cold_placement_spread", math.nan)
    if mode == "cold" and not pd.isna(placed) and placed > PLACEMENT_NOTE_FRACTION:
        cell += f" ({100 * placed:.0f}%)"
    return cell


def _txt(v: Any, limit: int = 100) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v)[:limit]


def with_speedup(metrics: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Add ``speedup`` = baseline time / time, per (shape, dtype); NaN when either is missing, or where the two
    times are not one measurement: cold (or warm) times from CUPTI against the CUDA-event fallback, whose
    overhead (about 3 us on an H100) and launch gaps are in one side only (``kprof diff`` compares neither)."""
    df = metrics.copy()
    by = timed_by(df)
    is_base = (df["provider"] == baseline) & df["ok"].astype(bool)
    keys = list(zip(df["shape"], df["dtype"]))
    base = {k: (t, b_by) for k, t, b_by, b in zip(keys, df["gpu_time_us"], by, is_base) if b}
    df["speedup"] = [
        (base[k][0] / t) if (k in base and base[k][1] == t_by and t and not pd.isna(t) and t > 0) else math.nan
        for k, t, t_by in zip(keys, df["gpu_time_us"], by)
    ]
    return df


def timed_by(df: pd.DataFrame) -> list[str]:
    """What timed each row's ranked time (:func:`kprof.metrics.headline_source`); "" where a store made before
    those columns holds none."""
    modes = df["timing_mode"] if "timing_mode" in df else pd.Series("", index=df.index)
    timers = df["timer"] if "timer" in df else pd.Series("", index=df.index)
    return [headline_source(_txt(m), _txt(t)) for m, t in zip(modes.tolist(), timers.tolist())]


def _closure_text(family: str | None, cfg: dict) -> str:
    """``kernels/F/ and the modules it imports (kernels/lib/ (4 files), kernels/rmsnorm/ (7 files))``."""
    files = (cfg.get("sources") or {}).get("files") or []
    groups: dict[str, int] = {}
    for f in files:
        parts = f.split("/")
        if len(parts) > 2 and parts[1] == family:
            continue
        key = f"{'/'.join(parts[:2])}/" if len(parts) > 2 else f
        groups[key] = groups.get(key, 0) + 1
    outside = ", ".join(k if k.endswith(".py") else f"{k} ({n} files)" for k, n in sorted(groups.items()))
    return f"kernels/{family}/" + (f" and the kernel modules it imports ({outside})" if outside else "")


def render(run: dict, metrics: pd.DataFrame, baseline: str = "torch_eager") -> str:
    dev = run.get("device") or {}
    versions = run.get("versions") or {}
    interp = run.get("mode") == "interpreter"
    counts = metrics["status"].value_counts().to_dict() if not metrics.empty else {}
    head = [
        f"# kprof · {run.get('family')} · run `{run.get('id')}`",
        "",
        f"- **device**: {dev.get('name', '?')}"
        + (
            f" (cc {dev.get('cc_major')}.{dev.get('cc_minor')}, {dev.get('sm_count')} SMs, driver "
            f"{dev.get('driver_version') or 'unknown'})"
            if dev.get("kind") == "cuda"
            else ""
        ),
        f"- **software**: torch {versions.get('torch', '?')}, triton {versions.get('triton', '?')}, "
        f"python {versions.get('python', '?')}"
        + (
            "; environment: " + ", ".join(f"`{k}={v}`" for k, v in sorted(versions["env"].items()))
            if versions.get("env")
            else ""
        ),
        f"- **git**: {short_commit(run.get('git_commit')).replace('?', 'unknown')}"
        f"{' (dirty)' if run.get('git_dirty') else ''}"
        f" · **profiler**: {run.get('profiler')} · **status**: {run.get('status')}",
        f"- **cases**: {len(metrics)} ({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))})",
    ]
    cfg = run.get("config") or {}
    if cfg.get("revision"):
        head.append(
            f"- **revision**: `{cfg['revision']}` = {short_commit(cfg.get('revision_commit'))} "
            f"({str(cfg.get('revision_subject') or '')[:80]}): {_closure_text(run.get('family'), cfg)} as at that "
            f"commit, "
            f"measured by the harness at {short_commit(cfg.get('harness_commit'))}"
            f"{' (dirty)' if cfg.get('harness_dirty') else ''}, interleaved with "
            f"{', '.join('`' + r + '`' for r in cfg.get('interleaved_revisions', []))}"
        )
    if run.get("profiler") not in (None, "none"):
        head.append(
            f"- **profiler**: {run.get('profiler')} — {cfg.get('profiler_reason', 'asked for')}"
            + (f"; {run['profiler_version']}" if run.get("profiler_version") else "")
            + (f"; {cfg['profile_repeats']} launches per case" if cfg.get("profile_repeats") else "")
        )
    if run.get("error"):
        head.append(f"- **error**: {str(run['error'])[:600]}")
    if run.get("ceiling_gbps"):
        method = (run.get("ceiling") or {}).get("method") or "1 GiB device-to-device copy, bytes read + written"
        head.append(
            f"- **copy ceiling**: {run['ceiling_gbps']:.0f} GB/s ({method}, measured in this run); % peak is against it"
        )
    peaks = (run.get("ceiling") or {}).get("tflops") or {}
    if peaks:
        head.append(
            "- **compute ceiling**: "
            + ", ".join(f"{d} {t:.0f} TFLOP/s" for d, t in peaks.items())
            + " (8192³ matrix product, measured in this run); the roofline columns use both ceilings"
        )
    if not interp:
        head += timing_lines(metrics)
    out = head + [""]
    if interp:
        out += [INTERPRETER_NOTICE, ""]
    if metrics.empty:
        return "\n".join(out + ["No cases were run."]) + "\n"

    df = with_speedup(metrics, baseline)
    for c in METRIC_COLUMNS:  # older stores / partial tables: absent metrics read as missing
        if c not in df:
            df[c] = pd.NA if c in TEXT_METRICS else math.nan
    shapes = sorted(df["shape"].unique(), key=_shape_key)
    for dtype in df["dtype"].unique():
        for shape in shapes:
            g = df[(df["shape"] == shape) & (df["dtype"] == dtype) & (df["status"] != "skipped")]
            if g.empty:
                continue
            out += [f"## {dtype} · {shape}", ""]
            out += [_interp_table(g) if interp else _gpu_table(g, baseline), ""]
    if run.get("notes"):
        out += (
            ["## Providers not run", ""]
            + [
                f"- `{line.split(':', 1)[0]}`:{line.split(':', 1)[1]}"
                for line in str(run["notes"]).splitlines()
                if ":" in line
            ]
            + [""]
        )
    skipped = df[df["status"] == "skipped"]
    if not skipped.empty:
        out += ["## Skipped", ""]
        reasons = skipped.groupby(["provider", "note"], dropna=False)["case"].count().reset_index()
        out += [f"- `{r.provider}`: {r.note} ({r.case} cases)" for r in reasons.itertuples()]
        out.append("")
    specs = df[df["config"].notna()].drop_duplicates(["provider", "shape", "dtype"])
    if not specs.empty:
        out += [
            "## Triton specialisations that ran",
            "",
            "| provider | shape | dtype | kernel | config | regs | local B | smem B | bound | % of roof |",
            "| :--- | :--- | :--- | :--- | :--- | ---: | ---: | ---: | :--- | ---: |",
        ]
        for r in specs.itertuples():
            out.append(
                f"| {r.provider} | {r.shape} | {r.dtype} | {r.main_kernel} | {r.config} | "
                f"{_num(r.registers_per_thread)} | {_num(r.local_bytes)} | {_num(r.shared_mem_bytes)} | "
                f"{r.bound if isinstance(r.bound, str) else '—'} | {_num(r.pct_roof, '.1f')} |"
            )
        out.append("")
    notes = df[(df["status"] == "ok") & df["note"].notna()]
    if not notes.empty:
        out += ["## Notes", ""] + [f"- `{r.case}`: {r.note}" for r in notes.itertuples()] + [""]
    if not interp:
        out += [
            "Times are medians of per-call samples of the mode each column names (definitions above); "
            "±: interquartile range / median of the ranked mode; in brackets, where ranked by cold time and over "
            f"{PLACEMENT_NOTE_FRACTION:.0%}, how far the case's cold medians at its placements in memory were apart "
            "((max - min) / median; see the notes). *launch*: launch call start to kernel start. "
            "*occ*: theoretical occupancy of the main kernel (calculator) / achieved (ncu counters, else "
            "Kineto's estimate). "
            + (WAVES_WORDS if _has(df, "waves") else "")
            + "*prof µs*: the main kernel's median duration as the profiler measured it. "
            "*DRAM/model*: DRAM bytes the counters measured per call / the family's bytes model. "
            "*err*: ‖out−ref‖/‖ref‖ against the float64 oracle. "
            + (WRITEBACK_WORDS if _has(df, "cold_writeback_us") else "")
            + f"*vs {baseline}*: its time / the row's; — where it did not pass, did not run, or was timed another "
            "way (CUPTI against the CUDA-event fallback: not one measurement).",
            "",
        ]
    return "\n".join(out)


def _status_cell(r: Any) -> str:
    return "**FAIL**" if r.status == "fail" else ("**ERROR**" if r.status == "error" else "ok")


def _has(g: pd.DataFrame, col: str) -> bool:
    return col in g and pd.to_numeric(g[col], errors="coerce").notna().any()


def timing_lines(metrics: pd.DataFrame) -> list[str]:
    """The report's statement of what its times mean: the ranked mode, every mode's definition, and
    which cases fell back to CUDA events."""
    from kprof.timing import DEFAULT_MODE, DEFAULT_MODE_WHY, EVENTS_DEFINITION, MODE_DEFINITIONS, MODES, SHOWN

    mode = _ranked_mode(metrics)
    lines = [
        f"- **timing mode**: `{mode}` ranks, and gives % peak, speedups and diff inputs"
        + (f" ({DEFAULT_MODE_WHY})" if mode == DEFAULT_MODE else "")
        + f"; multi-kernel calls show the {SHOWN} (their kernels' intervals merged: overlaps counted once, "
        "gaps between kernels not counted); span and sum are stored beside it (`cold_span_us`, `cold_sum_us`)"
    ]
    lines += [f"  - {MODE_DEFINITIONS[m]}" for m in MODES]
    fell = (
        metrics[metrics.get("timer", pd.Series(dtype=object)).astype(str) == "events"]
        if "timer" in metrics
        else metrics.iloc[:0]
    )
    if not fell.empty:
        lines.append(
            f"  - {EVENTS_DEFINITION} **{len(fell)} case(s) fell back to it** (column *timer*; reasons under Notes)."
        )
    return lines


def _ranked_mode(df: pd.DataFrame) -> str:
    from kprof.timing import DEFAULT_MODE

    if "timing_mode" in df:
        modes = df["timing_mode"].dropna().astype(str)
        if not modes.empty:
            return str(modes.mode().iloc[0])
    return DEFAULT_MODE


def _gpu_table(g: pd.DataFrame, baseline: str) -> str:
    valid = g[(g["status"] == "ok") & ~g["kind"].isin(YARDSTICK_KINDS)]
    counters = _has(g, "dram_vs_model")  # ncu: measured DRAM traffic and achieved occupancy
    mode = _ranked_mode(g)
    fallback = "timer" in g and (g["timer"].astype(str) == "events").any()
    warm = mode != "warm" and _has(g, "warm_us")
    left = mode == "cold" and _has(g, "cold_writeback_us")  # the write-back a cold call left in L2
    waves = _has(g, "waves")  # the main kernel's grid over what the GPU holds at once (the profiler's launch table)
    best = valid["gpu_time_us"].min() if not valid.empty else math.nan
    rows = []
    for r in g.sort_values("gpu_time_us", na_position="last").itertuples():
        ok = r.status == "ok"
        name = f"**{r.provider}**" if ok and r.gpu_time_us == best and r.kind not in YARDSTICK_KINDS else r.provider
        if r.kind in YARDSTICK_KINDS:
            name += f" ({r.kind})"
        achieved = r.occupancy_achieved_pct if not pd.isna(r.occupancy_achieved_pct) else r.occupancy_est_pct
        occ = f"{fmt_num(r.occupancy_theoretical_pct, '{:.0f}')}/{fmt_num(achieved, '{:.0f}')}"
        extra = [fmt_num(r.prof_kernel_us, "{:.1f}") if ok else "—"]
        if counters:
            extra.append(fmt_num(r.dram_vs_model, "{:.2f}") if ok else "—")
        rows.append(
            [
                name,
                _status_cell(r) if not ok else "ok",
                fmt_num(r.gpu_time_us, "{:.1f}") if ok else "—",
                _spread_cell(r, mode) if ok else "—",
                (fmt_num(r.gbps, "{:.0f}") + (_left_mark(r) if left else "")) if ok else "—",
                fmt_num(r.pct_peak_bw, "{:.1f}") if ok else "—",
                (fmt_num(r.speedup, "{:.2f}") + "×") if ok and not pd.isna(r.speedup) else "—",
                *([fmt_num(r.cold_writeback_us, "{:.1f}") if ok else "—"] if left else []),
                *([fmt_num(r.warm_us, "{:.1f}") if ok else "—"] if warm else []),
                fmt_num(r.graph_time_us, "{:.1f}") if ok else "—",
                fmt_num(r.host_time_us, "{:.1f}") if ok else "—",
                *([_txt(r.timer) or "—"] if fallback else []),
                fmt_num(r.launch_latency_us, "{:.1f}") if ok else "—",
                fmt_num(r.kernels_per_call, "{:.0f}") if ok else "—",
                occ if ok else "—",
                *([fmt_num(r.waves, "{:.2f}") if ok else "—"] if waves else []),
                *extra,
                fmt_num(r.max_rel_err, "{:.1e}"),
                _txt(r.note, 80) if not ok else "",
            ]
        )
    headers = (
        ["provider", "status", f"{mode} µs", "±", "GB/s", "% peak", f"vs {baseline}"]
        + (["+wb µs"] if left else [])
        + (["warm µs"] if warm else [])
        + ["graph µs", "host µs"]
        + (["timer"] if fallback else [])
        + ["launch µs", "kernels", "occ %"]
        + (["waves"] if waves else [])
        + ["prof µs"]
        + (["DRAM/model"] if counters else [])
        + ["err", "why"]
    )
    align = "ll" + "r" * (len(headers) - 3) + "l"
    return markdown_table(headers, rows, align)


# A cold call that left this share of its cold time or more as write-back in L2 gets its GB/s marked: the bytes
# model counts its writes as moved, and up to ~30 MB of them (an H200) were still in L2 when it ended.
LEFT_MARK_FRACTION = 0.10


WRITEBACK_WORDS = (
    "*+wb µs*: the write-back a cold call left dirty in L2 (the next kernel pays it; the flush after the call "
    "against a flush after a flush), not in the cold time; † after GB/s: that was "
    f"{LEFT_MARK_FRACTION:.0%} of the cold time or more, so GB/s and % peak count bytes still in L2 as moved. "
)

WAVES_WORDS = (
    "*waves*: the main kernel's blocks / the blocks the GPU holds at once (its theoretical occupancy x SMs; ncu's "
    "Waves Per SM): past a whole number, a last wave leaves SMs idle; over 1 for a persistent kernel (a fixed number "
    "of programs an SM that take their work by ticket), it launched more programs than fit at once. "
)


def _left_mark(r: Any) -> str:
    """A dagger where the cold call left at least :data:`LEFT_MARK_FRACTION` of its time as write-back in L2."""
    left, cold = (pd.to_numeric(getattr(r, c, None), errors="coerce") for c in ("cold_writeback_us", "cold_us"))
    return "†" if left >= LEFT_MARK_FRACTION * cold > 0 else ""


def _interp_table(g: pd.DataFrame) -> str:
    rows = [
        [
            r.provider,
            "yardstick" if r.kind in YARDSTICK_KINDS else _status_cell(r),
            fmt_num(r.max_rel_err, "{:.1e}"),
            fmt_num(r.max_abs_err, "{:.1e}"),
            f"{r.kind}: not the family's function, not checked" if r.kind in YARDSTICK_KINDS else _txt(r.note),
        ]
        for r in g.itertuples()
    ]
    return markdown_table(["provider", "correct", "rel err", "max abs err", "note"], rows, "llrrl")
