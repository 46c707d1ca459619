"""Do kprof's declared timing modes agree with the profilers? (GPU machine, a few minutes per family.)

    python benchmarks/timing_agreement.py --out DIR [--families rmsnorm,silu_mul,swiglu] [--dtypes bf16]
        [--aa rmsnorm] [--nsys PATH] [--ncu PATH] [--skip-ncu] [--skip-nsys]

Per family (its default GPU sweep, the given dtypes):
1. ``kprof profile FAMILY --profiler none`` in-process with CUDA-event timing switched on beside the modes
   (``BenchSettings(events=True)``): every case's cold, warm, graph, host and event samples; run twice for
   the ``--aa`` families (A/A: run-to-run spread of each method);
2. the correct cases replayed under ncu with only ``gpu__time_duration.sum``, ``--cache-control all
   --clock-control none`` (3 launches each), minus ncu's fixed per-kernel overhead, measured on an empty
   Triton kernel against its cold CUPTI time;
3. the same cases under nsys, 5 back-to-back launches each (kernel durations from its SQLite export).

Checks: cold (sum of kernel durations per call) within 5% of ncu, or 0.2 us under 4 us; warm (sum) within 5%
of nsys, or 0.2 us under 4 us; the ranking of providers at 1x4096 and 64x4096 by cold/warm against the
rankings by ncu/nsys; IQR/median of cold and warm against events. Writes ``agreement.csv``,
``agreement.md``, ``summary.json`` and the store under DIR; prints the summary table last.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

RANK_SHAPES = ("1x4096", "64x4096")


def timing_run(family: str, dtypes: tuple[str, ...], store: str, events: bool) -> tuple[str, float]:
    from kprof.harness import BenchSettings
    from kprof.runner import ProfileOptions, profile

    opts = ProfileOptions(
        family=family,
        dtypes=dtypes,
        profiler="none",
        store=store,
        command=f"timing_agreement {family}",
        settings=BenchSettings(events=events),
    )
    t0 = time.perf_counter()
    rid = profile(opts)
    return rid, time.perf_counter() - t0


def cost_run(store: str, events: bool = False) -> dict:
    """The full default rmsnorm sweep (every dtype) in all modes; seconds of its timing phase (all cases)."""
    from kprof.runner import ProfileOptions, profile

    marks: dict = {}

    def progress(phase: str, done: int, total: int, label: str) -> None:
        if phase == "cases":
            marks.setdefault("start", time.perf_counter())
            marks["end"], marks["cases"] = time.perf_counter(), total

    t0 = time.perf_counter()
    rid = profile(
        ProfileOptions(family="rmsnorm", profiler="none", store=store, command="timing_agreement --cost"), progress
    )
    return {
        "cost_run": rid,
        "cost_cases": marks.get("cases"),
        "cost_total_s": round(time.perf_counter() - t0, 1),
        "cost_timing_phase_s": round(marks["end"] - marks["start"], 1),
    }


FLUSH_CASES = [
    ("rmsnorm", "triton_tuned", (1, 4096)),
    ("rmsnorm", "triton_tuned", (64, 4096)),
    ("rmsnorm", "torch_F", (64, 4096)),
    ("rmsnorm", "triton_tuned", (4096, 1024)),
    ("rmsnorm", "triton_tuned", (4096, 4096)),
    ("rmsnorm", "triton_tuned", (16384, 4096)),
]


def flush_experiment() -> list[dict]:
    """Cold time against the flush's size: does reading more than 4x L2 (evicting more TLB entries too)
    move small kernels towards ncu, whose cache control also invalidates what a read cannot?"""
    from kprof import timing
    from kprof.registry import get_family

    out = []
    sizes = {"4xL2": None, "1GiB": 1 << 30, "4GiB": 4 << 30}
    for fam, prov, shape in FLUSH_CASES:
        f = get_family(fam)
        inputs = f.make_inputs(shape, "bf16", "cuda", 5)
        fn = f.get_provider(prov).fn
        row = {"case": f"{fam}/{prov}/{'x'.join(map(str, shape))}/bf16"}
        for label, nbytes in sizes.items():
            timing._FLUSH.pop("obj", None)
            if nbytes:
                timing._FLUSH["obj"] = timing.L2Flush(nbytes=nbytes)
            res = timing.measure_cupti(lambda: fn(**inputs), host_us=60.0, gpu_us=5.0, rep_ms=1, calls=(60, 63))
            row[label] = timing.median(res.cold.busy_us) if res.cold else math.nan
        timing._FLUSH.pop("obj", None)
        out.append(row)
        print(row, flush=True)
    import torch

    torch.cuda.empty_cache()
    return out


def combine(dirs: list[Path], out: Path) -> int:
    """One table, rankings and summary from several runs of this script (e.g. one per family)."""
    frames = [pd.read_csv(d / "agreement.csv") for d in dirs if (d / "agreement.csv").exists()]
    summary: dict = {"combined": [str(d) for d in dirs]}
    for d in dirs:
        if (d / "summary.json").exists():
            summary[d.name] = json.loads((d / "summary.json").read_text())
    df = pd.concat(frames, ignore_index=True)
    for col in ("cold_span_us", "warm_span_us"):  # outputs of older versions of this script
        if col not in df:
            df[col] = math.nan
    out.mkdir(parents=True, exist_ok=True)
    write_outputs(df, summary, out)
    return 0


def replay_cases(store, rid: str):
    from kprof.external import replay_cases as mk
    from kprof.harness import case_seed
    from kprof.registry import Case, parse_shape

    run = store.run(rid)
    seed = run["config"]["settings"]["seed"]
    m = store.metrics(rid)
    ok = m[m["ok"] & (m["kind"] != "roofline")]
    rows = []
    for r in ok.itertuples():
        case = Case(r.family, r.provider, parse_shape(r.shape), r.dtype)
        rows.append((r.case, r.provider, case.shape, r.dtype, case_seed(seed, case)))
    return mk(run["family"], rows)


def per_call_us(launches: pd.DataFrame, repeats: int) -> pd.Series:
    """Sum of kernel durations per call, per case (mean over the replayed calls), us."""
    if launches.empty or "kind" not in launches:
        return pd.Series(dtype=float)
    k = launches[launches["kind"].fillna("kernel") == "kernel"]
    return k.groupby("case")["duration_ns"].sum().astype(float) / repeats / 1e3


def kernels_per_call(launches: pd.DataFrame, repeats: int) -> pd.Series:
    if launches.empty or "kind" not in launches:
        return pd.Series(dtype=float)
    k = launches[launches["kind"].fillna("kernel") == "kernel"]
    return k.groupby("case").size() / repeats


def capture(tool: str, family: str, cases, workdir: Path, repeats: int, path: str | None):
    from kprof import external
    from kprof.profilers import ncu

    choice = external.choose(tool, "gpu", path)
    if tool == "ncu":  # one metric, one pass; caches flushed and invalidated explicitly
        orig = ncu.profile_command

        def only_time(exe, child, csv_path, metrics=None):
            argv = orig(exe, child, csv_path, metrics=["gpu__time_duration.sum"])
            return argv[:1] + ["--cache-control", "all"] + argv[1:]

        ncu.profile_command = only_time
        try:
            res = external.capture(choice, family, cases, workdir, repeats=repeats, timeout_s=900)
        finally:
            ncu.profile_command = orig
    else:
        res = external.capture(choice, family, cases, workdir, repeats=repeats, timeout_s=900)
    if res.error:
        print(f"{tool} {family}: {res.error}", file=sys.stderr)
    return res.launches


GRIDS = (1, 132, 1024, 8192)
EMPTY_CHILD = r"""
import torch, triton, triton.language as tl
@triton.jit
def kprof_empty_kernel(x):
    pass
