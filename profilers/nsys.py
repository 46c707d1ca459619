"""Nsight Systems: drive ``nsys profile``, export to SQLite, parse into the launch table.

Capture: ``nsys profile --trace=cuda,nvtx`` around ``python -m kprof.replay`` (each case in an NVTX range
``kprof::<case>``), then ``nsys export --type sqlite``. CPU sampling and context-switch tracing are off:
kprof wants the CUDA API and GPU activity only, and sampling adds overhead to the launches it measures.

SQLite parse (the schema of nsys 2023-2025):

* ``CUPTI_ACTIVITY_KIND_KERNEL``: one row per kernel (``start``/``end`` ns, ``deviceId``, ``streamId``,
  ``correlationId``, ``globalPid``, grid/block, ``registersPerThread``, static + dynamic shared memory,
  ``localMemoryPerThread``); the name is ``demangledName`` -> ``StringIds``.
* ``CUPTI_ACTIVITY_KIND_RUNTIME``: CUDA runtime *and* driver API calls (``nameId`` -> ``StringIds``,
  ``globalTid``); joined to kernels on ``correlationId`` within the same process. ``globalTid`` packs
  the process id in bits 24-47 and the thread id in bits 0-23 (as nsys's own reports decode it).
* ``NVTX_EVENTS``: push/pop (eventType 59) and start/end (60) ranges; ``text`` or ``textId``.
* ``CUPTI_ACTIVITY_KIND_MEMCPY``/``MEMSET`` when present (copyKind -> ``ENUM_CUDA_MEMCPY_OPER``), and
  synchronisation API calls, for the host<->device transfer and sync counts.
* ``TARGET_INFO_GPU``: device names (kept in the table's ``attrs``).

Queue time is ``kernel start - API end`` as in nsys's ``cuda_kern_exec_trace`` report.

``nsys stats`` CSVs are read too: ``cuda_gpu_kern_sum`` (one summary row per kernel name),
``cuda_kern_exec_trace`` (API + kernel per launch) and ``cuda_gpu_trace`` (kernels and copies).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers._files import csv_header
from kprof.profilers._ranges import RangeIndex

SOURCE = "nsys"
NVTX_PUSH_POP, NVTX_START_END = 59, 60
_SYNC_CALLS = ("Synchronize",)  # cudaDeviceSynchronize, cudaStreamSynchronize, cuCtxSynchronize, ...
_COPY_KINDS = {"Host-to-Device": "HtoD", "Device-to-Host": "DtoH", "Device-to-Device": "DtoD",
               "Host-to-Host": "HtoH", "Peer-to-Peer": "PtoP"}

STATS_REPORTS = ("cuda_gpu_kern_sum", "cuda_kern_exec_trace", "cuda_gpu_trace")


# --------------------------------------------------------------------------------------------- capture
def profile_command(nsys: str, child: Sequence[str], out_base: Path) -> list[str]:
    return [
        nsys, "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none",
        "--output", str(out_base), "--force-overwrite=true", *child,
    ]


def export_command(nsys: str, rep: Path, sqlite_path: Path) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(sqlite_path), str(rep)]


def stats_command(nsys: str, rep: Path, out_base: Path) -> list[str]:
    return [nsys, "stats", "--report", ",".join(STATS_REPORTS), "--format", "csv", "--force-export", "true",
            "--output", str(out_base), str(rep)]


# ----------------------------------------------------------------------------------------------- sniff
def looks_like(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith((".sqlite", ".db")):
        return "CUPTI_ACTIVITY_KIND_KERNEL" in (_sqlite_tables(path) or ())
    if name.endswith(".csv"):
        return _stats_kind(csv_header(path)) is not None
    return False


def _sqlite_tables(path: Path) -> set[str] | None:
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return None
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except (OSError, sqlite3.DatabaseError):
        return None


def _stats_kind(header: list[str]) -> str | None:
    h = set(header)
    if {"Total Time (ns)", "Instances", "Avg (ns)", "Name"} <= h:
        return "cuda_gpu_kern_sum"
    if {"API Start (ns)", "Kernel Start (ns)", "Kernel Dur (ns)", "Kernel Name"} <= h:
        return "cuda_kern_exec_trace"
    if {"Start (ns)", "Duration (ns)", "CorrId", "Name"} <= h:
        return "cuda_gpu_trace"
    return None


# ----------------------------------------------------------------------------------------------- parse
def parse(path: Path) -> pd.DataFrame:
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return parse_stats_csv(path)
    if path.suffix.lower() == ".nsys-rep":
        raise TraceFormatError(
            f"{path} is an nsys report; export it first: `nsys export --type sqlite -o "
            f"{path.with_suffix('.sqlite')} {path}` and parse the .sqlite"
        )
    return parse_sqlite(path)


def parse_sqlite(path: Path) -> pd.DataFrame:
    tables = _sqlite_tables(path)
    if tables is None:
        raise TraceFormatError(f"{path} is not an SQLite file (expected `nsys export --type sqlite` output)")
    if "StringIds" not in tables or not any(t.startswith("CUPTI_ACTIVITY_KIND_") or t == "TARGET_INFO_GPU"
                                             for t in tables):
        raise TraceFormatError(f"{path} is an SQLite file but not an Nsight Systems export "
                               "(no StringIds / CUPTI_ACTIVITY_KIND_* tables)")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return _parse_con(con, tables, str(path))
    except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
        first = str(exc).strip().splitlines()[-1][:200]
        raise TraceFormatError(f"{path}: unexpected Nsight Systems schema ({first}); kprof reads the exports of "
                               "nsys 2023-2025") from None
    finally:
        con.close()


def _read(con: sqlite3.Connection, sql: str) -> pd.DataFrame:
    return pd.read_sql_query(sql, con)


def _parse_con(con: sqlite3.Connection, tables: set[str], where: str) -> pd.DataFrame:
    frames = []
    runtime = pd.DataFrame(columns=["api_start", "api_end", "correlationId", "globalTid", "api_name"])
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        runtime = _read(con, """SELECT r.start AS api_start, r."end" AS api_end, r.correlationId, r.globalTid,
                                       s.value AS api_name
                                FROM CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN StringIds s ON s.id = r.nameId""")
    # nsys appends the API version: cudaLaunchKernel_v7000 -> cudaLaunchKernel (as the other profilers name it)
    runtime["api_name"] = runtime["api_name"].astype("string").str.replace(r"_v\d+$", "", regex=True)
    runtime["pid"] = _pid_of(runtime["globalTid"])
    runtime["tid"] = runtime["globalTid"].astype("int64") % (1 << 24)
    ranges = _nvtx_ranges(con, tables)

    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        k = _read(con, """SELECT k.start, k."end", k.deviceId, k.streamId, k.correlationId, k.globalPid,
                                 k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, k.registersPerThread,
                                 k.staticSharedMemory, k.dynamicSharedMemory, k.localMemoryPerThread,
                                 COALESCE(d.value, s.value) AS kernel
                          FROM CUPTI_ACTIVITY_KIND_KERNEL k
                          LEFT JOIN StringIds d ON d.id = k.demangledName
                          LEFT JOIN StringIds s ON s.id = k.shortName""")
        k["kind"] = "kernel"
        k["shared_mem_bytes"] = k["staticSharedMemory"] + k["dynamicSharedMemory"]
        frames.append(k.rename(columns={
            "gridX": "grid_x", "gridY": "grid_y", "gridZ": "grid_z", "blockX": "block_x", "blockY": "block_y",
            "blockZ": "block_z", "registersPerThread": "registers_per_thread",
            "localMemoryPerThread": "scratch_bytes"}))
    for table, kind in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        if table not in tables:
            continue
        cols = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        has_enum = kind == "memcpy" and "ENUM_CUDA_MEMCPY_OPER" in tables and "copyKind" in cols
        m = _read(con, f"""SELECT m.start, m."end", m.deviceId, m.streamId, m.correlationId, m.globalPid,
                                  m.bytes{", e.label AS copy_label" if has_enum else ""}
                           FROM {table} m
                           {"LEFT JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind" if has_enum else ""}""")
        m["kind"] = kind
        if has_enum:
            m["copy_kind"] = m["copy_label"].map(_COPY_KINDS)
            m["kernel"] = "[CUDA memcpy " + m["copy_label"].fillna("?") + "]"
        else:
            m["kernel"] = f"[CUDA {kind}]"
        frames.append(m.drop(columns=[c for c in ("copy_label",) if c in m]))
    gpu = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if gpu.empty:
        return launch_table.empty()
    gpu["pid_key"] = _pid_of(gpu["globalPid"])
    gpu = gpu.merge(
        runtime[["correlationId", "pid", "tid", "api_start", "api_end", "api_name", "globalTid"]],
        how="left", left_on=["correlationId", "pid_key"], right_on=["correlationId", "pid"],
    )
    gpu["pid"] = gpu["pid"].fillna(gpu["pid_key"])
    gpu["case"] = ranges.cases(gpu["globalTid"], gpu["api_start"])

    syncs = runtime[runtime["api_name"].fillna("").str.contains("|".join(_SYNC_CALLS))]
    sync_rows = pd.DataFrame({
        "kernel": syncs["api_name"], "kind": "sync", "start": syncs["api_start"], "end": syncs["api_end"],
        "api_name": syncs["api_name"], "api_start": syncs["api_start"], "api_end": syncs["api_end"],
        "pid": syncs["pid"], "tid": syncs["tid"],
        "case": ranges.cases(syncs["globalTid"], syncs["api_start"]),
    })
    out = gpu.rename(columns={"start": "start_ns", "end": "end_ns", "deviceId": "device", "streamId": "stream",
                              "correlationId": "correlation_id", "api_start": "api_start_ns",
                              "api_end": "api_end_ns"})
    sync_rows = sync_rows.rename(columns={"start": "start_ns", "end": "end_ns", "api_start": "api_start_ns",
                                          "api_end": "api_end_ns"})
    out = pd.concat([out, sync_rows], ignore_index=True) if len(sync_rows) else out
    out["duration_ns"] = out["end_ns"] - out["start_ns"]
    kern = out["kind"] != "sync"
    out.loc[kern, "launch_latency_ns"] = out.loc[kern, "start_ns"] - out.loc[kern, "api_start_ns"]
    out.loc[kern, "queue_ns"] = out.loc[kern, "start_ns"] - out.loc[kern, "api_end_ns"]
    out["count"] = 1
    out["source"] = SOURCE
    out = out.sort_values("start_ns", kind="stable").reset_index(drop=True)
    table = launch_table.validate(out, source=f"nsys ({where})")
    table.attrs["devices"] = _devices(con, tables)
    table.attrs["nvtx_case_ranges"] = len(ranges)
    return table


def _pid_of(global_id: pd.Series) -> pd.Series:
    """nsys globalTid/globalPid -> the OS process id (bits 24-47)."""
    return (global_id.astype("int64") // (1 << 24)) % (1 << 24)


def _nvtx_ranges(con: sqlite3.Connection, tables: set[str]) -> RangeIndex:
    if "NVTX_EVENTS" not in tables:
        return RangeIndex([])
    rows = con.execute(
        f"""SELECT n.globalTid, n.start, n."end", COALESCE(n.text, s.value)
            FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
            WHERE n.eventType IN ({NVTX_PUSH_POP}, {NVTX_START_END}) AND n."end" IS NOT NULL"""
    ).fetchall()
    return RangeIndex((tid, start, end, text) for tid, start, end, text in rows)


def _devices(con: sqlite3.Connection, tables: set[str]) -> list[dict]:
    if "TARGET_INFO_GPU" not in tables:
        return []
    df = _read(con, "SELECT * FROM TARGET_INFO_GPU")
    keep = [c for c in ("id", "name", "smCount", "memoryBandwidth", "clockRate", "computeMajor", "computeMinor",
                        "l2CacheSize", "totalMemory") if c in df.columns]
    df = df[keep]
    if "TARGET_INFO_CUDA_DEVICE" in tables:  # nsys's GPU id -> the CUDA device index the program saw
        cuda = _read(con, "SELECT gpuId, cudaId FROM TARGET_INFO_CUDA_DEVICE").drop_duplicates("gpuId")
        df = df.merge(cuda, how="left", left_on="id", right_on="gpuId").drop(columns=["gpuId"])
    return df.to_dict("records")


# ------------------------------------------------------------------------------------------ stats CSVs
def parse_stats_csv(path: Path) -> pd.DataFrame:
    header = csv_header(path)
    kind = _stats_kind(header)
    if kind is None:
        raise TraceFormatError(
            f"{path}: not an `nsys stats --format csv` report kprof reads (header {header[:6]}...); "
            f"expected one of {', '.join(STATS_REPORTS)}"
        )
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"{path}: unreadable CSV: {exc}") from None
    if kind == "cuda_gpu_kern_sum":
        out = pd.DataFrame({
            "kernel": df["Name"], "kind": "kernel", "count": df["Instances"],
            "duration_ns": (df["Total Time (ns)"] / df["Instances"]).round(),
        })
    elif kind == "cuda_kern_exec_trace":
        gx = _xyz(df["GridXYZ"])
        bx = _xyz(df["BlockXYZ"])
        out = pd.DataFrame({
            "kernel": df["Kernel Name"], "kind": "kernel", "count": 1,
            "start_ns": df["Kernel Start (ns)"], "duration_ns": df["Kernel Dur (ns)"],
            "api_name": df["API Function"], "api_start_ns": df["API Start (ns)"],
            "pid": df["PID"], "tid": df["TID"], "device": df["DevId"],
            "grid_x": gx[0], "grid_y": gx[1], "grid_z": gx[2], "block_x": bx[0], "block_y": bx[1], "block_z": bx[2],
        })
        out["end_ns"] = out["start_ns"] + out["duration_ns"]
        out["api_end_ns"] = out["api_start_ns"] + df["API Dur (ns)"]
        out["launch_latency_ns"] = out["start_ns"] - out["api_start_ns"]
        out["queue_ns"] = out["start_ns"] - out["api_end_ns"]
    else:  # cuda_gpu_trace: kernels and memory operations, no host side
        is_copy = df["Name"].astype(str).str.startswith("[CUDA mem")
        out = pd.DataFrame({
            "kernel": df["Name"], "count": 1, "start_ns": df["Start (ns)"], "duration_ns": df["Duration (ns)"],
            "correlation_id": df["CorrId"], "stream": df.get("Strm"),
            "device": df["Device"].astype(str).str.extract(r"\((\d+)\)\s*$")[0] if "Device" in df else pd.NA,
            "grid_x": df.get("GrdX"), "grid_y": df.get("GrdY"), "grid_z": df.get("GrdZ"),
            "block_x": df.get("BlkX"), "block_y": df.get("BlkY"), "block_z": df.get("BlkZ"),
            "registers_per_thread": df.get("Reg/Trd"),
            # shared memory is printed in MB with 3 decimals (1 kB resolution): too coarse, left out
        })
        out["kind"] = "kernel"
        out.loc[is_copy, "kind"] = out.loc[is_copy, "kernel"].str.contains("memset").map(
            {True: "memset", False: "memcpy"})
        out.loc[is_copy, "copy_kind"] = out.loc[is_copy, "kernel"].str.extract(
            r"(Host-to-Device|Device-to-Host|Device-to-Device|Host-to-Host|Peer-to-Peer)")[0].map(_COPY_KINDS)
        if "Bytes (MB)" in df:
            out.loc[is_copy, "bytes"] = (df.loc[is_copy, "Bytes (MB)"] * 1e6).round()
        out["end_ns"] = out["start_ns"] + out["duration_ns"]
    out["source"] = SOURCE
    return launch_table.validate(out, source=f"nsys stats {kind} ({path})")


def _xyz(col: pd.Series) -> list[pd.Series]:
    """``"1024    1    1"`` -> three integer columns."""
    parts = col.astype(str).str.split(expand=True)
    if parts.shape[1] != 3:
        raise TraceFormatError(f"grid/block column {col.name!r} is not 'X Y Z' ({col.iloc[0]!r})")
    return [pd.to_numeric(parts[i], errors="coerce") for i in range(3)]
