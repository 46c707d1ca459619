"""Side by side: the per-kernel durations that several profilers measured for the same cases.

    python benchmarks/compare_profilers.py --store STORE torch=RUN_A nsys=RUN_B ncu=RUN_C --out DIR

Reads each run's launch table from the kprof store, matches kernels per case (by name, else by rank of
total time: the tools spell kernel names differently), and writes ``DIR/profilers_side_by_side.csv``
(every case x kernel) and ``DIR/profilers_side_by_side.md`` (the dominant kernel of each case, and the
ratio of each profiler's median to the first one's, summarised by working-set size).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from kprof.analysis import compare_profilers
from kprof.store import RunStore


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="NAME=RUN_ID, the first is the reference")
    ap.add_argument("--store", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    st = RunStore(args.store)
    pairs = [r.split("=", 1) for r in args.runs]
    tables = {name: st.launches(run) for name, run in pairs}
    metrics = {name: st.metrics(run).set_index("case") for name, run in pairs}
    names = list(tables)
    ref = names[0]
    df = compare_profilers(tables, reference=ref)
    first = metrics[ref]
    df["bytes"] = df["case"].map(first["bytes"])
    df["kprof_timer_us"] = df["case"].map(first["gpu_time_us"])
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "profilers_side_by_side.csv", index=False)

    main_k = df[df["rank"] == 0].copy()
    main_k["size"] = np.where(main_k["bytes"] >= 64 << 20, ">= 64 MiB moved", "< 64 MiB moved")
    lines = [
        f"# Kernel durations per profiler (reference: {ref})",
        "",
        "Runs: " + ", ".join(f"{n} = `{r}`" for n, r in pairs),
        "",
        "## Ratio of each profiler's median kernel duration to the reference, dominant kernel of each case",
        "",
        "| profiler | working set | cases | median ratio | p10 | p90 | within ±5% |",
        "| :--- | :--- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in names[1:]:
        col = f"{n}_vs_{ref}"
        if col not in main_k:
            continue
        for size, g in main_k.groupby("size"):
            r = g[col].dropna()
            if r.empty:
                continue
            lines.append(
                f"| {n} | {size} | {len(r)} | {r.median():.3f} | {r.quantile(0.1):.3f} | "
                f"{r.quantile(0.9):.3f} | {100 * ((r - 1).abs() <= 0.05).mean():.0f}% |"
            )
    lines += ["", "## Dominant kernel of each case (µs; kprof timer = do_bench method, L2 flushed)", ""]
    cols = ["case", "kprof_timer_us"] + [f"{n}_median_us" for n in names] + [f"{n}_vs_{ref}" for n in names[1:]]
    cols = [c for c in cols if c in main_k]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("| :--- | " + " | ".join("---:" for _ in cols[1:]) + " |")
    for r in main_k.sort_values(["bytes", "case"]).itertuples():
        cells = [str(r.case)] + [f"{getattr(r, c):.3f}" if "_vs_" in c else f"{getattr(r, c):.2f}" for c in cols[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    (args.out / "profilers_side_by_side.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:20]))


if __name__ == "__main__":
    main()
