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

``nsys stats`` reports are read too, as ``--format csv`` files or as the text nsys prints to stdout
(column tables or CSV, several reports in one file), under today's names and the older ones of nsys
2020-2022: ``cuda_gpu_kern_sum``/``gpukernsum`` (one summary row per kernel name),
``cuda_kern_exec_trace``/``kernexectrace`` (API + kernel per launch), ``cuda_gpu_trace``/``gputrace``
(kernels and copies) and ``cuda_gpu_mem_time_sum``/``gpumemtimesum`` (copy summaries). API summaries
(``cuda_api_sum``) are host calls, not GPU work, and are refused with a pointer.
"""

from __future__ import annotations

import csv
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from kprof import launch_table
from kprof.profilers import Backend, ParseOptions, as_source
from kprof.profilers._io import Source, sqlite_tables, whole_numbers
from kprof.ranges import RangeIndex
from kprof.tools import ToolSpec

if TYPE_CHECKING:
    from kprof.external import CaptureContext

SOURCE = "nsys"
NVTX_PUSH_POP, NVTX_START_END = 59, 60
_SYNC_CALLS = ("Synchronize",)  # cudaDeviceSynchronize, cudaStreamSynchronize, cuCtxSynchronize, ...
_COPY_KINDS = {
    "Host-to-Device": "HtoD",
    "Device-to-Host": "DtoH",
    "Device-to-Device": "DtoD",
    "Host-to-Host": "HtoH",
    "Peer-to-Peer": "PtoP",
}
# A copy's direction in its name: today's spelling, or the short one (``[CUDA memcpy HtoD]``, nvprof's), which a
# report of another nsys version may carry; unread, such a copy would count as none of the host<->device copies.
_COPY_DIRECTION = "(" + "|".join([*_COPY_KINDS, *_COPY_KINDS.values()]) + ")"

STATS_REPORTS = ("cuda_gpu_kern_sum", "cuda_kern_exec_trace", "cuda_gpu_trace")
# older nsys (2020-2022) report names -> today's
_OLD_REPORTS = {
    "gpukernsum": "cuda_gpu_kern_sum",
    "kernexectrace": "cuda_kern_exec_trace",
    "gputrace": "cuda_gpu_trace",
    "gpumemtimesum": "cuda_gpu_mem_time_sum",
    "cudaapisum": "cuda_api_sum",
}
_PREFERENCE = ("cuda_kern_exec_trace", "cuda_gpu_trace", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum")

TOOL = ToolSpec(
    "nsys",
    "nsys",
    "KPROF_NSYS",
    (
        "/opt/nvidia/nsight-systems/*/bin/nsys",
        "/usr/local/cuda/bin/nsys",
        "/usr/local/cuda-*/bin/nsys",
        # Nsight Compute ships a copy of nsys; on some machines it is the only one
        "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
        "/usr/local/cuda/nsight-compute-*/host/target-linux-x64/nsys",
    ),
    hint="install Nsight Systems, or pass --tool-path / set KPROF_NSYS to the nsys binary",
)


# --------------------------------------------------------------------------------------------- capture
def profile_command(nsys: str, child: Sequence[str], out_base: Path) -> list[str]:
    return [
        nsys,
        "profile",
        "--trace=cuda,nvtx",
        "--sample=none",
        "--cpuctxsw=none",
        "--output",
        str(out_base),
        "--force-overwrite=true",
        *child,
    ]


def export_command(nsys: str, rep: Path, sqlite_path: Path) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(sqlite_path), str(rep)]


def stats_command(nsys: str, rep: Path, out_base: Path) -> list[str]:
    return [
        nsys,
        "stats",
        "--report",
        ",".join(STATS_REPORTS),
        "--format",
        "csv",
        "--force-export",
        "true",
        "--output",
        str(out_base),
        str(rep),
    ]


NO_IMPORTER = "its importer could not turn the recording into a report"


def no_report(rep: Path) -> str:
    """Why ``nsys profile`` left no report at ``rep``. A ``.qdstrm`` beside it means nsys recorded the run and
    its importer (QdstrmImporter) failed; a copy of nsys bundled with Nsight Compute needs elfutils' libdw.so.1
    and libelf.so.1 for that, which some machines lack."""
    qdstrm = rep.with_suffix(".qdstrm")
    if qdstrm.exists():
        return (
            f"nsys recorded {qdstrm.name} but {NO_IMPORTER} {rep.name}: put elfutils' libdw.so.1 and libelf.so.1 "
            "on LD_LIBRARY_PATH (the importer of a copy of nsys bundled with Nsight Compute needs them), "
            "or use --profiler torch"
        )
    return f"nsys finished but wrote no report {rep}"


def capture(ctx: CaptureContext) -> None:
    """``nsys profile`` around the replay, then ``nsys export`` to SQLite (the artefact parsed)."""
    assert ctx.tool is not None
    base = ctx.workdir / "nsys"
    rep, sq = base.with_suffix(".nsys-rep"), base.with_suffix(".sqlite")
    if ctx.expect(
        ctx.step(profile_command(ctx.tool.path, ctx.child, base), "nsys_profile"),
        rep,
        no_report(rep),
    ):
        ctx.expect(ctx.step(export_command(ctx.tool.path, rep, sq), "nsys_export"), sq, f"nsys export wrote no {sq}")


# ----------------------------------------------------------------------------------------------- sniff
_TITLE = re.compile(r"^\s*\*\*\s.*\((\w+)\):?\s*$")
_PROCESSING = re.compile(r"^Processing \[.*?\] with \[.*?(\w+)\.py\]")


def sniff(src: Source) -> bool:
    if src.is_sqlite:
        with src.local_file() as path:
            return "CUPTI_ACTIVITY_KIND_KERNEL" in (sqlite_tables(path) or ()) or "CUPTI_ACTIVITY_KIND_RUNTIME" in (
                sqlite_tables(path) or ()
            )
    head = src.head(16384)
    if _stats_kind(src.csv_header()) is not None:
        return True
    return any(_TITLE.match(ln) or _PROCESSING.match(ln) for ln in head.split("\n")[:200])


def looks_like(path: Path | Source) -> bool:
    return sniff(as_source(path))


def _stats_kind(header: list[str]) -> str | None:
    """Which ``nsys stats`` report a header belongs to (today's and older nsys spellings)."""
    h = {c.strip() for c in header}
    avg = any(c.startswith(("Avg", "Average")) for c in h)
    if "Kernel Name" in h and {"Kernel Start (ns)", "Kernel Dur (ns)"} <= h:
        return "cuda_kern_exec_trace"
    if {"Start (ns)", "Duration (ns)", "CorrId", "Name"} <= h:
        return "cuda_gpu_trace"
    if {"Total Time (ns)", "Instances", "Name"} <= h and avg:
        return "cuda_gpu_kern_sum"
    if {"Total Time (ns)", "Operation"} <= h and ({"Count"} & h or {"Operations"} & h) and avg:
        return "cuda_gpu_mem_time_sum"
    if {"Total Time (ns)", "Num Calls"} <= h:
        return "cuda_api_sum"
    return None


# ----------------------------------------------------------------------------------------------- parse
def parse(path: Path | Source, opts: ParseOptions | None = None, **_: object) -> pd.DataFrame:
    src = as_source(path)
    if src.is_sqlite:
        return parse_sqlite(src)
    if src.name.endswith(".nsys-rep") or src.head_bytes(4) in (b"\x00\x00\x00\x00",) or "\x00" in src.head(256):
        raise src.fail(
            "is an nsys report, not an export",
            f"export it first: `nsys export --type sqlite -o {src.path.with_suffix('.sqlite')} {src.path}` "
            "and parse the .sqlite",
        )
    return parse_stats(src)


def parse_sqlite(path: Path | Source) -> pd.DataFrame:
    src = as_source(path)
    with src.local_file() as local:
        tables = sqlite_tables(local)
        if tables is None:
            raise src.fail("is not an SQLite file", "expected `nsys export --type sqlite` output")
        if "StringIds" not in tables or not any(
            t.startswith("CUPTI_ACTIVITY_KIND_") or t == "TARGET_INFO_GPU" for t in tables
        ):
            raise src.fail(
                "is an SQLite file but not an Nsight Systems export (no StringIds / CUPTI_ACTIVITY_KIND_* tables)",
                "export the report with `nsys export --type sqlite`",
            )
        con = sqlite3.connect(f"file:{local}?mode=ro", uri=True)
        try:
            return _parse_con(con, tables, src)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
            first = str(exc).strip().splitlines()[-1][:200]
            raise src.fail(
                f"unexpected Nsight Systems schema ({first})", "kprof reads the exports of nsys 2023-2025"
            ) from None
        finally:
            con.close()


def _ints(df: pd.DataFrame, src: Source, table: str, columns: Sequence[str], required: Sequence[str] = ()) -> None:
    """Integer columns of an SQLite frame, strictly: text or float junk in a timestamp is an error, and a
    required column may not be NULL (an export of a capture cut short)."""
    for c in columns:
        if c not in df:
            continue
        df[c] = whole_numbers(df[c], src, f"{table}.{c}")
        if c in required and df[c].isna().any():
            raise src.fail(
                f"{int(df[c].isna().sum())} rows of {table} have no {c}",
                "the capture was cut short or the export is damaged; export the report again",
            )


def _read(con: sqlite3.Connection, sql: str) -> pd.DataFrame:
    return pd.read_sql_query(sql, con)


def _parse_con(con: sqlite3.Connection, tables: set[str], src: Source) -> pd.DataFrame:
    where = str(src)
    frames = []
    runtime = pd.DataFrame(columns=["api_start", "api_end", "correlationId", "globalTid", "api_name"])
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        runtime = _read(
            con,
            """SELECT r.start AS api_start, r."end" AS api_end, r.correlationId, r.globalTid,
                                       s.value AS api_name
                                FROM CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN StringIds s ON s.id = r.nameId""",
        )
    _ints(
        runtime,
        src,
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        ["api_start", "api_end", "correlationId", "globalTid"],
        required=["api_start", "api_end", "globalTid"],
    )
    # nsys appends the API version: cudaLaunchKernel_v7000 -> cudaLaunchKernel (as the other profilers name it)
    runtime["api_name"] = runtime["api_name"].astype("string").str.replace(r"_v\d+$", "", regex=True)
    runtime["pid"] = _pid_of(runtime["globalTid"])
    runtime["tid"] = runtime["globalTid"] % (1 << 24)
    ranges = _nvtx_ranges(con, tables, src)

    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        k = _read(
            con,
            """SELECT k.start, k."end", k.deviceId, k.streamId, k.correlationId, k.globalPid,
                                 k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, k.registersPerThread,
                                 k.staticSharedMemory, k.dynamicSharedMemory, k.localMemoryPerThread,
                                 COALESCE(d.value, s.value) AS kernel
                          FROM CUPTI_ACTIVITY_KIND_KERNEL k
                          LEFT JOIN StringIds d ON d.id = k.demangledName
                          LEFT JOIN StringIds s ON s.id = k.shortName""",
        )
        _ints(
            k,
            src,
            "CUPTI_ACTIVITY_KIND_KERNEL",
            [c for c in k.columns if c != "kernel"],
            required=["start", "end", "globalPid"],
        )
        k["kind"] = "kernel"
        k["shared_mem_bytes"] = k["staticSharedMemory"] + k["dynamicSharedMemory"]
        frames.append(
            k.rename(
                columns={
                    "gridX": "grid_x",
                    "gridY": "grid_y",
                    "gridZ": "grid_z",
                    "blockX": "block_x",
                    "blockY": "block_y",
                    "blockZ": "block_z",
                    "registersPerThread": "registers_per_thread",
                    "localMemoryPerThread": "scratch_bytes",
                }
            )
        )
    for table, kind in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        if table not in tables:
            continue
        cols = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        has_enum = kind == "memcpy" and "ENUM_CUDA_MEMCPY_OPER" in tables and "copyKind" in cols
        m = _read(
            con,
            f"""SELECT m.start, m."end", m.deviceId, m.streamId, m.correlationId, m.globalPid,
                                  m.bytes{", e.label AS copy_label" if has_enum else ""}
                           FROM {table} m
                           {"LEFT JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind" if has_enum else ""}""",
        )
        _ints(
            m,
            src,
            table,
            ["start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"],
            required=["start", "end", "globalPid"],
        )
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
    # a correlation id is unique within a process only: join on both
    gpu = gpu.merge(
        runtime[["correlationId", "pid", "tid", "api_start", "api_end", "api_name", "globalTid"]].drop_duplicates(
            ["correlationId", "pid"]
        ),
        how="left",
        left_on=["correlationId", "pid_key"],
        right_on=["correlationId", "pid"],
    )
    gpu["pid"] = gpu["pid"].fillna(gpu["pid_key"])
    gpu["case"] = ranges.cases(gpu["globalTid"], gpu["api_start"])

    syncs = runtime[runtime["api_name"].fillna("").str.contains("|".join(_SYNC_CALLS))]
    sync_rows = pd.DataFrame(
        {
            "kernel": syncs["api_name"],
            "kind": "sync",
            "start": syncs["api_start"],
            "end": syncs["api_end"],
            "api_name": syncs["api_name"],
            "api_start": syncs["api_start"],
            "api_end": syncs["api_end"],
            "pid": syncs["pid"],
            "tid": syncs["tid"],
            "case": ranges.cases(syncs["globalTid"], syncs["api_start"]),
        }
    )
    out = gpu.rename(
        columns={
            "start": "start_ns",
            "end": "end_ns",
            "deviceId": "device",
            "streamId": "stream",
            "correlationId": "correlation_id",
            "api_start": "api_start_ns",
            "api_end": "api_end_ns",
        }
    )
    sync_rows = sync_rows.rename(
        columns={"start": "start_ns", "end": "end_ns", "api_start": "api_start_ns", "api_end": "api_end_ns"}
    )
    out = pd.concat([out, sync_rows], ignore_index=True) if len(sync_rows) else out
    out["duration_ns"] = out["end_ns"] - out["start_ns"]
    kern = out["kind"] != "sync"
    out.loc[kern, "launch_latency_ns"] = out.loc[kern, "start_ns"] - out.loc[kern, "api_start_ns"]
    out.loc[kern, "queue_ns"] = out.loc[kern, "start_ns"] - out.loc[kern, "api_end_ns"]
    out["count"] = 1
    out["source"] = SOURCE
    out = out.sort_values("start_ns", kind="stable").reset_index(drop=True)
    table = launch_table.validate(out, source=f"nsys ({where})")
    table.attrs["summary"] = False
    table.attrs["devices"] = _devices(con, tables)
    table.attrs["nvtx_case_ranges"] = len(ranges)
    return table


def _pid_of(global_id: pd.Series) -> pd.Series:
    """nsys globalTid/globalPid -> the OS process id (bits 24-47)."""
    return (global_id.astype("Int64") // (1 << 24)) % (1 << 24)


def _nvtx_ranges(con: sqlite3.Connection, tables: set[str], src: Source) -> RangeIndex:
    if "NVTX_EVENTS" not in tables:
        return RangeIndex([])
    n = pd.read_sql_query(
        f"""SELECT n.globalTid, n.start, n."end", COALESCE(n.text, s.value) AS label
            FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
            WHERE n.eventType IN ({NVTX_PUSH_POP}, {NVTX_START_END}) AND n."end" IS NOT NULL""",
        con,
    )
    _ints(n, src, "NVTX_EVENTS", ["globalTid", "start", "end"])
    n = n.dropna(subset=["globalTid", "start", "end"])
    return RangeIndex(zip(n["globalTid"].tolist(), n["start"].tolist(), n["end"].tolist(), n["label"].tolist()))


def _devices(con: sqlite3.Connection, tables: set[str]) -> list[dict]:
    if "TARGET_INFO_GPU" not in tables:
        return []
    df = _read(con, "SELECT * FROM TARGET_INFO_GPU")
    keep = [
        c
        for c in (
            "id",
            "name",
            "smCount",
            "memoryBandwidth",
            "clockRate",
            "computeMajor",
            "computeMinor",
            "l2CacheSize",
            "totalMemory",
        )
        if c in df.columns
    ]
    df = df[keep]
    if "TARGET_INFO_CUDA_DEVICE" in tables:  # nsys's GPU id -> the CUDA device index the program saw
        cuda = _read(con, "SELECT gpuId, cudaId FROM TARGET_INFO_CUDA_DEVICE").drop_duplicates("gpuId")
        df = df.merge(cuda, how="left", left_on="id", right_on="gpuId").drop(columns=["gpuId"])
    return df.to_dict("records")


# ----------------------------------------------------------------------------------------- nsys stats
def parse_stats(path: Path | Source) -> pd.DataFrame:
    """An ``nsys stats`` report: a CSV file, or what nsys printed (one or several reports, CSV or columns)."""
    src = as_source(path)
    sections = _sections(src)
    known = {k: df for k, df in sections if k in _PREFERENCE}
    if not known:
        found = [k for k, _ in sections]
        if "cuda_api_sum" in found:
            raise src.fail(
                "summarises host CUDA API calls, not GPU work",
                "export `nsys stats --report cuda_gpu_trace` or cuda_gpu_kern_sum, or the SQLite",
            )
        raise src.fail(
            f"no `nsys stats` report kprof reads (found: {', '.join(found) or 'none'})",
            f"export one of {', '.join(STATS_REPORTS)} with `nsys stats --report NAME --format csv`",
        )
    kind = next(k for k in _PREFERENCE if k in known)
    out = _CONVERT[kind](known[kind], src)
    out["source"] = SOURCE
    table = launch_table.validate(out, source=f"nsys stats {kind} ({src})")
    table.attrs["summary"] = kind.endswith("_sum")
    table.attrs["report"] = kind
    ignored = [k for k, _ in sections if k != kind]
    if ignored:
        table.attrs["warnings"] = [
            f"{src}: read the {kind} report; also in the file and not used: {', '.join(ignored)}"
        ]
    return table


def _sections(src: Source) -> list[tuple[str, pd.DataFrame]]:
    """(report name, table of strings) for each report in the file."""
    header = src.csv_header()
    kind = _stats_kind(header)
    if kind is not None:
        return [(kind, src.table(what=f"nsys stats {kind} CSV"))]
    lines = src.text.split("\n")
    out: list[tuple[str, pd.DataFrame]] = []
    i = 0
    name: str | None = None
    while i < len(lines):
        line = lines[i]
        m = _TITLE.match(line) or _PROCESSING.match(line)
        if m:
            name = _OLD_REPORTS.get(m.group(1), m.group(1))
            i += 1
            continue
        if not line.strip() or line.startswith(("SKIPPED", "NOTICE", "WARNING", "Generating", "Processing")):
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i])
            i += 1
        df = _block_table(block, src)
        if df is not None:
            kind = _stats_kind(list(df.columns)) or name
            if kind:
                out.append((kind, df))
        name = None
    return out


