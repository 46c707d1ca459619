"""Stores the dashboard tests open: the demo's runs copied under new ids up to N runs."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

from kprof.dashboards.data import DEMO


def hundred_runs(out: Path, n: int = 100) -> Path:
    """A store of ``n`` runs: the demo's real H100 runs, copied under new ids (launches, samples and all)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(DEMO, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(out)
    ids = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY rowid")]
    tables = {
        t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")]
        for t in ("runs", "cases", "samples", "launches", "captures")
    }
    for copy in range(n - len(ids)):
        rid = ids[copy % len(ids)]
        new = f"{rid}-c{copy:03d}"
        for table, key in (
            ("runs", "id"),
            ("cases", "run_id"),
            ("samples", "run_id"),
            ("launches", "run_id"),
            ("captures", "run_id"),
        ):
            sel = ", ".join("?" if c == key else f'"{c}"' for c in tables[table])
            con.execute(f"INSERT INTO {table} SELECT {sel} FROM {table} WHERE {key} = ?", (new, rid))
    con.commit()
    con.close()
    return out
