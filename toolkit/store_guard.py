"""Refuse to open a file that is not a kprof run store, before anything is written to it.

``--store`` may point at any file, for example an Nsight Systems export (an SQLite file too). Opening it
as a store would add kprof's tables and switch it to WAL mode, changing someone else's data. So an
existing file is inspected read-only first: it must be empty, an SQLite database without tables, or a
database that carries kprof's ``meta.schema_version``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from kprof.errors import StoreError


def _refuse(path: Path, what: str) -> StoreError:
    return StoreError(
        f"{path} is not a readable kprof store: it is {what}; kprof leaves it untouched "
        "(pass --store with a new file or folder)"
    )


def check_store_file(path: Path) -> None:
    """Raise :class:`StoreError` unless ``path`` is missing, empty, or a kprof store. Never writes."""
    if not path.exists():
        return
    if not path.is_file():
        raise _refuse(path, "not a regular file")
    # No file descriptor of our own on the store: closing one drops every POSIX lock this process holds on the file,
    # the locks of its open SQLite connections included (SQLite's own descriptors are spared that: it defers their
    # close). A kprof process writing the store then takes itself for the last connection and resets the WAL under
    # this process's open connections, which read a stale index from then on ("database disk image is malformed";
    # SQLite's documentation lists a descriptor closed this way among the ways to corrupt a database). Reading the
    # header with open() did that to a long-lived process (a notebook, the dashboard, benchmarks/race_grids.py) while
    # `kprof profile` wrote the store (tests/toolkit/test_store.py). SQLite tells a non-database itself.
    if not os.access(path, os.R_OK):
        raise StoreError(f"cannot read the store {path}: permission denied")
    if path.stat().st_size == 0:
        return  # an empty file: a new store
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = None
            if "meta" in tables:
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                version = row[0] if row else None
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if _not_a_database(exc):
            raise _refuse(path, "not an SQLite database") from None
        raise StoreError(
            f"{path} is not a readable kprof store ({exc}): it is damaged or not kprof's; move "
            "it aside or pass --store with another path"
        ) from None
    if tables and version is None:
        listed = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
        raise _refuse(path, f"an SQLite database of something else (its tables: {listed})")


def _not_a_database(exc: sqlite3.DatabaseError) -> bool:
    """Whether SQLite refused the file as no database at all (SQLITE_NOTADB), not as a damaged one."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 and newer
    return code == getattr(sqlite3, "SQLITE_NOTADB", 26) if code is not None else "not a database" in str(exc)


def check_store_readable(path: Path) -> None:
    """For commands that only read: a missing store is an error, and nothing is created."""
    if not path.exists():
        raise StoreError(
            f"no runs yet: no run store at {path} (profile something first: `kprof profile rmsnorm`, "
            "or pass --store / set KPROF_STORE to where your runs are)"
        )
    check_store_file(path)
