"""``kprof guide RUN``: a sweep turned into a block-size selection table (the classic block-size exercise, measured).

Plain functions, metrics in, DataFrame or text out. For each shape bucket (shape x dtype) of a sweep run:
the fastest correct configuration, how much slower the runner-up and the version's own default choice are,
and the compiler's view of the winner (registers, spills, shared memory, theoretical occupancy), so the
table says *why* as well as *which*.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from kprof.errors import KprofError
from kprof.fmt import cell as _fmt
from kprof.store import RunPlan

GUIDE_COLUMNS = (
    "shape",
    "dtype",
    "best",
    "best_us",
    "best_pct_roof",
    "bound",
    "runner_up",
    "runner_up_slower_pct",
    "default",
    "default_slower_pct",
    "worst_slower_pct",
    "configs",
    "skipped",
    "failed",
    "not_run",
    "registers",
    "local_bytes",
    "shared_mem_bytes",
    "occupancy_pct",
    "occupancy_limiter",
)


def _params(row: pd.Series) -> dict:
    text = row.get("params")
    if isinstance(text, str) and text:
        return json.loads(text)
    return {}


def _short(row: pd.Series) -> str:
    p = _params(row)
    return " ".join(f"{k}={v}" for k, v in p.items()) if p else str(row.get("config") or row["provider"])


def guide_table(metrics: pd.DataFrame, plan: RunPlan | None = None) -> pd.DataFrame:
    """One row per (shape, dtype) of a sweep run's metrics (see :data:`GUIDE_COLUMNS`).

    The default is the version run without pinned parameters (its own choice); its actual configuration,
    as recorded at launch, is shown. Times are GPU medians; with no GPU times (an interpreter run) the
    table ranks nothing and says so through empty ``best`` cells. ``plan``: what the run set out to measure;
    ``not_run`` counts the planned cases of a bucket that did not run (a run cut at its budget), whose ``best`` is
    then the fastest of those measured, and planned buckets with no case get a row of their own."""
    if metrics.empty:
        raise KprofError(
            "the run has no cases; a guide needs a sweep run (`kprof sweep FAMILY --version V --param ...`)"
        )
    has_params = metrics["params"].notna().any() if "params" in metrics else False
    if not has_params:
        raise KprofError(
            "this run is not a sweep (no case has pinned meta-parameters); "
            "make one with `kprof sweep FAMILY --version V --param NAME=v1,v2`"
        )
    rows = []
    for (shape, dtype), g in metrics.groupby(["shape", "dtype"], sort=False):
        swept = g[g["params"].notna()]
        default = g[g["params"].isna() & (g["kind"] == "triton")]
        ok = swept[(swept["status"] == "ok") & swept["gpu_time_us"].notna()].sort_values("gpu_time_us")
        row: dict = {
            "shape": shape,
            "dtype": dtype,
            "configs": len(swept),
            "skipped": int((swept["status"] == "skipped").sum()),
            "failed": int(swept["status"].isin(["fail", "error"]).sum()),
            "not_run": len(plan.not_run(g["provider"])) if plan else 0,
        }
        if not default.empty:
            d = default.iloc[0]
            row["default"] = str(d.get("config") or d["provider"])
        if not ok.empty:
            best = ok.iloc[0]
            t0 = float(best["gpu_time_us"])
            roof = best.get("pct_roof")
            row.update(
                best=_short(best),
                best_us=t0,
                bound=best.get("bound"),
                best_pct_roof=roof if pd.notna(roof) else best.get("pct_peak_bw"),
                registers=best.get("registers_per_thread"),
                local_bytes=best.get("local_bytes"),
                shared_mem_bytes=best.get("shared_mem_bytes"),
                occupancy_pct=best.get("occupancy_theoretical_pct"),
                occupancy_limiter=best.get("occupancy_limiter"),
            )
            if len(ok) > 1:
                row["runner_up"] = _short(ok.iloc[1])
                row["runner_up_slower_pct"] = 100.0 * (float(ok.iloc[1]["gpu_time_us"]) / t0 - 1)
            row["worst_slower_pct"] = 100.0 * (float(ok.iloc[-1]["gpu_time_us"]) / t0 - 1)
            if not default.empty and default.iloc[0]["status"] == "ok" and pd.notna(default.iloc[0]["gpu_time_us"]):
                row["default_slower_pct"] = 100.0 * (float(default.iloc[0]["gpu_time_us"]) / t0 - 1)
        rows.append(row)
    for shape, dtype in plan.unreached((r["shape"], r["dtype"]) for r in rows) if plan else ():  # the run ended first
        rows.append({"shape": shape, "dtype": dtype, "configs": 0, "skipped": 0, "failed": 0,
                     "not_run": len(plan.providers)})  # fmt: skip
    return pd.DataFrame(rows, columns=list(GUIDE_COLUMNS))


def swept_params(metrics: pd.DataFrame) -> dict[str, list]:
    """The meta-parameters a sweep run varied, with their values (from the cases' pinned ``params``)."""
    values: dict[str, set] = {}
    for text in metrics["params"].dropna() if "params" in metrics else []:
        for k, v in json.loads(text).items():
            values.setdefault(k, set()).add(v)
    return {k: sorted(v) for k, v in values.items()}


def sweep_grid(
    metrics: pd.DataFrame, shape: str, dtype: str, x: str, y: str, value: str = "gpu_time_us"
) -> pd.DataFrame:
    """One cell per (x, y) pair of meta-parameter values for a shape: the best correct configuration among
    those sharing that pair (the other parameters free), with its time, % of roof, resources and config;
    pairs where nothing ran keep the reason of one skipped configuration. ``value`` is what ranks."""
    g = metrics[(metrics["shape"] == shape) & (metrics["dtype"] == dtype) & metrics["params"].notna()].copy()
    if g.empty:
        return pd.DataFrame(columns=[x, y, value, "config", "status", "note"])
    p = [json.loads(t) for t in g["params"]]
    g[x] = [d.get(x) for d in p]
    g[y] = [d.get(y) for d in p]
    g["params_text"] = [" ".join(f"{k}={v}" for k, v in d.items()) for d in p]
    ok = g[(g["status"] == "ok") & g[value].notna()]
    higher_better = value in ("pct_roof", "pct_peak_bw", "gbps", "tflops")
    best = ok.sort_values(value, ascending=not higher_better).groupby([x, y], as_index=False).first()
    rest = g[~g.set_index([x, y]).index.isin(best.set_index([x, y]).index)].groupby([x, y], as_index=False).first()
    cols = [
        x,
        y,
        value,
        "gpu_time_us",
        "pct_roof",
        "registers_per_thread",
        "local_bytes",
        "shared_mem_bytes",
        "occupancy_theoretical_pct",
        "occupancy_achieved_pct",
        "params_text",
        "status",
        "note",
    ]
    out = pd.concat([best, rest], ignore_index=True)
    return out[[c for c in dict.fromkeys(cols) if c in out.columns]]


def configs_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Every configuration of a sweep with its verdict, time and compiler resources, fastest first."""
    df = metrics.copy()
    df["params_text"] = [_short(r) if _params(r) else f"(default) {_short(r)}" for _, r in df.iterrows()]
    df["sort_time"] = df["gpu_time_us"].fillna(math.inf)
    df = df.sort_values(["shape", "dtype", "sort_time"], kind="stable")
    cols = [
        "shape",
        "dtype",
        "params_text",
        "config",
        "status",
        "note",
        "gpu_time_us",
        "pct_roof",
        "registers_per_thread",
        "local_bytes",
        "shared_mem_bytes",
        "occupancy_theoretical_pct",
        "occupancy_achieved_pct",
    ]
    return df[[c for c in cols if c in df.columns]].reset_index(drop=True)


def render_markdown(table: pd.DataFrame, run: dict, configs: pd.DataFrame) -> str:
    """The guide as markdown: the selection table, the facts behind each winner, every configuration."""
    sweep = (run.get("config") or {}).get("sweep") or {}
    lines = [
        f"# Block-size guide · {run.get('family')} · {sweep.get('version', '?')} · run `{run.get('id')}`",
        "",
        f"- **device**: {run.get('device_name') or '?'} · **git**: {str(run.get('git_commit') or '?')[:10]}"
        + (" (dirty)" if run.get("git_dirty") else ""),
        "- **swept**: " + ", ".join(f"{k} ∈ {{{', '.join(map(str, v))}}}" for k, v in sweep.get("params", {}).items()),
        "",
    ]
    if run.get("mode") == "interpreter":
        lines += [
            "**CPU interpreter run: configurations were checked for correctness and compiled for sm_90 "
            "offline, not timed; nothing is ranked.**",
            "",
        ]
    cut = int(table["not_run"].fillna(0).sum()) if "not_run" in table else 0
    if cut:
        lines += [
            f"**The run ended before {cut} planned case(s) ran (it was cut, or stopped): where a row counts cases not "
            "run, its best config is the fastest of those measured, not of the sweep.**",
            "",
        ]
    lines += [
        "| shape | dtype | best config | µs | % of roof | runner-up | +% | default (version's own choice) | +% | "
        "worst +% | configs (skipped, failed) |",
        "| :--- | :--- | :--- | ---: | ---: | :--- | ---: | :--- | ---: | ---: | :--- |",
    ]
    for r in table.to_dict("records"):
        lines.append(
            f"| {r['shape']} | {r['dtype']} | **{_fmt(r['best'])}** | {_fmt(r['best_us'], '.1f')} | "
            f"{_fmt(r['best_pct_roof'], '.1f')}{' (' + r['bound'] + ')' if isinstance(r['bound'], str) else ''} | "
            f"{_fmt(r['runner_up'])} | {_fmt(r['runner_up_slower_pct'], '.1f')} | "
            f"{_fmt(r['default'])} | {_fmt(r['default_slower_pct'], '.1f')} | {_fmt(r['worst_slower_pct'], '.0f')} | "
            f"{r['configs']} ({r['skipped']}, {r['failed']})"
            + (f"; {r['not_run']} not run |" if r.get("not_run") else " |")
        )
    if table["best"].notna().any():
        lines += [
            "",
            "## Why the winners win (compiler resources of the best config)",
            "",
            "| shape | dtype | best config | registers/thread | local (spill) bytes/thread | shared mem/block | "
            "theoretical occupancy | limited by |",
            "| :--- | :--- | :--- | ---: | ---: | ---: | ---: | :--- |",
        ]
    for r in table[table["best"].notna()].to_dict("records"):
        lines.append(
            f"| {r['shape']} | {r['dtype']} | {_fmt(r['best'])} | {_fmt(r['registers'], '.0f')} | "
            f"{_fmt(r['local_bytes'], '.0f')} | {_fmt(r['shared_mem_bytes'], '.0f')} | "
            f"{_fmt(r['occupancy_pct'], '.0f', '%')} | {_fmt(r['occupancy_limiter'])} |"
        )
    lines += [
        "",
        "## Every configuration",
        "",
        "| shape | dtype | config | status | µs | % of roof | regs | local B | smem B | occ. theo % | occ. achieved % "
        "| why |",
        "| :--- | :--- | :--- | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :--- |",
    ]
    for r in configs.to_dict("records"):
        lines.append(
            f"| {r['shape']} | {r['dtype']} | {r['params_text']} | {r['status']} | "
            f"{_fmt(r.get('gpu_time_us'), '.1f')} | "
            f"{_fmt(r.get('pct_roof'), '.1f')} | {_fmt(r.get('registers_per_thread'), '.0f')} | "
            f"{_fmt(r.get('local_bytes'), '.0f')} | {_fmt(r.get('shared_mem_bytes'), '.0f')} | "
            f"{_fmt(r.get('occupancy_theoretical_pct'), '.0f')} | {_fmt(r.get('occupancy_achieved_pct'), '.0f')} | "
            f"{(r['note'] if isinstance(r.get('note'), str) else '')[:160].replace('|', '/')} |"
        )
    lines += [
        "",
        "*% of roof*: achieved rate against the roofline at the case's arithmetic intensity, from this "
        "device's measured copy bandwidth and matrix-product rate (memory-bound: % of copy bandwidth). "
        "*+%*: slower than the best, in GPU median time (L2 flushed). *default*: the version run "
        "without pinned parameters, with the configuration it chose as recorded at launch. Skipped "
        "configurations (cannot compile or launch) and their reasons are in `kprof show RUN`.",
    ]
    return "\n".join(lines) + "\n"
