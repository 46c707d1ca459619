"""Everything the dashboard reads, in one place, cached (Streamlit's guidance: pages only assemble).

The store is ``--store`` / ``$KPROF_STORE`` / ``./kprof-runs/kprof.db``. When it is missing or holds no
runs, the bundled demo store of real H100 runs (``dashboards/demo/kprof-demo.db.gz``) is unpacked to a
private temporary folder (fresh per server) and shown instead, and every page says so; the sidebar's "demo data"
switch shows it
whatever the store holds. A file that is not a kprof store gives a readable error in the page
(:class:`StoreProblem`), never a traceback.

Reads are cached per (what, run, store stamp): the stamp changes whenever the store does, so a new run
shows up without a restart. Diff never reads launch tables whole: the kernel comparison needs one row per
(case, kernel, launch configuration), which SQLite aggregates (:func:`kernel_rows`).
"""

from __future__ import annotations

import atexit
import functools
import gzip
import hashlib
import itertools
import os
import re
import shutil
import sqlite3
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from kprof import runtime
from kprof.errors import KprofError
from kprof.store import RunStore, default_store_path

DEMO = Path(__file__).parent / "demo" / "kprof-demo.db.gz"
DEMO_KEY = "kprof_demo"  # session-state key of the sidebar switch


@dataclass(frozen=True)
class Source:
    path: str
    demo: bool
    why: str  # why the demo is shown, or where the store is
    store_has_runs: bool = False  # the real store has runs (the demo is shown only because the switch is on)


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


@st.cache_resource(show_spinner=False, max_entries=16)  # a new key per commit while a profile writes
def _source(requested: str | None, version: tuple, want_demo: bool) -> Source:  # version: _version(), a key
    path = default_store_path(requested)
    if not path.exists():
        return Source(str(_demo_path()), True, f"no store at {path}")
    try:
        st_ = RunStore(path)
        empty = st_.runs().empty
        st_.close()
    except KprofError as exc:
        if want_demo:
            return Source(str(_demo_path()), True, f"the demo switch is on (the store {path} cannot be read)")
        raise StoreProblem(str(exc)) from None
    if empty:
        return Source(str(_demo_path()), True, f"the store {path} has no runs yet")
    if want_demo:
        return Source(str(_demo_path()), True, "the demo switch is on", store_has_runs=True)
    return Source(str(path), False, str(path), store_has_runs=True)


def demo_wanted() -> bool:
    try:
        return bool(st.session_state.get(DEMO_KEY, False))
    except Exception:  # noqa: BLE001 - no Streamlit session (the server's warm-up): the store itself
        return False


def source() -> Source:
    requested = runtime.env("KPROF_STORE")
    path = default_store_path(requested)
    return _source(requested, _version(path), demo_wanted())


_WATCHES = itertools.count()


class _Watch:
    """A read-only connection held open on one store file, only to ask SQLite whether anything was committed since
    the last question (``PRAGMA data_version``, which changes with every commit of another connection).

    Not the files' mtimes and sizes alone: in WAL mode a commit goes to ``kprof.db-wal``, and after a checkpoint
    (every ~4 MB of log) SQLite writes the log again from its start, so while a `kprof profile` holds the store
    open, the cases it adds change neither the store's mtime nor the log's size until the next checkpoint, and the
    pages kept showing the run as it was. Held open, the connection also pins the file: a store replaced by another
    file gets a new inode, hence a new watch, even where the new file's mtime and size equal the old one's."""

    def __init__(self, path: str) -> None:
        self.token = next(_WATCHES)  # not id(): a watch evicted and made anew may get the old one's address
        self._lock = threading.Lock()  # one connection, the server's script threads take turns
        self._con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)

    def version(self) -> tuple:
        """The commit counter and the runs that say 'running' with their status now (a profile that died
        writes nothing, yet `kprof runs` reads it as incomplete from then on: the cached runs must too)."""
        with self._lock:
            try:
                commits = self._con.execute("PRAGMA data_version").fetchone()[0]
                running = self._con.execute(
                    "SELECT status, pid, host, created_at FROM runs WHERE status = 'running'"
                ).fetchall()
            except sqlite3.Error:  # not a store (yet): _source says so; its mtime and size still key the reads
                return (None,)
        return commits, tuple(RunStore.effective_status(*r) for r in running)


