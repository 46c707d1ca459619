"""Everything the dashboard reads, in one place, cached (Streamlit's guidance: pages only assemble).

The store is ``--store`` / ``$KPROF_STORE`` / ``./kprof-runs/kprof.db``. When it is missing or holds no
runs, the bundled demo store of real H100 runs (``dashboards/demo/kprof-demo.db.gz``) is unpacked to a
private temporary folder (fresh per server) and shown instead, and every page says so. A file that is not a kprof store gives a
readable error in the page (:class:`StoreProblem`), never a traceback.
"""

from __future__ import annotations

import atexit
import functools
import gzip
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from kprof.errors import KprofError
from kprof.store import RunStore, default_store_path

DEMO = Path(__file__).parent / "demo" / "kprof-demo.db.gz"


@dataclass(frozen=True)
class Source:
    path: str
    demo: bool
    why: str  # why the demo is shown, or where the store is


class StoreProblem(Exception):
    pass


@functools.lru_cache(maxsize=1)
def _demo_path() -> Path:
    """The bundled demo store, unpacked once per server into a private folder of its own.

    ``mkdtemp`` makes a fresh folder only this user can enter (mode 0700, unpredictable name): a fixed name
    in the shared temp folder would let another local user plant a symlink there (the unpacking would then
    overwrite the file it points to) or a database of their own (the dashboard would show it). The file
    is created with O_EXCL|O_NOFOLLOW, so even inside that folder nothing pre-existing is followed."""
    folder = Path(tempfile.mkdtemp(prefix="kprof-dashboard-demo-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    out = folder / "kprof-demo.db"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with gzip.open(DEMO, "rb") as src, os.fdopen(fd, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


@st.cache_resource(show_spinner=False)
def _source(requested: str | None, mtime: float) -> Source:
    path = default_store_path(requested)
    if not path.exists():
        return Source(str(_demo_path()), True, f"no store at {path}")
    try:
        st_ = RunStore(path)
        empty = st_.runs().empty
        st_.close()
    except KprofError as exc:
        raise StoreProblem(str(exc)) from None
    if empty:
        return Source(str(_demo_path()), True, f"the store {path} has no runs yet")
    return Source(str(path), False, str(path))


def source() -> Source:
    requested = os.environ.get("KPROF_STORE")
    path = default_store_path(requested)
    return _source(requested, path.stat().st_mtime if path.exists() else 0.0)


def _stamp() -> float:
    """Changes whenever the store does: SQLite in WAL mode writes to ``kprof.db-wal`` first."""
    p = Path(source().path)
    return max((q.stat().st_mtime_ns for q in (p, p.with_name(p.name + "-wal")) if q.exists()), default=0) / 1e9


@st.cache_data(show_spinner=False)
def _read(what: str, run_id: str | None, stamp: float, path: str):  # stamp: the store's mtime, part of the key
    s = RunStore(path)
    try:
        return getattr(s, what)(run_id) if run_id is not None else getattr(s, what)()
    finally:
        s.close()


@st.cache_data(show_spinner=False)
def _diff(run_a: str, run_b: str, threshold: float, stamp: float, path: str):  # -> kprof.diff.DiffResult
    from kprof.diff import DiffRule, diff_runs

    s = RunStore(path)
    try:
        return diff_runs(s, run_a, run_b, DiffRule(threshold=threshold))
    finally:
        s.close()


# the pages call these: no store path or cache stamp to thread through
def all_runs() -> pd.DataFrame:
    return _read("runs", None, _stamp(), source().path)


def get_run(run_id: str) -> dict:
    return _read("run", run_id, _stamp(), source().path)


def get_metrics(run_id: str) -> pd.DataFrame:
    return _read("metrics", run_id, _stamp(), source().path)


def get_launches(run_id: str) -> pd.DataFrame:
    return _read("launches", run_id, _stamp(), source().path)


def get_diff(run_a: str, run_b: str, threshold: float = 0.03):
    return _diff(run_a, run_b, threshold, _stamp(), source().path)