x = torch.zeros(1, device="cuda")
for grid in GRIDS:
    kprof_empty_kernel[(grid,)](x)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(f"kprof::empty/{grid}")
    for _ in range(20):
        kprof_empty_kernel[(grid,)](x)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
"""


def ncu_overhead(out: Path, ncu_path: str | None) -> dict:
    """ncu's fixed per-kernel cost: an empty kernel's gpu__time_duration under ncu minus its cold CUPTI time."""
    import torch
    import triton

    from kprof import external, timing
    from kprof.profilers import ncu

    @triton.jit
    def kprof_empty_kernel(x):
        pass

    x = torch.zeros(1, device="cuda")
    cold, warm = {}, {}
    for grid in GRIDS:
        res = timing.measure_cupti(lambda g=grid: kprof_empty_kernel[(g,)](x), host_us=20.0, gpu_us=2.0, rep_ms=20)
        cold[grid] = timing.median(res.cold.busy_us) if res.cold else math.nan
        warm[grid] = timing.median(res.warm.busy_us) if res.warm and res.warm.busy_us else math.nan
    cupti_us, warm_us = cold[1], warm[1]
    child = out / "empty_child.py"
    child.write_text(f"GRIDS = {GRIDS!r}\n" + EMPTY_CHILD)
    exe = external.choose("ncu", "gpu", ncu_path).tool.path
    csv_path = out / "ncu_empty.csv"
    argv = ncu.profile_command(exe, [sys.executable, str(child)], csv_path, metrics=["gpu__time_duration.sum"])
    argv = argv[:1] + ["--cache-control", "all"] + argv[1:]
    subprocess.run(argv, capture_output=True, text=True, timeout=300)
    lt = ncu.parse(csv_path)
    by_grid = lt.groupby("case")["duration_ns"].median() / 1e3
    ncu_g = {g: float(by_grid.get(f"empty/{g}", math.nan)) for g in GRIDS}
    ncu_us = ncu_g[1]
    return {
        "empty_cupti_cold_us": cupti_us,
        "empty_cupti_warm_us": warm_us,
        "empty_ncu_us": ncu_us,
        "ncu_overhead_us": ncu_us - cupti_us,
        "empty_ncu_n": int(len(lt)),
        "empty_by_grid": {
            g: {"cupti_cold": cold[g], "cupti_warm": warm[g], "ncu": ncu_g[g], "ncu_minus_cold": ncu_g[g] - cold[g]}
            for g in GRIDS
        },
    }


def within(a: float, b: float) -> bool:
    if not (a > 0 and b > 0):
        return False
    return abs(a - b) <= (0.2 if b < 4.0 else 0.05 * b)


def spread(store, rid: str, kind: str) -> pd.Series:
    s = store.samples(rid, mode=kind)
    if s.empty:
        return pd.Series(dtype=float)
    g = s.groupby("case")["value"]
    return (g.quantile(0.75) - g.quantile(0.25)) / g.median()


def family_table(
    store,
    fam: str,
    rid: str,
    rid_b: str | None,
    ncu_call: pd.Series,
    ncu_k: pd.Series,
    nsys_call: pd.Series,
    overhead: float,
) -> pd.DataFrame:
    m = store.metrics(rid)
    m = m[m["ok"] & (m["kind"] != "roofline")].set_index("case")
    df = pd.DataFrame(
        {
            "family": m["family"],
            "provider": m["provider"],
            "shape": m["shape"],
            "dtype": m["dtype"],
            "timer": m["timer"],
            "kernels": m["kernels_per_call"],
            "cold_us": m["cold_us"],
            "cold_span_us": m["cold_span_us"],
            "cold_sum_us": m["cold_sum_us"],
            "warm_us": m["warm_us"],
            "warm_span_us": m["warm_span_us"],
            "warm_sum_us": m["warm_sum_us"],
            "graph_us": m["graph_time_us"],
            "events_us": m["events_us"],
            "host_us": m["host_time_us"],
        }
    )
    df["ncu_raw_us"] = ncu_call.reindex(df.index)
    df["ncu_kernels"] = ncu_k.reindex(df.index)
    df["ncu_us"] = df["ncu_raw_us"] - overhead * df["ncu_kernels"]
    df["nsys_us"] = nsys_call.reindex(df.index)
    df["cold_vs_ncu"] = df["cold_us"] / df["ncu_us"]
    df["warm_vs_nsys"] = df["warm_us"] / df["nsys_us"]
    df["cold_ok"] = [within(a, b) for a, b in zip(df["cold_us"], df["ncu_us"])]
    df["warm_ok"] = [within(a, b) for a, b in zip(df["warm_us"], df["nsys_us"])]
    for kind in ("cold", "warm", "events"):
        df[f"{kind}_noise"] = spread(store, rid, kind).reindex(df.index)
    if rid_b:
        mb = store.metrics(rid_b).set_index("case")
        for kind in ("cold", "warm", "events"):
            df[f"{kind}_aa"] = mb[f"{kind}_us"].reindex(df.index) / df[f"{kind}_us"]
    return df.reset_index().rename(columns={"index": "case"})


def decisive_pairs(g: pd.DataFrame, ref: str, col: str) -> tuple[int, int, list[str]]:
    """(pairs ordered alike, pairs the reference separates by more than 3% and 0.1 us, the disagreements).
    Pairs the reference cannot tell apart (ties at CUPTI's 32 ns resolution, noise) do not count."""
    rows = list(g[["provider", ref, col]].itertuples(index=False))
    agree = total = 0
    bad = []
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            (pa, ra, ca), (pb, rb, cb) = rows[i], rows[j]
            if any(pd.isna(v) for v in (ra, rb, ca, cb)):
                continue
            if abs(ra - rb) <= max(0.03 * min(ra, rb), 0.1):
                continue
            total += 1
            if (ra < rb) == (ca < cb):
                agree += 1
            else:
                bad.append(f"{pa} vs {pb}: {ref} {ra:.2f}/{rb:.2f}, {col} {ca:.2f}/{cb:.2f}")
    return agree, total, bad


def rankings(df: pd.DataFrame) -> list[dict]:
    out = []
    for (fam, shape, dtype), g in df[df["shape"].isin(RANK_SHAPES)].groupby(["family", "shape", "dtype"]):
        row = {"family": fam, "shape": shape, "dtype": dtype}
        for col in ("cold_us", "ncu_us", "warm_us", "nsys_us", "events_us"):
            row[col.replace("_us", "")] = " < ".join(
                f"{p} {t:.2f}" for p, t in g.sort_values(col)[["provider", col]].itertuples(index=False)
            )
        for mode, ref in (("cold", "ncu"), ("warm", "nsys"), ("events", "nsys")):
            a, t, bad = decisive_pairs(g, f"{ref}_us", f"{mode}_us")
            row[f"{mode}_vs_{ref}_pairs"] = f"{a}/{t}"
            row[f"{mode}_vs_{ref}_disagree"] = bad
        row["cold_matches_ncu"] = not row["cold_vs_ncu_disagree"]
        row["warm_matches_nsys"] = not row["warm_vs_nsys_disagree"]
        out.append(row)
    return out


def fmt(v: float, spec: str = ".2f") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def markdown(df: pd.DataFrame, ranks: list[dict], summary: dict) -> str:
    lines = [
        "# Declared timing modes against the profilers",
        "",
        "```",
        json.dumps(summary, indent=1),
        "```",
        "",
        "| case | kernels | cold µs (busy) | cold span | ncu − overhead | ratio | warm µs (busy) | nsys | ratio | "
        "events µs | noise cold / warm / events |",
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :--- |",
    ]
    for r in df.itertuples():
        mark_c = "" if r.cold_ok else " ✗"
        mark_w = "" if r.warm_ok else " ✗"
        lines.append(
            f"| {r.case} | {fmt(r.ncu_kernels, '.0f')} | {fmt(r.cold_us)} | {fmt(r.cold_span_us)} | "
            f"{fmt(r.ncu_us)} | {fmt(r.cold_vs_ncu, '.3f')}{mark_c} | {fmt(r.warm_us)} | "
            f"{fmt(r.nsys_us)} | {fmt(r.warm_vs_nsys, '.3f')}{mark_w} | {fmt(r.events_us)} | "
            f"{fmt(100 * r.cold_noise, '.1f')}% / {fmt(100 * r.warm_noise, '.1f')}% / "
            f"{fmt(100 * r.events_noise, '.1f')}% |"
        )
    lines += ["", "## Rankings (fastest first)", ""]
    for r in ranks:
        lines += [
            f"- **{r['family']} {r['shape']} {r['dtype']}**: decisive pairs ordered alike: cold vs ncu "
            f"{r['cold_vs_ncu_pairs']}, warm vs nsys {r['warm_vs_nsys_pairs']}, events vs nsys "
            f"{r['events_vs_nsys_pairs']}",
            f"  - cold: {r['cold']}",
            f"  - ncu: {r['ncu']}",
            f"  - warm: {r['warm']}",
            f"  - nsys: {r['nsys']}",
            f"  - events: {r['events']}",
        ]
        for k in ("cold_vs_ncu_disagree", "warm_vs_nsys_disagree", "events_vs_nsys_disagree"):
            lines += [f"  - {k.replace('_', ' ')}: {b}" for b in r[k]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--families", default="rmsnorm,silu_mul,swiglu")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--aa", default="rmsnorm", help="families timed twice (A/A); empty for none")
    ap.add_argument("--nsys", default=None)
    ap.add_argument("--ncu", default=None)
    ap.add_argument("--skip-ncu", action="store_true")
    ap.add_argument("--skip-nsys", action="store_true")
    ap.add_argument("--cost", action="store_true", help="also time the full default rmsnorm sweep (all dtypes)")
    ap.add_argument("--flush-experiment", action="store_true", help="cold time against the flush size first")
    ap.add_argument("--combine", type=Path, nargs="*", help="merge earlier outputs (their DIRs) into --out")
    args = ap.parse_args(argv)
    if args.combine:
        return combine(args.combine, args.out)
    from kprof.store import RunStore

    args.out.mkdir(parents=True, exist_ok=True)
    store_path = str(args.out / "kprof.db")
    dtypes = tuple(args.dtypes.split(","))
    summary: dict = {"argv": sys.argv, "dtypes": list(dtypes)}
    t0 = time.perf_counter()
    if args.flush_experiment:
        summary["flush_experiment"] = flush_experiment()
    fams = [f for f in args.families.split(",") if f]
    overhead = ncu_overhead(args.out, args.ncu) if fams and not args.skip_ncu else {"ncu_overhead_us": math.nan}
    summary.update(overhead)
    print(f"ncu overhead: {overhead}", flush=True)
    tables = []
    for fam in fams:
        rid, secs = timing_run(fam, dtypes, store_path, events=True)
        rid_b = timing_run(fam, dtypes, store_path, events=True)[0] if fam in args.aa.split(",") else None
        summary[f"{fam}_timing_run"] = rid
        summary[f"{fam}_timing_s"] = round(secs, 1)
        store = RunStore(store_path)
        m = store.metrics(rid)
        print(
            f"{fam}: run {rid}, {secs:.0f} s, status {m['status'].value_counts().to_dict()}, timer "
            f"{m['timer'].value_counts(dropna=False).to_dict()}",
            flush=True,
        )
        for r in m[m["status"] != "ok"].head(3).itertuples():
            print(f"  {r.case}: {r.status} {str(r.note)[:300]}", flush=True)
        cases = replay_cases(store, rid)
        empty = pd.Series(dtype=float)
        ncu_call, ncu_k, nsys_call = empty, empty, empty
        if not args.skip_ncu:
            lt = capture("ncu", fam, cases, args.out / f"ncu_{fam}", 3, args.ncu)
            lt.to_csv(args.out / f"launches_ncu_{fam}.csv.gz", index=False)
            ncu_call, ncu_k = per_call_us(lt, 3), kernels_per_call(lt, 3)
        if not args.skip_nsys:
            lt = capture("nsys", fam, cases, args.out / f"nsys_{fam}", 5, args.nsys)
            lt.to_csv(args.out / f"launches_nsys_{fam}.csv.gz", index=False)
            nsys_call = per_call_us(lt, 5)
        tables.append(family_table(store, fam, rid, rid_b, ncu_call, ncu_k, nsys_call, overhead["ncu_overhead_us"]))
        store.close()
        print(f"{fam}: done at {time.perf_counter() - t0:.0f} s", flush=True)
    if not tables:  # --families "" --cost: only the cost of the full sweep
        if args.cost:
            summary.update(cost_run(store_path))
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        print(json.dumps(summary, indent=1, default=str))
        return 0
    df = pd.concat(tables, ignore_index=True)
    if args.cost:
        summary.update(cost_run(store_path))
    summary["wall_s"] = round(time.perf_counter() - t0, 1)
    write_outputs(df, summary, args.out)
    return 0


def write_outputs(df: pd.DataFrame, summary: dict, out: Path) -> None:
    ranks = rankings(df)
    has_ncu, has_nsys = df["ncu_us"].notna(), df["nsys_us"].notna()
    summary.update(
        {
            "cases": int(len(df)),
            "cold_within": f"{int(df.loc[has_ncu, 'cold_ok'].sum())}/{int(has_ncu.sum())}",
            "warm_within": f"{int(df.loc[has_nsys, 'warm_ok'].sum())}/{int(has_nsys.sum())}",
            "cupti_cases": int((df["timer"] == "cupti").sum()),
            "median_noise": {k: float(np.nanmedian(df[f"{k}_noise"])) for k in ("cold", "warm", "events")},
            "rankings_agree": f"{sum(r['cold_matches_ncu'] for r in ranks)}/{len(ranks)} cold=ncu, "
            f"{sum(r['warm_matches_nsys'] for r in ranks)}/{len(ranks)} warm=nsys "
            "(every pair the profiler separates by > 3% and 0.1 us ordered alike)",
        }
    )
    for k in ("cold", "warm", "events"):
        if f"{k}_aa" in df:
            aa = (df[f"{k}_aa"] - 1).abs()
            summary[f"aa_{k}_median_abs_pct"] = float(100 * np.nanmedian(aa))
            summary[f"aa_{k}_p90_abs_pct"] = (
                float(100 * np.nanpercentile(aa.dropna(), 90)) if aa.notna().any() else math.nan
            )
    df.to_csv(out / "agreement.csv", index=False)
    (out / "rankings.json").write_text(json.dumps(ranks, indent=1))
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "agreement.md").write_text(markdown(df, ranks, summary))
    bad = df[(~df["cold_ok"] & has_ncu) | (~df["warm_ok"] & has_nsys)]
    cols = ["case", "ncu_kernels", "cold_us", "ncu_us", "warm_us", "nsys_us", "events_us"]
    print(bad[cols].to_string(index=False) if not bad.empty else "no outliers")
    print(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    raise SystemExit(main())