_DASHES = re.compile(r"^\s*-+(\s+-+)*\s*$")


def _block_table(block: list[str], src: Source) -> pd.DataFrame | None:
    """One printed report: CSV lines, or a column table (header, dashes, rows) cut at the dashes."""
    if len(block) >= 2 and _DASHES.match(block[1]):
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", block[1])]

        def cut(line: str) -> list[str]:  # each column runs from its dashes to the next column's dashes
            return [
                line[a : (spans[j + 1][0] if j + 1 < len(spans) else len(line))].strip()
                for j, (a, _) in enumerate(spans)
            ]

        return pd.DataFrame([cut(r) for r in block[2:]], columns=cut(block[0]), dtype="string")
    try:
        parsed = list(csv.reader(block))
    except csv.Error as exc:
        raise src.fail(f"unreadable CSV report ({exc})", "export it again with `--format csv`") from None
    if not parsed or _stats_kind(parsed[0]) is None:
        return None
    return src.table(parsed, what="nsys stats CSV")


def _col(df: pd.DataFrame, src: Source, *names: str, scale: float = 1) -> pd.Series:
    """The first of ``names`` present, as whole numbers; all <NA> when none is."""
    for n in names:
        if n in df:
            return whole_numbers(df[n], src, n, scale)
    return pd.Series([pd.NA] * len(df), dtype="Int64")


