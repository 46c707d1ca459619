"""The run store: one SQLite file (standard library), raw traces as files beside it.

Default ``./kprof-runs/kprof.db``; ``--store PATH`` or ``KPROF_STORE`` override it (a directory means
``DIR/kprof.db``). Every write is one transaction: a run is inserted as ``running`` before its first
case, each finished case lands whole (metrics + samples) or not at all, and the run is marked
``complete`` or ``incomplete`` at the end. A run whose process died without saying so (SIGKILL, power)
stays ``running`` on disk and is reported as ``incomplete`` once its process is gone.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import socket
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from kprof import launch_table, runtime
from kprof.errors import StoreError, UnknownRunError
from kprof.metrics import METRIC_COLUMNS
from kprof.metrics import TEXT_METRICS as _TEXT_METRICS

DEFAULT_STORE = Path("kprof-runs") / "kprof.db"
SCHEMA_VERSION = 1
# the unit stored beside each samples kind that is not in microseconds
SAMPLE_UNITS: dict[str, str] = {"gpu": "ms", "cold_clock": "MHz", "sm_clock_max": "MHz"}


def default_store_path(explicit: str | Path | None = None) -> Path:
    raw = explicit or runtime.env("KPROF_STORE") or DEFAULT_STORE
    path = Path(raw).expanduser()
    if path.is_dir() or (not path.suffix and not path.exists()):
        path = path / "kprof.db"
    return path


@dataclass(frozen=True)
class RunRecord:
    """Everything known about a run when it starts."""

    family: str
    mode: str  # "gpu" or "interpreter"
    command: str
    config: Mapping[str, Any]
    git_commit: str | None
    git_dirty: bool | None
    git_note: str | None
    source_hashes: Mapping[str, str]
    device: Mapping[str, Any]
    versions: Mapping[str, Any]
    profiler: str
    profiler_version: str | None
    ceiling_gbps: float | None
    ceiling: Mapping[str, Any] | None


@dataclass(frozen=True)
class RunPlan:
    """What a run set out to measure, from its stored config: these providers (less those it skipped) at each of these
    (shape, dtype) points. A run cut before it finished (a budget, a killed process) stored part of it: a verdict or
    a best configuration drawn from its cases must say where cases it planned did not run."""

    providers: tuple[str, ...]
    points: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> RunPlan:
        """The plan of a stored run (``RunStore.run``); empty for a run that recorded none."""
        config = run.get("config") or {}
        skipped = {str(s[0]) if isinstance(s, list | tuple) else str(s) for s in config.get("skipped_providers") or ()}
        providers = tuple(str(p) for p in config.get("providers") or () if str(p) not in skipped)
        points = tuple((str(s), str(d)) for s in config.get("shapes") or () for d in config.get("dtypes") or ())
        return cls(providers, points)

    def not_run(self, stored: Iterable[str]) -> list[str]:
        """The planned providers missing from ``stored`` (the providers a point's stored cases name), sorted."""
        return sorted(set(self.providers) - set(stored))

    def unreached(self, stored: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """The planned (shape, dtype) points with no stored case (``stored``: the points that have one), in plan
        order."""
        have = set(stored)
        return [p for p in self.points if p not in have]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def plain(value: Any) -> Any:
    """pandas/numpy scalars, NA and NaN -> plain Python (None for missing), for sqlite and JSON."""
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):  # numpy / pandas scalars
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _unused_run_id(cx: sqlite3.Connection) -> str:
    """A run id (second, then 4 random hex digits) no run in the store has yet.

    Called inside the write transaction, so no other process can take the id between the check and the insert.
    Runs begun within one second share the prefix; 4 hex digits alone collide for 30 runs a second about once in
    150 tries, which refused a run with a bare IntegrityError before the check.
    """
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-")
    while True:
        run_id = stamp + secrets.token_hex(2)
        if cx.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            return run_id


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _process_started(pid: int) -> datetime | None:
    """When process ``pid`` started (UTC), from Linux's /proc; None elsewhere or where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2 :].split()[19])  # field 22, starttime: clock ticks after boot
        boot = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime")
        )
        return datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"), timezone.utc)
    except (OSError, ValueError, IndexError, StopIteration):
        return None


# How much later than its run's creation a live process with the run's pid may have started and still be the run's:
# the start time is read in clock ticks, the creation stamp kept to the second
PID_START_SLACK_S = 2.0


def _pid_runs_it(pid: int, created_at: Any) -> bool:
    """Whether process ``pid`` on this host may still be the one that began the run created at ``created_at``: alive,
    and (where its start time can be read) started no later than the run was created. A pid the system gave to
    another process after the run's own died would otherwise keep the run 'running' for as long as that one lives."""
    if not _pid_alive(pid):
        return False
    started = _process_started(pid)
    if started is None or not created_at:
        return True
    try:
        created = datetime.fromisoformat(str(created_at))
    except ValueError:
        return True
    if created.tzinfo is None:
        created = created.replace(tzinfo=timezone.utc)
    return (started - created).total_seconds() <= PID_START_SLACK_S


# pandas dtype of a launch-table column -> SQLite column type (anything else is a float)
_SQL_TYPES = {"string": "TEXT", "Int64": "INTEGER"}


def _metric_sql_type(column: str) -> str:
    """SQLite type of a metrics column: text columns TEXT, the rest REAL."""
    return "TEXT" if column in _TEXT_METRICS else "REAL"


class RunStore:
    def __init__(self, path: str | Path | None = None, *, create: bool = True) -> None:
        """Open (``create``: or make) the store; a file that is not a kprof store is refused, untouched."""
        from kprof.store_guard import check_store_file, check_store_readable

        self.path = default_store_path(path)
        self.root = self.path.parent
        (check_store_file if create else check_store_readable)(self.path)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store folder {self.root}: {exc}") from None
        try:
            self._conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._create_schema()
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is not a readable kprof store ({exc}); move it aside or pass --store with another path"
            ) from None

    def close(self) -> None:
        self._conn.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection, for modules that keep their own tables in the store (``kprof.variance``)."""
        return self._conn

    # ------------------------------------------------------------------------------------------ schema
    def _create_schema(self) -> None:
        metric_cols = ", ".join(f'"{c}" {_metric_sql_type(c)}' for c in METRIC_COLUMNS if c != "case")
        launch_cols = ", ".join(f'"{c.name}" {_SQL_TYPES.get(c.dtype, "REAL")}' for c in launch_table.COLUMNS)
        with self._tx() as cx:
            cx.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            cx.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            cx.execute(
                """CREATE TABLE IF NOT EXISTS runs (
                    id TEXT PRIMARY KEY, created_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
                    mode TEXT, family TEXT, command TEXT, config TEXT, git_commit TEXT, git_dirty INTEGER,
                    git_note TEXT, source_hashes TEXT, device TEXT, device_name TEXT, driver TEXT,
                    versions TEXT, profiler TEXT, profiler_version TEXT, ceiling_gbps REAL, ceiling TEXT,
                    pid INTEGER, host TEXT, report_md TEXT, trace_path TEXT, notes TEXT, error TEXT)"""
            )
            cx.execute(
                f"""CREATE TABLE IF NOT EXISTS cases (run_id TEXT NOT NULL REFERENCES runs(id), idx INTEGER,
                    case_id TEXT NOT NULL, {metric_cols}, PRIMARY KEY (run_id, case_id))"""
            )
            cx.execute(
                """CREATE TABLE IF NOT EXISTS samples (run_id TEXT NOT NULL, case_id TEXT NOT NULL,
                    kind TEXT NOT NULL, unit TEXT, data TEXT NOT NULL, PRIMARY KEY (run_id, case_id, kind))"""
            )
            cx.execute(f"CREATE TABLE IF NOT EXISTS launches (run_id TEXT NOT NULL, {launch_cols})")
            # one row per external tool invocation (nsys profile, nsys export, ncu, ...), failed ones included
            cx.execute(
                """CREATE TABLE IF NOT EXISTS captures (run_id TEXT NOT NULL, seq INTEGER, profiler TEXT,
                    tool_version TEXT, command TEXT, argv TEXT, returncode INTEGER, timed_out INTEGER,
                    seconds REAL, stdout_tail TEXT, stderr_tail TEXT, notes TEXT)"""
            )
            cx.execute("CREATE INDEX IF NOT EXISTS launches_run ON launches(run_id)")
            # which worker / GPU measured each case of a fan-out run (a one-process run has no rows here)
            cx.execute(
                """CREATE TABLE IF NOT EXISTS case_devices (run_id TEXT NOT NULL, case_id TEXT NOT NULL,
                    worker TEXT, host TEXT, gpu_index TEXT, gpu_uuid TEXT, gpu_name TEXT, gpu_serial TEXT,
                    attempt INTEGER, PRIMARY KEY (run_id, case_id))"""
            )
            # columns added to METRIC_COLUMNS / the launch table after a store was created
            have = {r["name"] for r in cx.execute("PRAGMA table_info(cases)")}
            for c in METRIC_COLUMNS:
                if c != "case" and c not in have:
                    cx.execute(f'ALTER TABLE cases ADD COLUMN "{c}" {_metric_sql_type(c)}')
            have = {r["name"] for r in cx.execute("PRAGMA table_info(launches)")}
            for c in launch_table.COLUMNS:
                if c.name not in have:
                    cx.execute(f'ALTER TABLE launches ADD COLUMN "{c.name}" {_SQL_TYPES.get(c.dtype, "REAL")}')

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        else:
            self._conn.execute("COMMIT")

    # ------------------------------------------------------------------------------------------ writes
    def begin_run(self, record: RunRecord) -> str:
        d = asdict(record)
        with self._tx() as cx:
            run_id = _unused_run_id(cx)
            cx.execute(
                """INSERT INTO runs (id, created_at, status, mode, family, command, config, git_commit,
                    git_dirty, git_note, source_hashes, device, device_name, driver, versions, profiler,
                    profiler_version, ceiling_gbps, ceiling, pid, host)
                   VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    run_id,
                    _now(),
                    d["mode"],
                    d["family"],
                    d["command"],
                    _json(d["config"]),
                    d["git_commit"],
                    None if d["git_dirty"] is None else int(d["git_dirty"]),
                    d["git_note"],
                    _json(d["source_hashes"]),
                    _json(d["device"]),
                    d["device"].get("name"),
                    d["device"].get("driver_version"),
                    _json(d["versions"]),
                    d["profiler"],
                    d["profiler_version"],
                    d["ceiling_gbps"],
                    _json(d["ceiling"]),
                    os.getpid(),
                    socket.gethostname(),
                ),
            )
        return run_id

    def add_case(self, run_id: str, idx: int, row: Mapping[str, Any], samples: Mapping[str, Sequence[float]]) -> None:
        """One case's metrics and raw samples, in one transaction; a case written again keeps nothing of its
        earlier write (a fan-out case given up on is rewritten as an error row: the samples and GPU of an
        earlier write must not stay beside it as its own)."""
        cols = [c for c in METRIC_COLUMNS if c != "case" and c in row]
        with self._tx() as cx:
            for table in ("samples", "case_devices"):
                cx.execute(f"DELETE FROM {table} WHERE run_id = ? AND case_id = ?", (run_id, row["case"]))
            cx.execute(
                f"INSERT OR REPLACE INTO cases (run_id, idx, case_id, "
                f"{', '.join(chr(34) + c + chr(34) for c in cols)}) "
                f"VALUES (?, ?, ?, {', '.join('?' for _ in cols)})",
                (run_id, idx, row["case"], *[plain(row[c]) for c in cols]),
            )
            for kind, values in samples.items():
                if values:
                    unit = SAMPLE_UNITS.get(kind, "us")
                    cx.execute(
                        "INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?, ?)",
                        (run_id, row["case"], kind, unit, json.dumps([float(v) for v in values])),
                    )

    def add_case_device(self, run_id: str, case_id: str, device: Mapping[str, Any]) -> None:
        """The worker and GPU (index, UUID, name, serial) that measured a case of a fan-out run."""
        cols = ("worker", "host", "gpu_index", "gpu_uuid", "gpu_name", "gpu_serial", "attempt")
        with self._tx() as cx:
            cx.execute(
                f"INSERT OR REPLACE INTO case_devices (run_id, case_id, {', '.join(cols)}) "
                f"VALUES (?, ?, {', '.join('?' for _ in cols)})",
                (run_id, case_id, *[plain(device.get(c)) for c in cols]),
            )

    def case_devices(self, ref: str) -> pd.DataFrame:
        """case_id, worker, host, gpu_index, gpu_uuid, gpu_name, gpu_serial, attempt; empty for a one-process run."""
        run_id = self.resolve(ref)
        return pd.read_sql_query(
            "SELECT * FROM case_devices WHERE run_id = ? ORDER BY case_id", self._conn, params=(run_id,)
        ).drop(columns=["run_id"])

    def update_cases(self, run_id: str, updates: pd.DataFrame) -> None:
        """Fill metrics columns of existing cases (e.g. launch metrics after the profiler pass); a missing
        value in ``updates`` keeps what the case has (registers recorded at launch stay when a profiler
        does not report them)."""
        cols = [c for c in updates.columns if c != "case" and c in METRIC_COLUMNS]
        if updates.empty or not cols:
            return
        sets = ", ".join(f'"{c}" = COALESCE(?, "{c}")' for c in cols)
        with self._tx() as cx:
            for rec in updates.to_dict("records"):
                cx.execute(
                    f"UPDATE cases SET {sets} WHERE run_id = ? AND case_id = ?",
                    (*[plain(rec[c]) for c in cols], run_id, rec["case"]),
                )

    def add_launches(self, run_id: str, launches: pd.DataFrame) -> None:
        table = launch_table.validate(launches)
        if table.empty:
            return
        names = list(launch_table.COLUMN_NAMES)
        rows = [(run_id, *[plain(v) for v in rec]) for rec in table[names].itertuples(index=False, name=None)]
        with self._tx() as cx:
            cx.executemany(
                f"INSERT INTO launches (run_id, {', '.join(chr(34) + n + chr(34) for n in names)}) "
                f"VALUES (?, {', '.join('?' for _ in names)})",
                rows,
            )

    def clear_launches(self, run_id: str) -> None:
        with self._tx() as cx:
            cx.execute("DELETE FROM launches WHERE run_id = ?", (run_id,))

    def add_capture(self, run_id: str, profiler: str, version: str, run: Any, notes: str | None = None) -> None:
        """Record one external tool invocation (a :class:`kprof.tools.ToolRun`), whatever its outcome."""
        with self._tx() as cx:
            seq = cx.execute("SELECT COUNT(*) FROM captures WHERE run_id = ?", (run_id,)).fetchone()[0]
            cx.execute(
                "INSERT INTO captures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    seq,
                    profiler,
                    version,
                    run.command,
                    json.dumps(list(run.argv)),
                    run.returncode,
                    int(run.timed_out),
                    run.seconds,
                    run.stdout_tail,
                    run.stderr_tail,
                    notes,
                ),
            )

    def captures(self, ref: str) -> pd.DataFrame:
        run_id = self.resolve(ref)
        return pd.read_sql_query(
            "SELECT * FROM captures WHERE run_id = ? ORDER BY seq", self._conn, params=(run_id,)
        ).drop(columns=["run_id"])

    def set_fields(self, run_id: str, **fields: Any) -> None:
        allowed = {"trace_path", "notes", "error", "report_md", "profiler_version", "profiler"}
        bad = set(fields) - allowed
        if bad:
            raise StoreError(f"cannot set run fields {sorted(bad)}")
        with self._tx() as cx:
            for k, v in fields.items():
                cx.execute(f"UPDATE runs SET {k} = ? WHERE id = ?", (v, run_id))

    def finish_run(self, run_id: str, status: str, *, report_md: str | None = None, error: str | None = None) -> None:
        if status not in ("complete", "incomplete", "failed"):
            raise StoreError(f"bad run status {status!r}")
        with self._tx() as cx:
            cx.execute(
                "UPDATE runs SET status = ?, finished_at = ?, report_md = COALESCE(?, report_md), "
                "error = COALESCE(?, error) WHERE id = ?",
                (status, _now(), report_md, error, run_id),
            )

    def trace_dir(self, run_id: str) -> Path:
        path = self.root / "traces" / run_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    # ------------------------------------------------------------------------------------------- reads
    def runs(self) -> pd.DataFrame:
        """Every run, newest first, with the effective status and case counts."""
        q = """SELECT r.id, r.created_at, r.finished_at, r.status, r.mode, r.family, r.device_name,
                      r.profiler, r.git_commit, r.git_dirty, r.ceiling_gbps, r.pid, r.host,
                      r.command, COUNT(c.case_id) AS cases,
                      SUM(CASE WHEN c.status IN ('fail', 'error') THEN 1 ELSE 0 END) AS failures,
                      SUM(CASE WHEN c.params IS NOT NULL THEN 1 ELSE 0 END) AS swept
               FROM runs r LEFT JOIN cases c ON c.run_id = r.id
               GROUP BY r.id ORDER BY r.created_at DESC, r.rowid DESC"""
        df = pd.read_sql_query(q, self._conn)
        if not df.empty:
            rows = zip(df["status"], df["pid"], df["host"], df["created_at"])
            df["status"] = [self.effective_status(s, p, h, c) for s, p, h, c in rows]
            df["failures"] = df["failures"].fillna(0).astype(int)
            df["swept"] = df["swept"].fillna(0).astype(int)  # cases with pinned meta-parameters: a sweep
        return df.drop(columns=["pid", "host"])

    @staticmethod
    def effective_status(status: str, pid: Any, host: Any, created_at: Any = None) -> str:
        """A run's status as readers take it: 'running' whose process on this host is gone, or whose pid now belongs to
        a process started after the run was created (``created_at``), reads 'incomplete'."""
        if status == "running" and host == socket.gethostname() and pid and not _pid_runs_it(int(pid), created_at):
            return "incomplete"
        return status

    def resolve(self, ref: str) -> str:
        """``latest``, a full run id, or a unique prefix of one -> the run id."""
        if ref == "latest":
            row = self._conn.execute("SELECT id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
            if row is None:
                raise UnknownRunError(f"the store {self.path} has no runs yet; run `kprof profile FAMILY` first")
            return row["id"]
        # a plain prefix match: with LIKE, '_' and '%' in the reference would be wildcards
        rows = self._conn.execute("SELECT id FROM runs WHERE substr(id, 1, ?) = ?", (len(ref), ref)).fetchall()
        if len(rows) == 1 or ref in {r["id"] for r in rows}:  # a full id is that run, even where it prefixes others
            return ref if len(rows) > 1 else rows[0]["id"]
        if not rows:
            raise UnknownRunError(f"no run {ref!r} in {self.path}; `kprof runs` lists them")
        raise UnknownRunError(f"{ref!r} matches {len(rows)} runs; give more of the id")

    def run(self, ref: str) -> dict:
        run_id = self.resolve(ref)
        row = dict(self._conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
        for k in ("config", "source_hashes", "device", "versions", "ceiling"):
            row[k] = json.loads(row[k]) if row.get(k) else None
        row["status"] = self.effective_status(row["status"], row["pid"], row["host"], row["created_at"])
        return row

    def metrics(self, ref: str) -> pd.DataFrame:
        run_id = self.resolve(ref)
        df = pd.read_sql_query("SELECT * FROM cases WHERE run_id = ? ORDER BY idx", self._conn, params=(run_id,))
        df = df.rename(columns={"case_id": "case"}).drop(columns=["run_id"])
        if "ok" in df:
            df["ok"] = df["ok"].fillna(0).astype(bool)
        return df

    def samples(self, ref: str, case: str | None = None, mode: str | None = None) -> pd.DataFrame:
        """Long table: case, kind, unit, value. Kinds: ``gpu`` (ms, the declared mode's samples, what diffs
        compare), ``host`` (us) and, per timing mode (kprof.timing), ``cold``, ``cold_span``, ``cold_sum``,
        ``warm``, ``warm_span``, ``warm_sum``, ``graph``, ``events`` (us), and each kernel of a cold call alone,
        ``cold_kernel/POSITION/NAME`` (us, :func:`kprof.timing.cold_kernel_kind`); ``cold_clock``, the SM clock each
        cold call started at, and ``sm_clock_max``, the GPU's highest (MHz). ``case`` / ``mode`` filter
        (``mode`` is a kind)."""
        run_id = self.resolve(ref)
        sql, args = "SELECT case_id, kind, unit, data FROM samples WHERE run_id = ?", [run_id]
        if case is not None:
            sql, args = sql + " AND case_id = ?", [*args, case]
        if mode is not None:
            sql, args = sql + " AND kind = ?", [*args, mode]
        rows = self._conn.execute(sql, args)
        out = [(r["case_id"], r["kind"], r["unit"], v) for r in rows for v in json.loads(r["data"])]
        return pd.DataFrame(out, columns=["case", "kind", "unit", "value"])

    def mode_samples_us(self, ref: str, case: str, mode: str) -> list[float]:
        """One case's per-call samples of one mode (or stored kind), in microseconds."""
        df = self.samples(ref, case, mode)
        return [v * 1e3 if u == "ms" else v for u, v in zip(df["unit"], df["value"])]

    def launches(self, ref: str) -> pd.DataFrame:
        run_id = self.resolve(ref)
        df = pd.read_sql_query("SELECT * FROM launches WHERE run_id = ?", self._conn, params=(run_id,))
        return launch_table.validate(df.drop(columns=["run_id"]))
