"""Build the dashboard's demo store (dashboards/demo/kprof-demo.db) from real H100 runs.

    python benchmarks/make_demo_store.py OUT.db.gz DTYPE SRC.db:RUN_ID [SRC.db:RUN_ID ...]

Copies the chosen runs (records, and the cases, launches and samples of one dtype) and keeps at most
``MAX_SAMPLES`` timing samples per case and kind, an evenly spaced subset of the sorted samples, so the
committed file stays small while medians and spreads stay those of the run. Written gzipped; unpacked it
is a normal kprof store (``kprof show --store``).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import numpy as np

from kprof.store import RunStore

MAX_SAMPLES = 120


def copy_run(src: Path, run_id: str, dst: sqlite3.Connection, dtype: str) -> None:
    s = sqlite3.connect(src)
    for table in ("runs", "cases", "launches", "captures"):
        key = "id" if table == "runs" else "run_id"
        cols = [r[1] for r in s.execute(f"PRAGMA table_info({table})")]
        have = {r[1] for r in dst.execute(f"PRAGMA table_info({table})")}
        cols = [c for c in cols if c in have]
        where = {"cases": " AND dtype = ?", "launches": ' AND "case" LIKE ?'}.get(table, "")
        args = (run_id,) + ((dtype,) if table == "cases" else (f"%/{dtype}",) if table == "launches" else ())
        rows = s.execute(
            f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM {table} WHERE {key} = ?" + where, args
        ).fetchall()
        dst.executemany(
            f"INSERT INTO {table} ({', '.join(chr(34) + c + chr(34) for c in cols)}) "
            f"VALUES ({', '.join('?' for _ in cols)})",
            rows,
        )
    for case, kind, unit, data in s.execute(
        "SELECT case_id, kind, unit, data FROM samples WHERE run_id = ? AND case_id LIKE ?", (run_id, f"%/{dtype}")
    ):
        values = np.sort(np.asarray(json.loads(data), dtype=float))
        if values.size > MAX_SAMPLES:
            values = values[np.linspace(0, values.size - 1, MAX_SAMPLES).round().astype(int)]
        dst.execute(
            "INSERT INTO samples VALUES (?, ?, ?, ?, ?)", (run_id, case, kind, unit, json.dumps(values.tolist()))
        )


def main() -> None:
    out, dtype = Path(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kprof.db"
        RunStore(db).close()  # creates the schema
        dst = sqlite3.connect(db)
        for spec in sys.argv[3:]:
            src, run_id = spec.rsplit(":", 1)
            copy_run(Path(src), run_id, dst, dtype)
        dst.commit()
        dst.execute("VACUUM")
        dst.close()
        with open(db, "rb") as fh, gzip.open(out, "wb", compresslevel=9) as gz:
            shutil.copyfileobj(fh, gz)
    print(out, out.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
