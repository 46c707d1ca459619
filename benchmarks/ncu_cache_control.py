"""Why ncu reads small kernels ~2x slower than nsys: its cache flush, tested.

Replays small and large rmsnorm cases (the same replay child kprof uses) under nsys, under ncu with its
default ``--cache-control all`` (caches flushed before each profiled kernel) and under ncu with
``--cache-control none``, and prints the median kernel duration per case and tool.

    python benchmarks/ncu_cache_control.py OUT_DIR     # GPU machine; nsys needs its libraries, see tests/data/README.md
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from kprof.analysis import case_kernel_times
from kprof.profilers import ncu as ncu_mod
from kprof.profilers import nsys as nsys_mod
from kprof.replay import ReplayCase, ReplaySpec, child_argv, write_spec
from kprof.tools import find_tool, run_tool

CASES = [
    (p, s, "bf16")
    for p in ("triton_tuned", "torch_F", "liger")
    for s in ((1, 4096), (64, 4096), (4096, 4096), (32768, 8192))
]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cases = tuple(ReplayCase(f"rmsnorm/{p}/{'x'.join(map(str, s))}/{d}", p, s, d, 7) for p, s, d in CASES)
    spec = write_spec(
        ReplaySpec("rmsnorm", cases, repeats=5, marker="nvtx", progress_file=str(out / "progress.jsonl")),
        out / "spec.json",
    )
    child = child_argv(spec)
    tables = {}
    nsys = find_tool("nsys")
    base = out / "nsys"
    for argv in (
        nsys_mod.profile_command(nsys.path, child, base),
        nsys_mod.export_command(nsys.path, base.with_suffix(".nsys-rep"), base.with_suffix(".sqlite")),
    ):
        r = run_tool(argv, timeout=600, cwd=out, log_prefix="nsys")
        if not r.ok:
            sys.exit(r.describe())
    tables["nsys"] = nsys_mod.parse(base.with_suffix(".sqlite"))
    ncu = find_tool("ncu")
    for mode in ("all", "none"):
        csv_path = out / f"ncu_cache_{mode}.csv"
        argv = ncu_mod.profile_command(ncu.path, child, csv_path)
        argv[1:1] = ["--cache-control", mode]
        r = run_tool(argv, timeout=600, cwd=out, log_prefix=f"ncu_{mode}")
        if not r.ok:
            sys.exit(r.describe())
        tables[f"ncu_cache_{mode}"] = ncu_mod.parse(csv_path)
    per = {n: case_kernel_times(t).groupby("case")["median_us"].max() for n, t in tables.items()}
    df = pd.DataFrame(per)
    df["all/nsys"] = df["ncu_cache_all"] / df["nsys"]
    df["none/nsys"] = df["ncu_cache_none"] / df["nsys"]
    df.to_csv(out / "ncu_cache_control.csv")
    print(df.round(3).to_string())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
