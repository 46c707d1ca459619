"""Server-side render time of each dashboard page with a store of N runs (default 100).

    python benchmarks/dashboard_load_time.py [N]

Builds a temporary store of N runs by copying the demo store's runs under new ids, then renders each page
with Streamlit's AppTest from a cold cache and again warm, and prints the times. This is the time the
server needs to produce the page (queries, DataFrames, figures); a browser's first paint adds transfer and
drawing, which the browser test measures.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import sys
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
            for table, key in (("runs", "id"), ("cases", "run_id"), ("samples", "run_id"), ("launches", "run_id"),
                               ("captures", "run_id")):
                cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
                sel = ", ".join("?" if c == key else f'"{c}"' for c in cols)
                con.execute(f"INSERT INTO {table} SELECT {sel} FROM {table} WHERE {key} = ?", (new, rid))
            copies += 1
    con.commit()
    con.close()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "kprof.db"
        build(n, store)
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