def _need(df: pd.DataFrame, src: Source, kind: str, *cols: str) -> None:
    missing = [c for c in cols if c not in df]
    if missing:
        raise src.fail(
            f"the {kind} report has no column(s) {', '.join(map(repr, missing))}",
            f"export it again with `nsys stats --report {kind} --format csv`",
        )


def _kern_sum(df: pd.DataFrame, src: Source) -> pd.DataFrame:
    _need(df, src, "cuda_gpu_kern_sum", "Name", "Instances", "Total Time (ns)")
    count = _col(df, src, "Instances")
    if (count.fillna(0) < 1).any():
        raise src.fail("a kernel summary row has no launches (Instances < 1)", "export the report again")
    total = _col(df, src, "Total Time (ns)")
    return pd.DataFrame(
        {
            "kernel": df["Name"],
            "kind": "kernel",
            "count": count,
            "duration_ns": (total.astype("Float64") / count.astype("Float64")).round(),
        }
    )


def _mem_sum(df: pd.DataFrame, src: Source) -> pd.DataFrame:
    _need(df, src, "cuda_gpu_mem_time_sum", "Operation", "Total Time (ns)")
    count = _col(df, src, "Count", "Operations")
    total = _col(df, src, "Total Time (ns)")
    op = df["Operation"].astype("string")
    out = pd.DataFrame(
        {"kernel": op, "count": count, "duration_ns": (total.astype("Float64") / count.astype("Float64")).round()}
    )
    out["kind"] = op.str.contains("memset", case=False).map({True: "memset", False: "memcpy"})
    out["copy_kind"] = _copy_kind(op)
    return out