@st.cache_resource(show_spinner=False, max_entries=8)
def _watch(path: str, device: int, inode: int) -> _Watch:  # device, inode: one watch per file, not per name
    return _Watch(path)


def _version(path: Path) -> tuple:
    """Changes whenever the data of the store at ``path`` does (a cache key of every read; see :class:`_Watch`):
    the file's identity, mtime and size, its log's size, the watch itself (a new one counts commits from anew) and
    its commit counter."""
    if not path.exists():
        return ("missing",)
    st_ = path.stat()
    wal = path.with_name(path.name + "-wal")
    watch = _watch(str(path), st_.st_dev, st_.st_ino)
    return (
        st_.st_dev,
        st_.st_ino,
        st_.st_mtime_ns,
        st_.st_size,
        wal.stat().st_size if wal.exists() else -1,
        watch.token,
        watch.version(),
    )


def _stamp() -> tuple:
    """The version of the store the pages read (:func:`_version`): part of the key of every cached read."""
    return _version(Path(source().path))


@st.cache_data(show_spinner=False, max_entries=256)
def _read(what: str, run_id: str | None, stamp: tuple, path: str):  # stamp: _stamp(), part of the key
    s = RunStore(path)
    try:
        return getattr(s, what)(run_id) if run_id is not None else getattr(s, what)()
    finally:
        s.close()


# ------------------------------------------------------------------------------------ run names
_REV = re.compile(r"--rev\s+(\S+)")


def revision(git_note: object) -> str | None:
    """The revision name a run was profiled at (``kprof profile --rev NAME`` notes it), else None."""
    m = _REV.search(str(git_note or ""))
    return m.group(1) if m else None


@st.cache_data(show_spinner=False, max_entries=16)
def _runs(stamp: tuple, path: str) -> pd.DataFrame:
    s = RunStore(path)
    try:
        runs = s.runs()
    finally:
        s.close()
    if runs.empty:
        return runs.assign(rev=pd.Series(dtype=object))
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        notes = dict(con.execute("SELECT id, git_note FROM runs").fetchall())
    finally:
        con.close()
    runs["rev"] = runs["id"].map(lambda i: revision(notes.get(i)))
    # runs of one `--rev A --rev B` command share their start time: list them in the command's order, so the
    # first revision (the baseline, usually main) is the one a page opens on
    order = [_rev_rank(c, r) for c, r in zip(runs["command"], runs["rev"])]
    runs = runs.assign(_o=order).sort_values(["created_at", "_o"], ascending=[False, True], kind="stable")
    return runs.drop(columns="_o").reset_index(drop=True)


def _rev_rank(command: object, rev: object) -> int:
    revs = _REV.findall(str(command or ""))
    return revs.index(rev) if rev in revs else 0


# the pages call these: no store path or cache stamp to thread through
def all_runs() -> pd.DataFrame:
    """Every run, newest first, with ``rev`` (the revision name, where there is one)."""
    return _runs(_stamp(), source().path)


def get_run(run_id: str) -> dict:
    return _read("run", run_id, _stamp(), source().path)


def get_metrics(run_id: str) -> pd.DataFrame:
    return _read("metrics", run_id, _stamp(), source().path)


def get_case_devices(run_id: str) -> pd.DataFrame:
    """Which worker and GPU measured each case of a fan-out run (no rows for a one-process run)."""
    try:
        return _read("case_devices", run_id, _stamp(), source().path)
    except (sqlite3.Error, pd.errors.DatabaseError):  # a store written before fan-out existed has no such table
        return pd.DataFrame(columns=["case_id", "gpu_name"])


def get_launches(run_id: str) -> pd.DataFrame:
    return _read("launches", run_id, _stamp(), source().path)


def launch_counts() -> pd.DataFrame:
    """Per run with launch data: ``rows`` and ``timed`` (rows with timestamps, which a timeline can draw)."""
    return _launch_counts(_stamp(), source().path)


@st.cache_data(show_spinner=False, max_entries=16)
def _launch_counts(stamp: tuple, path: str) -> pd.DataFrame:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return pd.read_sql_query(
            "SELECT run_id, COUNT(*) AS rows, COUNT(start_ns) AS timed FROM launches GROUP BY run_id", con
        ).set_index("run_id")
    finally:
        con.close()


# ------------------------------------------------------------------------------------------ diff
_KEYS = (
    '"case"',
    "kernel",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "shared_mem_bytes",
)


