"""Server-side render time of each dashboard page with a store of N runs (default 100).

    python benchmarks/dashboard_load_time.py [N] [--big-trace LAUNCHES] [--build-only PATH]

Builds a temporary store of N runs by copying the demo store's runs under new ids (with --big-trace, the
newest run is a real nsys trace of tests/data repeated end to end up to LAUNCHES rows, one case, so the
Trace page opens on it), then renders each page
with Streamlit's AppTest from a cold cache and again warm, and prints the times. This is the time the
server needs to produce the page (queries, DataFrames, figures); a browser's first paint adds transfer and
drawing, which the browser test measures.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

from kprof.dashboards.data import DEMO

PAGES = ("compare", "runs", "trace", "diff", "roofline")


def build(n: int, out: Path) -> None:
    with gzip.open(DEMO, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(out)
    ids = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY rowid")]
    copies = 0
    while len(ids) + copies < n:
        for rid in ids:
            if len(ids) + copies >= n:
                break
            new = f"{rid}-c{copies:03d}"
            for table, key in (
                ("runs", "id"),
                ("cases", "run_id"),
                ("samples", "run_id"),
                ("launches", "run_id"),
                ("captures", "run_id"),
            ):
                cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
                sel = ", ".join("?" if c == key else f'"{c}"' for c in cols)
                con.execute(f"INSERT INTO {table} SELECT {sel} FROM {table} WHERE {key} = ?", (new, rid))
            copies += 1
    con.commit()
    con.close()


def add_big_trace(out: Path, launches: int) -> str:
    """A GPU run whose launch table is the committed nsys trace repeated, each copy shifted past the last."""
    import pandas as pd

    from kprof.profilers import nsys
    from kprof.store import RunRecord, RunStore

    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "t.sqlite"
        with gzip.open(repo / "tests" / "data" / "nsys_rmsnorm.sqlite.gz", "rb") as src, open(raw, "wb") as dst:
            shutil.copyfileobj(src, dst)
        one = nsys.parse(raw)
    stamps = ["start_ns", "end_ns", "api_start_ns", "api_end_ns"]
    span = one[stamps].max().max() - one[stamps].min().min() + 1000
    copies = -(-launches // len(one))
    big = (
        pd.concat([one.assign(**{c: one[c] + k * span for c in stamps}) for k in range(copies)], ignore_index=True)
        .head(launches)
        .assign(case="rmsnorm/all/repeated")
    )
    s = RunStore(out)
    run = s.begin_run(
        RunRecord(
            family="rmsnorm",
            mode="gpu",
            command=f"benchmarks/dashboard_load_time.py --big-trace {launches}",
            config={},
            git_commit=None,
            git_dirty=False,
            git_note="synthetic: a real nsys trace repeated",
            source_hashes={},
            device={"name": "NVIDIA H100 80GB HBM3", "kind": "cuda"},
            versions={},
            profiler="nsys",
            profiler_version=None,
            ceiling_gbps=None,
            ceiling=None,
        )
    )
    s.add_launches(run, big)
    s.finish_run(run, "complete")
    s.close()
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=100, help="runs in the store")
    ap.add_argument("--big-trace", type=int, default=0, help="add a run with this many launches")
    ap.add_argument("--build-only", type=Path, help="write the store here and stop (for the browser test)")
    args = ap.parse_args()
    if args.build_only:
        args.build_only.parent.mkdir(parents=True, exist_ok=True)
        build(args.n, args.build_only)
        if args.big_trace:
            add_big_trace(args.build_only, args.big_trace)
        print(f"wrote {args.build_only}")
        return
    n = args.n
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "kprof.db"
        build(n, store)
        if args.big_trace:
            add_big_trace(store, args.big_trace)
        os.environ["KPROF_STORE"] = str(store)
        runs = sqlite3.connect(store).execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        print(f"store: {runs} runs, {store.stat().st_size / 2**20:.1f} MiB")
        for name in PAGES:
            st.cache_data.clear()
            st.cache_resource.clear()
            at = AppTest.from_string(f"from kprof.dashboards.views import {name}\n{name}.render()", default_timeout=120)
            t0 = time.perf_counter()
            at.run()
            cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            at.run()
            warm = time.perf_counter() - t0
            status = "ok" if not at.exception else f"EXCEPTION {at.exception[0].value}"
            print(f"{name:9s} cold {cold:5.2f} s  warm {warm:5.2f} s  {status}")


if __name__ == "__main__":
    main()