def _copy_kind(names: pd.Series) -> pd.Series:
    """HtoD, DtoH, ... from copy names in either spelling (:data:`_COPY_DIRECTION`); NA where none is named."""
    found = names.str.extract(_COPY_DIRECTION)[0]
    return found.map(lambda d: _COPY_KINDS.get(d, d) if isinstance(d, str) else pd.NA)


def _exec_trace(df: pd.DataFrame, src: Source) -> pd.DataFrame:
    _need(df, src, "cuda_kern_exec_trace", "Kernel Name", "Kernel Start (ns)", "Kernel Dur (ns)")
    gx = _xyz(df, "GridXYZ", src)
    bx = _xyz(df, "BlockXYZ", src)
    out = pd.DataFrame(
        {
            "kernel": df["Kernel Name"],
            "kind": "kernel",
            "count": 1,
            "start_ns": _col(df, src, "Kernel Start (ns)"),
            "duration_ns": _col(df, src, "Kernel Dur (ns)"),
            "api_name": df["API Function"] if "API Function" in df else pd.NA,
            "api_start_ns": _col(df, src, "API Start (ns)"),
            "pid": _col(df, src, "PID"),
            "tid": _col(df, src, "TID"),
            "device": _col(df, src, "DevId"),
            "grid_x": gx[0],
            "grid_y": gx[1],
            "grid_z": gx[2],
            "block_x": bx[0],
            "block_y": bx[1],
            "block_z": bx[2],
        }
    )
    out["end_ns"] = out["start_ns"] + out["duration_ns"]
    out["api_end_ns"] = out["api_start_ns"] + _col(df, src, "API Dur (ns)")
    out["launch_latency_ns"] = out["start_ns"] - out["api_start_ns"]
    out["queue_ns"] = out["start_ns"] - out["api_end_ns"]
    return out