def kernel_rows(con: sqlite3.Connection, run_id: str) -> pd.DataFrame:
    """What :func:`kprof.diff.kernel_changes` reads, without the launch table: one row per (case, kernel,
    launch configuration) in first-launch order, ``count`` the launches it stands for and ``duration_ns``
    their mean, so launches x duration sums to the same kernel time."""
    keys = ", ".join(_KEYS)
    q = (
        f"SELECT {keys}, 'kernel' AS kind, SUM(COALESCE(count, 1)) AS count, "
        f"SUM(duration_ns * COALESCE(count, 1)) * 1.0 / SUM(COALESCE(count, 1)) AS duration_ns "
        f"FROM launches WHERE run_id = ? AND (kind IS NULL OR kind = 'kernel') AND \"case\" IS NOT NULL "
        f"GROUP BY {keys} ORDER BY MIN(rowid)"
    )
    return pd.read_sql_query(q, con, params=(run_id,))


class _KernelRowsStore:
    """The store as :func:`kprof.diff.diff_runs` sees it, except ``launches``: the per-(case, kernel,
    configuration) aggregate it needs instead of the whole launch table (same kernel changes, a fraction of
    the rows)."""

    def __init__(self, store: RunStore) -> None:
        self._s = store

    def __getattr__(self, name: str):
        return getattr(self._s, name)

    def launches(self, ref: str) -> pd.DataFrame:
        return kernel_rows(self._s._conn, self._s.resolve(ref))


@st.cache_data(show_spinner=False, max_entries=256)
def _diff(run_a: str, run_b: str, threshold: float, stamp: tuple, path: str):  # -> kprof.diff.DiffResult
    """`kprof diff`'s own code, once per (pair, threshold, store state)."""
    from kprof.diff import DiffRule, diff_runs

    s = RunStore(path)
    try:
        return diff_runs(_KernelRowsStore(s), run_a, run_b, DiffRule(threshold=threshold))
    finally:
        s.close()


def get_diff(run_a: str, run_b: str, threshold: float = 0.03):
    return _diff(run_a, run_b, threshold, _stamp(), source().path)


# ----------------------------------------------------------------------------------- trace files
TRACES_ENV = "KPROF_TRACES"  # `kprof dashboard TRACE...` passes the files here (os.pathsep between them)


@st.cache_resource(show_spinner=False)
def _uploaded() -> list[str]:
    return []


def trace_files() -> list[str]:
    """Trace files to offer: those named on the command line, then those uploaded in this server's life."""
    named = [p for p in (runtime.env(TRACES_ENV) or "").split(os.pathsep) if p]
    return list(dict.fromkeys(named + _uploaded()))


def add_trace_file(path: str) -> None:
    _uploaded().append(path)


@functools.lru_cache(maxsize=1)
def _upload_root() -> Path:
    """This server's folder of uploads: private and fresh, as the demo's (:func:`_demo_path` says why not a fixed
    name in the shared temporary folder)."""
    folder = Path(tempfile.mkdtemp(prefix="kprof-dashboard-uploads-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def save_upload(name: str, content: bytes) -> str:
    """An uploaded trace written under its own name (parsers sniff by suffix), in a folder named by its content.

    One folder for all uploads let a second trace of the same name (``report.sqlite`` of another machine, the same
    trace after a change) overwrite the first: both entries then drew the second. By content, the same file
    uploaded again (the upload box hands it over on every rerun) is the same path, and the page adds it once."""
    folder = _upload_root() / hashlib.sha256(content).hexdigest()[:16]
    folder.mkdir(exist_ok=True)
    out = folder / Path(name).name
    if not out.exists():
        out.write_bytes(content)
    return str(out)


@st.cache_data(show_spinner=False, max_entries=16)
def _read_trace(path: str, mtime: float) -> pd.DataFrame:
    from kprof import launch_table
    from kprof.profilers import parse_trace

    p = Path(path)
    if p.suffix == ".csv":  # a launch table written by `kprof parse --csv` is read as it is
        head = p.open().readline()
        if "kernel" in head and "start_ns" in head and "duration_ns" in head:
            return launch_table.validate(pd.read_csv(p))
    return parse_trace(p)


def read_trace(path: str) -> pd.DataFrame:
    p = Path(path)
    if not p.exists():
        raise KprofError(f"trace file not found: {path}")
    return _read_trace(str(p.resolve()), p.stat().st_mtime)
