"""Run-to-run variance: how far the median of one case moves between separate runs of unchanged code.

Per-call samples of one run share that run's clocks, memory placement, allocator state and L2 history, so
their spread says nothing about how much a second run of the same code will differ. Two separate runs are
compared on a model with both parts, in log space (``m`` = a run's median of a case)::

    log m_B - log m_A = change + (e_B - e_A) + within-run error
    e_A, e_B ~ N(0, sigma_run^2) independently   ->   between-run part has variance 2 sigma_run^2

``sigma_run`` is learnt per device from repeated runs of identical sources (:func:`calibrate`, ``kprof
noise``): for every case measured in at least two such runs, the sample standard deviation of the log
medians; pooled per size class of the case's median time (tiny kernels drift more); the pooled value is
replaced by its one-sided 95% upper confidence bound (chi-square, ``sum of (runs - 1)`` degrees of freedom),
because a floor estimated from few runs is itself uncertain and a too-low floor is the costly error. A case
that drifted more than its class in the calibration uses its own spread. Without a calibration for the
device, :data:`DEFAULT_SIGMA_RUN` applies, or for calls under 10 us :data:`DEFAULT_SIGMA_RUN_BY_CLASS` (see their
comments for where they come from).

Calibrations are kept in the run store (table ``noise``), one row per size class and per case, so every
later diff on that device uses them; the newest calibration of a device wins. A calibration holds for the kind of
samples it was learnt from (``kprof noise --samples KIND``; ``gpu``, the declared mode's GPU times, by default):
host times and graph replays move far more between runs than GPU times do (:func:`unmeasured_floor`), so a diff
of those between separate runs takes their own calibration, or gives no timing verdict.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from kprof.errors import KprofError

# Per-run standard deviation of log(median) when no calibration exists. Derived from the committed H100
# stores under benchmarks/results/ (matmul-last-gap, matmul-tma, rmsnorm-linear-pdl; 2026-11-22): 60 pairs
# of separate runs of unchanged PyTorch and cuBLAS
# providers (rmsnorm_linear, swiglu; 16 us to 2.4 ms per call), each pair on a different machine. The
# pairwise log ratios had RMS 2.9% (largest 9.2%), i.e. sigma_run = 2.0%; its 95% upper confidence bound
# (60 degrees of freedom) is 2.4%. Machine-to-machine spread is included, so this is conservative for two
# runs on one machine and right for runs on whatever GPU of the kind the scheduler hands out.
DEFAULT_SIGMA_RUN = 0.024
DEFAULT_SOURCE = "60 separate-run pairs of unchanged providers on H100s, 2026-11-22"
# Calls under 10 us move more between runs, and the pairs above held none. 14 separate `kprof profile` runs of
# unchanged rmsnorm bf16 code on one H100 (benchmarks/results/cold-placement/, 2026-11-23; 15 cases of 1.9-6.9
# us: triton_tuned, torch.compile, Liger) pool to sigma_run = 3.5% with 133 degrees of freedom, 3.85% at the
# 95% upper bound; torch.compile's medians moved by up to 10.6% and Liger's by up to 16% between two runs.
DEFAULT_SIGMA_RUN_BY_CLASS = {"<10us": 0.0385}
DEFAULT_SOURCE_BY_CLASS = {"<10us": "14 separate runs of unchanged rmsnorm cases of 1.9-6.9 us on an H100, 2026-11-23"}

# upper edges (us) of the size classes of a case's median time; a class pools the cases inside it
SIZE_EDGES_US = (10.0, 100.0, 1000.0)
UPPER_CONFIDENCE = 0.95  # of the chi-square bound on a pooled sigma


def size_class(median_us: float) -> str:
    """``<10us``, ``10-100us``, ``100us-1ms``, ``>=1ms`` (``?`` when unknown)."""
    if not (median_us > 0):
        return "?"
    labels = ("<10us", "10-100us", "100us-1ms", ">=1ms")
    for edge, label in zip(SIZE_EDGES_US, labels):
        if median_us < edge:
            return label
    return labels[-1]


@dataclass(frozen=True)
class Floor:
    """The between-run part of one comparison: ``sigma_run`` and where it came from."""

    sigma_run: float  # per-run standard deviation of log(median)
    source: str  # "calibrated" | "default" | "within-run" | "none" (nothing measured: no verdict between runs)
    detail: str = ""  # e.g. "4 runs on NVIDIA H100 80GB HBM3, 2026-11-23, size class <10us"

    def pair_sd(self) -> float:
        """Standard deviation of log(m_B / m_A) from run-to-run variance alone."""
        return math.sqrt(2.0) * self.sigma_run

    def half_width(self, confidence: float = 0.95) -> float:
        """Relative change that unchanged code reaches between two runs at ``confidence`` (the floor)."""
        return ratio_half_width(self.sigma_run, self.sigma_run, confidence=confidence)

    def describe(self, confidence: float = 0.95) -> str:
        if self.source == "within-run":
            return "within-run only (interleaved rounds of one invocation)"
        if self.source == "none":
            return f"no run-to-run floor ({self.detail})"
        pct = f"{100 * self.half_width(confidence):.1f}%"
        if self.source == "calibrated":
            return f"run-to-run floor {pct} (calibrated from {self.detail})"
        return f"default floor {pct} (uncalibrated: {self.detail or DEFAULT_SOURCE}; run `kprof noise`)"


def ratio_half_width(sigma_a: float, sigma_b: float, runs: int = 1, confidence: float = 0.95) -> float:
    """Relative change of a ratio of two medians that run-to-run variance alone reaches at ``confidence``,
    each side drifting on its own by its ``sigma_run`` (per-run sd of the log median), the ratio averaged over
    ``runs`` runs: the same case in two runs (``Floor.half_width``) or two cases within runs (``kprof grid``)."""
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    return math.expm1(z * math.hypot(sigma_a, sigma_b) / math.sqrt(max(runs, 1)))


WITHIN_RUN = Floor(0.0, "within-run")


def _when(stamp: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(stamp)) if stamp else None
    except ValueError:
        return None


def one_invocation(run_a: Mapping[str, Any], run_b: Mapping[str, Any]) -> bool:
    """Whether two runs are arms of one ``kprof profile --rev A --rev B`` invocation: one process, timing rounds
    alternated, the runs begun together and finished together (a run without ``--rev`` is an invocation of its own).
    The same pid on the same host is not enough: process ids are reused (a container's first process is pid 1 on
    every start), so invocations on different days can share one; their runs must also overlap in time. A run with
    no finish recorded (killed) counts from its start alone."""
    revs = (run_a.get("config") or {}).get("interleaved_revisions")
    if not revs or revs != (run_b.get("config") or {}).get("interleaved_revisions"):
        return False
    if not run_a.get("pid") or (run_a.get("pid"), run_a.get("host")) != (run_b.get("pid"), run_b.get("host")):
        return False
    ca, cb = _when(run_a.get("created_at")), _when(run_b.get("created_at"))
    if ca is None or cb is None:
        return False
    fa, fb = _when(run_a.get("finished_at")) or ca, _when(run_b.get("finished_at")) or cb
    return cb <= fa and ca <= fb


def unmeasured_floor(kind: str) -> Floor:
    """The floor of ``kind`` samples that no calibration of the device covers and no default stands for: two
    separate runs then get no timing verdict. The defaults were learnt from the declared mode's GPU times; other
    samples move far more between runs. Five separate runs of unchanged rmsnorm code on an H100
    (``benchmarks/results/diff-noise/planted/``, 47 cases) moved the cold GPU medians 0.923-1.044x between pairs of
    runs, the graph replays' 0.873-1.136x and the host times' 0.473-2.396x: with the GPU floor applied to them, one
    pair of those runs read 25 cases SLOWER and 8 FASTER in host time."""
    return Floor(
        math.inf,
        "none",
        f"{kind} samples: no calibration of this device for them, and the default floor is the GPU time's; "
        f"run `kprof noise RUNS --samples {kind}` on repeated runs (only the gpu samples alternate between --rev "
        "arms, the sensitive comparison)",
    )


def default_floor(median_us: float | None = None) -> Floor:
    """The uncalibrated floor for a case of ``median_us`` (its size class's where one was measured)."""
    cls = size_class(median_us) if median_us is not None else "?"
    if cls in DEFAULT_SIGMA_RUN_BY_CLASS:
        return Floor(DEFAULT_SIGMA_RUN_BY_CLASS[cls], "default", DEFAULT_SOURCE_BY_CLASS[cls])
    return Floor(DEFAULT_SIGMA_RUN, "default", DEFAULT_SOURCE)


# ------------------------------------------------------------------------------------------ estimation
@dataclass(frozen=True)
class Calibration:
    device: str
    created_at: str
    runs: tuple[str, ...]
    classes: pd.DataFrame  # size_class, sigma (pooled), sigma_upper, df, cases
    cases: pd.DataFrame  # key, size_class, median_us, sigma, df, runs, max_pair_dev
    kind: str = "gpu"  # the samples it was learnt from: its floor holds for those alone

    def floor_for(self, key: str, median_us: float) -> Floor:
        cls = size_class(median_us)
        row = self.classes[self.classes["size_class"] == cls]
        if row.empty:  # no calibrated case of that size: the largest class bound is the safe stand-in
            sigma = float(self.classes["sigma_upper"].max())
            where = f"no calibrated case in size class {cls}, largest class floor used"
        else:
            sigma = float(row["sigma_upper"].iloc[0])
            where = f"size class {cls}"
        own = self.cases[self.cases["key"] == key]
        if not own.empty and float(own["sigma"].iloc[0]) > sigma:
            sigma = float(own["sigma"].iloc[0])
            where = "this case's own spread"
        samples = "" if self.kind == "gpu" else f" ({self.kind} samples)"
        detail = f"{len(self.runs)} runs on {self.device}{samples}, {self.created_at[:10]}; {where}"
        return Floor(sigma, "calibrated", detail)


def case_key(family: str, provider: str, shape: str, dtype: str) -> str:
    return f"{family}/{provider}/{shape}/{dtype}"


def run_medians(store: Any, run_ids: Iterable[str], kind: str = "gpu") -> pd.DataFrame:
    """Long table: run, key, median_us of each correct case's ``kind`` samples."""
    from kprof.diff import samples_us  # one definition of the sample units

    rows = []
    for rid in run_ids:
        m = store.metrics(rid)
        ok = m[m["status"] == "ok"]
        s = samples_us(store.samples(rid), kind)
        for r in ok.itertuples(index=False):
            x = s.get(r.case)
            x = x[np.isfinite(x) & (x > 0)] if x is not None else None  # a NaN median would make the floor NaN
            if x is not None and x.size:
                rows.append(
                    {
                        "run": rid,
                        "key": case_key(r.family, r.provider, r.shape, r.dtype),
                        "median_us": float(np.median(x)),
                    }
                )
    return pd.DataFrame(rows, columns=["run", "key", "median_us"])


def estimate(medians: pd.DataFrame, groups: Mapping[str, str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-case and per-size-class spread of log medians between runs.

    ``groups`` maps run id -> source identity; a case's spread is taken only among runs of one identity
    (a case measured under two different sources is two groups, each with its own degrees of freedom)."""
    groups = groups or {}
    m = medians.assign(group=medians["run"].map(lambda r: groups.get(r, "")), log=np.log(medians["median_us"]))
    case_rows = []
    for key, g in m.groupby("key"):
        ss, df, n_runs, devs = 0.0, 0, 0, [0.0]
        for _, gg in g.groupby("group"):
            if len(gg) < 2:
                continue
            x = gg["log"].to_numpy()
            ss += float(((x - x.mean()) ** 2).sum())
            df += len(x) - 1
            n_runs += len(x)
            devs.append(float(np.ptp(x)))
        if df == 0:
            continue
        med = float(np.exp(g["log"].median()))
        case_rows.append(
            {
                "key": key,
                "size_class": size_class(med),
                "median_us": med,
                "sigma": math.sqrt(ss / df),
                "df": df,
                "runs": n_runs,
                "max_pair_dev": math.expm1(max(devs)),
            }
        )
    cases = pd.DataFrame(case_rows, columns=["key", "size_class", "median_us", "sigma", "df", "runs", "max_pair_dev"])
    class_rows = []
    for cls, g in cases.groupby("size_class"):
        df = int(g["df"].sum())
        pooled = math.sqrt(float((g["sigma"] ** 2 * g["df"]).sum()) / df)
        upper = pooled * math.sqrt(df / float(stats.chi2.ppf(1 - UPPER_CONFIDENCE, df)))
        class_rows.append({"size_class": cls, "sigma": pooled, "sigma_upper": upper, "df": df, "cases": len(g)})
    classes = pd.DataFrame(class_rows, columns=["size_class", "sigma", "sigma_upper", "df", "cases"])
    return cases, classes


def source_identity(run: Mapping[str, Any]) -> str:
    """Runs count as repeats of one another when their recorded source hashes are equal."""
    return json.dumps(run.get("source_hashes") or {}, sort_keys=True)


def code_id(run: Mapping[str, Any]) -> str:
    """A short name for a run's kernel code (8 hex digits of a hash of its recorded source hashes): equal where
    :func:`source_identity` is (and, 32 bits, for two different codes about once in 4 billion); "" for a run that
    recorded none (whose code nothing can compare)."""
    if not run.get("source_hashes"):
        return ""
    return hashlib.sha256(source_identity(run).encode()).hexdigest()[:8]


def calibrate(store: Any, refs: Iterable[str], kind: str = "gpu") -> Calibration:
    """Learn the floor from runs (ids or a family name: all its complete GPU runs) and keep it in the store."""
    runs = select_runs(store, refs)
    devices = {r.get("device_name") for r in runs}
    if len(devices) != 1:
        raise KprofError(
            f"kprof noise: the runs are on {len(devices)} devices ({', '.join(map(str, devices))}); "
            "calibrate one device at a time (pass the runs of one device)"
        )
    runs, merged = separate_repeats(runs)
    groups = {r["id"]: source_identity(r) for r in runs}
    per_identity: dict[str, int] = {}
    for g in groups.values():
        per_identity[g] = per_identity.get(g, 0) + 1
    if max(per_identity.values()) < 2:
        also = (
            f"; {len(merged)} run(s) of identical sources were arms of one invocation of another and count as that "
            "one run"
            if merged
            else ""
        )
        raise KprofError(
            "kprof noise: no two of these runs have identical source hashes, so none repeats another"
            f"{also} (profile the same code at least twice, in separate processes, then run kprof noise)"
        )
    cases, classes = estimate(run_medians(store, groups, kind), groups)
    if cases.empty:
        raise KprofError(
            f"kprof noise: the repeated runs share no correct case with {kind!r} samples (GPU runs needed)"
        )
    cal = Calibration(
        device=str(devices.pop()),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        runs=tuple(groups),
        classes=classes,
        cases=cases,
        kind=kind,
    )
    save(store, cal)
    return cal


def separate_repeats(runs: list[dict]) -> tuple[list[dict], list[str]]:
    """The runs that count as repeats (the first of each invocation per source identity) and the ids left out.

    Arms of one ``--rev A --rev A`` invocation share its process and alternate timing rounds, so they agree far
    more closely than separate runs do: counted as two repeats they would pull the run-to-run floor down, and a
    too-low floor is the costly error (calls of unchanged code)."""
    kept: list[dict] = []
    merged: list[str] = []
    for r in runs:
        if any(source_identity(k) == source_identity(r) and one_invocation(k, r) for k in kept):
            merged.append(r["id"])
        else:
            kept.append(r)
    return kept, merged


def select_runs(store: Any, refs: Iterable[str]) -> list[dict]:
    refs = list(refs)
    all_runs = store.runs()
    families = set(all_runs["family"].dropna()) if not all_runs.empty else set()
    out: list[dict] = []
    for ref in refs:
        if ref in families:
            sel = all_runs[
                (all_runs["family"] == ref) & (all_runs["status"] == "complete") & (all_runs["mode"] == "gpu")
            ]
            out += [store.run(i) for i in sel["id"]]
        else:
            out.append(store.run(ref))
    out = [r for r in out if r.get("mode") == "gpu"]
    if len(out) < 2:
        raise KprofError(
            f"kprof noise: {len(out)} GPU run(s) selected by {' '.join(refs)}; at least two separate "
            "runs of the same code are needed"
        )
    seen: dict[str, dict] = {r["id"]: r for r in out}
    return list(seen.values())


# ---------------------------------------------------------------------------------------------- store
_SCHEMA = """CREATE TABLE IF NOT EXISTS noise (calibration TEXT NOT NULL, created_at TEXT NOT NULL,
             device TEXT NOT NULL, scope TEXT NOT NULL, key TEXT NOT NULL, size_class TEXT, sigma REAL,
             sigma_upper REAL, df INTEGER, n INTEGER, median_us REAL, max_pair_dev REAL, runs TEXT,
             kind TEXT NOT NULL DEFAULT 'gpu')"""
_COLUMNS = (
    "calibration, created_at, device, scope, key, size_class, sigma, sigma_upper, df, n, median_us, max_pair_dev, "
    "runs, kind"
)


def _noise_table(conn: Any) -> None:
    """The ``noise`` table, with its ``kind`` column: a store made before calibrations said which samples they
    were learnt from gets it, every earlier row counted as ``gpu`` (the only samples ``kprof noise`` read by
    default)."""
    conn.execute(_SCHEMA)
    if "kind" not in {row[1] for row in conn.execute("PRAGMA table_info(noise)")}:
        conn.execute("ALTER TABLE noise ADD COLUMN kind TEXT NOT NULL DEFAULT 'gpu'")


def save(store: Any, cal: Calibration) -> None:
    conn = store.connection
    _noise_table(conn)
    cal_id = f"{cal.created_at}/{len(cal.runs)}"
    runs = json.dumps(list(cal.runs))
    rows = [
        (
            cal_id,
            cal.created_at,
            cal.device,
            "class",
            r.size_class,
            r.size_class,
            r.sigma,
            r.sigma_upper,
            int(r.df),
            int(r.cases),
            None,
            None,
            runs,
            cal.kind,
        )
        for r in cal.classes.itertuples()
    ]
    rows += [
        (
            cal_id,
            cal.created_at,
            cal.device,
            "case",
            r.key,
            r.size_class,
            r.sigma,
            None,
            int(r.df),
            int(r.runs),
            r.median_us,
            r.max_pair_dev,
            runs,
            cal.kind,
        )
        for r in cal.cases.itertuples()
    ]
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany(f"INSERT INTO noise ({_COLUMNS}) VALUES ({', '.join('?' * 14)})", rows)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def load(store: Any, device: str | None, kind: str = "gpu") -> Calibration | None:
    """The newest calibration of ``device`` learnt from ``kind`` samples in the store, or None."""
    if not device:
        return None
    conn = store.connection
    try:
        _noise_table(conn)
    except sqlite3.OperationalError:  # a store that cannot be written: read the table as it is
        pass
    columns = {row[1] for row in conn.execute("PRAGMA table_info(noise)")}
    if not columns or ("kind" not in columns and kind != "gpu"):  # an older table holds GPU-time floors alone
        return None
    where, args = ("device = ? AND kind = ?", (device, kind)) if "kind" in columns else ("device = ?", (device,))
    row = conn.execute(
        f"SELECT calibration FROM noise WHERE {where} ORDER BY created_at DESC, rowid DESC LIMIT 1", args
    ).fetchone()
    if row is None:
        return None
    df = pd.read_sql_query("SELECT * FROM noise WHERE calibration = ?", conn, params=(row[0],))
    cls = df[df["scope"] == "class"].rename(columns={"n": "cases"})[
        ["size_class", "sigma", "sigma_upper", "df", "cases"]
    ]
    cases = df[df["scope"] == "case"].rename(columns={"n": "runs"})[
        ["key", "size_class", "median_us", "sigma", "df", "runs", "max_pair_dev"]
    ]
    return Calibration(
        device=device,
        created_at=str(df["created_at"].iloc[0]),
        runs=tuple(json.loads(df["runs"].iloc[0])),
        classes=cls.reset_index(drop=True),
        cases=cases.reset_index(drop=True),
        kind=kind,
    )


def floor_lookup(store: Any, run_a: Mapping[str, Any], run_b: Mapping[str, Any], kind: str = "gpu"):
    """A function (key, median_us) -> Floor for ``kind`` samples of two separate runs: calibrated when the store
    has a calibration of their (common) device from ``kind`` samples, else the default for ``gpu`` (the declared
    mode's GPU times, what the defaults were learnt from), else :func:`unmeasured_floor`: no verdict."""
    dev_a, dev_b = run_a.get("device_name"), run_b.get("device_name")
    cal = load(store, dev_a, kind) if dev_a == dev_b else None
    if cal is not None:
        return cal.floor_for
    if kind == "gpu":
        return lambda key, median_us: default_floor(median_us)
    none = unmeasured_floor(kind)
    return lambda key, median_us: none