def _gpu_trace(df: pd.DataFrame, src: Source) -> pd.DataFrame:
    _need(df, src, "cuda_gpu_trace", "Name", "Start (ns)", "Duration (ns)")
    names = df["Name"].astype("string")
    is_copy = names.str.startswith("[CUDA mem").fillna(False).astype(bool)
    device = df["Device"].astype("string").str.extract(r"\((\d+)\)\s*$")[0] if "Device" in df else None
    out = pd.DataFrame(
        {
            "kernel": names,
            "count": 1,
            "start_ns": _col(df, src, "Start (ns)"),
            "duration_ns": _col(df, src, "Duration (ns)"),
            "correlation_id": _col(df, src, "CorrId"),
            "stream": _col(df, src, "Strm", "Stream"),
            "device": whole_numbers(device, src, "Device") if device is not None else pd.NA,
            "grid_x": _col(df, src, "GrdX"),
            "grid_y": _col(df, src, "GrdY"),
            "grid_z": _col(df, src, "GrdZ"),
            "block_x": _col(df, src, "BlkX"),
            "block_y": _col(df, src, "BlkY"),
            "block_z": _col(df, src, "BlkZ"),
            "registers_per_thread": _col(df, src, "Reg/Trd"),
            # shared memory is printed in MB with 3 decimals (1 kB resolution): too coarse, left out
        }
    )
    out["kind"] = "kernel"
    out.loc[is_copy, "kind"] = names[is_copy].str.contains("memset").map({True: "memset", False: "memcpy"})
    out.loc[is_copy, "copy_kind"] = _copy_kind(names[is_copy])
    if "Bytes (MB)" in df:
        mb = whole_numbers(df["Bytes (MB)"], src, "Bytes (MB)", scale=1e6)
        out.loc[is_copy, "bytes"] = mb[is_copy]
    out["end_ns"] = out["start_ns"] + out["duration_ns"]
    return out


_CONVERT = {
    "cuda_gpu_kern_sum": _kern_sum,
    "cuda_kern_exec_trace": _exec_trace,
    "cuda_gpu_trace": _gpu_trace,
    "cuda_gpu_mem_time_sum": _mem_sum,
}


def _xyz(df: pd.DataFrame, col: str, src: Source) -> list[pd.Series]:
    """``"1024    1    1"`` -> three integer columns (all <NA> when the column is absent)."""
    if col not in df or df.empty:
        return [pd.Series([pd.NA] * len(df), dtype="Int64")] * 3
    parts = df[col].astype("string").str.strip().str.split(r"\s+", expand=True, regex=True)
    if parts.shape[1] != 3:
        raise src.fail(f"column {col!r} is not 'X Y Z' ({str(df[col].iloc[0])[:40]!r})", "export the report again")
    return [whole_numbers(parts[i], src, col) for i in range(3)]


BACKEND = Backend(
    name="nsys",
    description="Nsight Systems",
    sniff=sniff,
    parse=parse,
    marker="nvtx",
    tools=(TOOL,),
    default_repeats=5,
    capture=capture,
    auto_vendor="nvidia",
    sniff_rank=10,
)
