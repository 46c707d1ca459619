"""rocprof (AMD): rocprofv3 CSVs and legacy rocprof v1/v2 CSV/JSON outputs, into the launch table.

Column sets change between ROCm releases, so everything is mapped by column name and absent columns stay
``<NA>``. Timestamps of both generations are nanoseconds.

rocprofv3 (``--kernel-trace --hip-trace --marker-trace --memory-copy-trace --output-format csv``):

* ``*_kernel_trace.csv``: one row per dispatch. ``Agent_Id`` is an integer or ``"Agent 4"``; grid sizes
  are in *work-items* (HSA), so ``grid_x = ceil(Grid_Size_X / Workgroup_Size_X)`` blocks; ``VGPR_Count``,
  ``Accum_VGPR_Count``, ``SGPR_Count``, ``LDS_Block_Size`` (or ``Group_Segment_Size``) and
  ``Scratch_Size`` (or ``Private_Segment_Size``) where that ROCm writes them.
* Siblings with the same prefix are joined when present (each join is reported as a warning): ``*_hip_api_trace.csv``
(or the older
  ``*_hip_runtime_trace.csv``) for the launch call, on ``Correlation_Id`` *and* the same thread, a call
  that names a launch, and a call that started before the kernel (a sibling from another run matches
  ids by accident: those kernels stay unjoined and the warning says how many); ``*_marker_api_trace.csv``
  for roctx ranges (``kprof::<case>``, attributed by the launch call's thread and start time, or the
  kernel's dispatching thread and start when no HIP trace is there); ``*_memory_copy_trace.csv`` for
  copies; ``*_agent_info.csv`` for the GPU architecture (occupancy).
* rocprofv2's kernel trace (file plugin v2: ``GPU_ID``, ``Queue_ID``, ``PID``, ``TID``, ``Grid_Size``,
  ``Workgroup_Size``, ``LDS_Per_Workgroup``, ``Scratch_Per_Workitem``, ``Arch_VGPR``, ``Accum_VGPR``, ``SGPR``,
  ``Wave_Size``, ``Kernel_Name``, ``Start_Timestamp``, ``End_Timestamp``, ``Correlation_ID``) is read as a
  kernel trace, its one grid and workgroup total each as a 1-D launch (as in rocprof v1).
* ``*_memory_copy_trace.csv``: a copy's ``device`` is its GPU agent (the destination, the source for a
  device-to-host copy, none host-to-host).
* ``*_kernel_stats.csv`` (Name, Calls, TotalDurationNs, AverageNs, ...): one summary row per kernel.
* ``*_counter_collection.csv`` (``--pmc``): one row per counter per dispatch, pivoted to one launch per
  dispatch with its counters (``counters`` column, JSON); ``Grid_Size``/``Workgroup_Size`` are totals
  in work-items there.
* Host API or domain statistics (``*_hip_api_stats.csv``, ``*_domain_stats.csv``) are host calls, not
  GPU work: refused with a pointer, never read as kernels. ROCm 7's default ``rocpd`` SQLite database
  is recognised and refused with the command that writes CSV.

Legacy rocprof: ``results.csv`` (``--timestamp on``; KernelName, gpu-id, queue-id, tid, grd, wgr, lds,
scr, arch_vgpr or vgpr, accum_vgpr, sgpr, wave_size, DispatchNs/BeginNs/EndNs), ``results.stats.csv``,
``results.copy_stats.csv`` and ``results.json`` (Chrome trace with BeginNs/EndNs in args and flow events
from each hipLaunchKernel to its kernel). Some old versions write kernel names unquoted although they
contain commas; the extra fields are joined back into the name (in ``results.csv`` and
``results.stats.csv`` alike). Names are kept as written in ``kernel``; ``[clone .kd]``/``.kd`` suffixes are
dropped in ``kernel_norm`` so names match rocprofv3's and other profilers'. Rows named ``Unknown command
type`` (barrier packets of legacy rocprof) are not kernels and are left out with a warning.

Every number is read whole or refused (``1.5e300``, ``NaN`` or ``12 ms`` end in an error naming the
cell), and every file may be gzipped.

Occupancy for AMD is computed (``kprof.occupancy.amd_occupancy``) from workgroup size, VGPRs, AGPRs,
SGPRs and LDS when the architecture is known (``arch=`` / ``kprof parse --arch gfx942``, or an agent
info file next to the trace); otherwise it is left empty rather than guessed.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.occupancy import amd_limits, amd_occupancy
from kprof.profilers import Backend, ParseOptions, as_source
from kprof.profilers._io import Source, sqlite_tables, whole_numbers
from kprof.ranges import RangeIndex
from kprof.tools import ToolSpec

if TYPE_CHECKING:
    from kprof.external import CaptureContext

SOURCE = "rocprof"
_DIRECTION = {
    "HOST_TO_DEVICE": "HtoD",
    "DEVICE_TO_HOST": "DtoH",
    "DEVICE_TO_DEVICE": "DtoD",
    "HOST_TO_HOST": "HtoH",
    "CopyHostToDevice": "HtoD",
    "CopyDeviceToHost": "DtoH",
    "CopyDeviceToDevice": "DtoD",
    "CopyHostToHost": "HtoH",
}
_UNKNOWN = "unknown command type"
_LAUNCH_CALL = re.compile(r"launch|kernel", re.IGNORECASE)
_HOST_API = re.compile(r"^(hip|hsa|roctx|rocblas|rccl|amd_comgr|hipblas|rocm)[A-Z_]")
_DOMAIN = re.compile(r"^[A-Z][A-Z0-9_]*$")
V3_CSV = "rocprofv3 --kernel-trace --output-format csv"

TOOLS = (
    ToolSpec(
        "rocprofv3",
        "rocprofv3",
        "KPROF_ROCPROFV3",
        ("/opt/rocm/bin/rocprofv3", "/opt/rocm-*/bin/rocprofv3"),
        hint="install rocprofiler-sdk (ROCm >= 6.2), or set KPROF_ROCPROFV3 to the rocprofv3 binary",
    ),
    ToolSpec(
        "rocprof",
        "rocprof",
        "KPROF_ROCPROF",
        ("/opt/rocm/bin/rocprof", "/opt/rocm-*/bin/rocprof"),
        hint="install rocprof (ROCm), or set KPROF_ROCPROF to the rocprof binary",
    ),
)


# --------------------------------------------------------------------------------------------- capture
def rocprofv3_command(tool: str, child: list[str], out_dir: Path) -> list[str]:
    return [
        tool,
        "--kernel-trace",
        "--hip-trace",
        "--marker-trace",
        "--memory-copy-trace",
        "--stats",
        "--output-format",
        "csv",
        "-d",
        str(out_dir),
        "-o",
        "kprof",
        "--",
        *child,
    ]


def rocprof_legacy_command(tool: str, child: list[str], out_csv: Path) -> list[str]:
    return [tool, "--hip-trace", "--roctx-trace", "--timestamp", "on", "--stats", "-o", str(out_csv), *child]


def capture(ctx: CaptureContext) -> None:
    """rocprofv3 (or legacy rocprof) around the replay; the kernel trace is the artefact parsed."""
    assert ctx.tool is not None
    out_dir = ctx.workdir / "rocprof"
    if ctx.tool.name == "rocprofv3":
        r = ctx.step(rocprofv3_command(ctx.tool.path, ctx.child, out_dir), "rocprof")
        found = sorted(out_dir.rglob("*kernel_trace.csv"))
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        r = ctx.step(rocprof_legacy_command(ctx.tool.path, ctx.child, out_dir / "results.csv"), "rocprof")
        found = [out_dir / "results.csv"]
    ctx.expect(r, found[0] if found else None, f"{ctx.tool.name} finished but wrote no kernel trace under {out_dir}")


# ----------------------------------------------------------------------------------------------- sniff
def _csv_kind(header: list[str]) -> str | None:
    h = {c.strip() for c in header}
    if {"Counter_Name", "Counter_Value", "Kernel_Name"} <= h:
        return "v3_counter_collection"
    if {"Kernel_Name", "Start_Timestamp", "End_Timestamp"} <= h:
        return "v3_kernel_trace"
    if {"Direction", "Start_Timestamp", "End_Timestamp"} <= h:
        return "v3_memory_copy_trace"
    if {"Domain", "Function", "Correlation_Id", "Start_Timestamp"} <= h:
        return "v3_api_trace"
    if {"KernelName", "BeginNs", "EndNs"} <= h:
        return "legacy_results"
    if {"Name", "Calls", "TotalDurationNs", "AverageNs"} <= h:
        return "stats"
    return None


def sniff(src: Source) -> bool:
    if src.is_sqlite:
        with src.local_file() as local:
            return any(t.startswith("rocpd_") for t in (sqlite_tables(local) or ()))
    head = src.head(8192)
    if head.lstrip().startswith("{"):
        return "traceEvents" in head and ("BeginNs" in head or "CPU HIP API" in head)
    return _csv_kind(src.csv_header()) is not None


def looks_like(path: Path | Source) -> bool:
    return sniff(as_source(path))


# ----------------------------------------------------------------------------------------------- parse
def parse(path: Path | Source, opts: ParseOptions | None = None, arch: str | None = None, **_: object) -> pd.DataFrame:
    src = as_source(path)
    arch = arch or (opts.arch if opts else None)
    if src.is_sqlite:
        raise src.fail(
            "is a rocprofv3 rocpd database (ROCm 7's default output)",
            f"write CSV instead: `{V3_CSV} ...`, or convert it with `rocpd2csv`",
        )
    if src.head(64).lstrip().startswith(("{", "[")):
        return parse_legacy_json(src, arch=arch)
    header = src.csv_header()
    kind = _csv_kind(header)
    if kind is None:
        shown = [h[:30] for h in header[:6]]
        raise src.fail(
            f"not a rocprof output kprof knows (columns {shown})",
            "expected a rocprofv3 *_kernel_trace.csv / *_memory_copy_trace.csv / *_kernel_stats.csv / "
            "*_counter_collection.csv or a legacy results.csv / results.stats.csv / results.json",
        )
    if kind == "v3_kernel_trace":
        return parse_v3(src, arch=arch)
    if kind == "v3_counter_collection":
        return parse_counters(src, arch=arch)
    if kind == "v3_memory_copy_trace":
        return _finish(_v3_copies(src.table(), src), src)
    if kind == "v3_api_trace":
        raise src.fail(
            "is a rocprofv3 host API/marker trace, not GPU activity",
            "parse the *_kernel_trace.csv next to it; the API trace is joined in automatically",
        )
    if kind == "legacy_results":
        return parse_legacy_csv(src, arch=arch)
    return parse_stats(src)


def _int(col: pd.Series | None, src: Source | str, name: str) -> pd.Series:
    if col is None:
        return pd.Series(dtype="Int64")
    return whole_numbers(col, src, name)


def _agent(col: pd.Series | None, src: Source) -> pd.Series:
    """``Agent_Id``: an integer, or ``"Agent 4"`` in newer rocprofv3."""
    if col is None:
        return pd.Series(dtype="Int64")
    return whole_numbers(col.astype("string").str.replace(r"^\s*Agent\s+", "", regex=True), src, "Agent_Id")


def _finish(df: pd.DataFrame, src: Source | str, warnings: list[str] | None = None) -> pd.DataFrame:
    df["source"] = SOURCE
    if "start_ns" in df and df["start_ns"].notna().any():
        df = df.sort_values("start_ns", kind="stable").reset_index(drop=True)
    table = launch_table.validate(df, source=f"rocprof ({src})")
    table.attrs["warnings"] = list(warnings or [])
    return table


def _drop_unknown(df: pd.DataFrame, name_col: str, src: Source, warnings: list[str]) -> pd.DataFrame:
    unknown = df[name_col].astype("string").str.strip().str.lower() == _UNKNOWN
    if unknown.any():
        warnings.append(
            f"{src}: left out {int(unknown.sum())} rows named 'Unknown command type' (barrier packets, not kernels)"
        )
        df = df[~unknown.fillna(False)].reset_index(drop=True)
    return df


def _sibling(src: Source, suffixes: tuple[str, ...]) -> Path | None:
    name = src.path.name
    for ending in ("kernel_trace.csv", "kernel_trace.csv.gz", "counter_collection.csv", "counter_collection.csv.gz"):
        if name.endswith(ending):
            stem = name[: -len(ending)]
            break
    else:
        return None
    for suffix in suffixes:
        for cand in (src.path.with_name(stem + suffix), src.path.with_name(stem + suffix + ".gz")):
            if cand.exists():
                return cand
    return None


def _arch_from_agent_info(path: Path | None) -> str | None:
    """The first GPU architecture (``gfxNNN``) named in rocprofv3's agent info file, if any.

    Its column set is not pinned down here (no real one in the fixtures), so the whole text is searched
    rather than a guessed column.
    """
    if path is None:
        return None
    found = re.search(r"\bgfx[0-9a-f]{3,4}\b", Source(path).text)
    return found.group(0) if found else None


def parse_v3(path: Path | Source, arch: str | None = None) -> pd.DataFrame:
    src = as_source(path)
    k = src.table(what="rocprofv3 kernel trace")
    warnings: list[str] = []
    k = _drop_unknown(k, "Kernel_Name", src, warnings)
    if k.empty:
        return _finish(launch_table.empty(), src, warnings)

    def col(*names: str) -> pd.Series | None:
        return next((k[n] for n in names if n in k), None)

    def num(*names: str) -> pd.Series:
        c = col(*names)
        return _int(c, src, names[0]) if c is not None else pd.Series([pd.NA] * len(k), dtype="Int64")

    start, end = num("Start_Timestamp"), num("End_Timestamp")
    if start.isna().any() or end.isna().any():
        raise src.fail("kernel rows without Start_Timestamp/End_Timestamp", "the trace is damaged; capture it again")
    # each field under its rocprofv3 name first, then rocprofv2's (file plugin v2: GPU_ID, Queue_ID, TID,
    # Arch_VGPR, LDS_Per_Workgroup, ...), whose header also has Kernel_Name/Start_Timestamp/End_Timestamp
    out = pd.DataFrame(
        {
            "kernel": k["Kernel_Name"],
            "kind": "kernel",
            "count": 1,
            "start_ns": start,
            "end_ns": end,
            "duration_ns": end - start,
            "device": _agent(col("Agent_Id", "GPU_ID"), src) if col("Agent_Id", "GPU_ID") is not None else pd.NA,
            "stream": num("Stream_Id", "Queue_Id", "Queue_ID"),
            "correlation_id": num("Correlation_Id", "Correlation_ID"),
            "pid": num("Process_Id", "PID"),
            "tid": num("Thread_Id", "TID"),
            "registers_per_thread": num("VGPR_Count", "Arch_VGPR_Count", "Arch_VGPR"),
            "accum_vgprs": num("Accum_VGPR_Count", "Accum_VGPR"),
            "sgprs": num("SGPR_Count", "SGPR"),
            "shared_mem_bytes": num("LDS_Block_Size", "Group_Segment_Size", "LDS_Per_Workgroup"),
            "scratch_bytes": num("Scratch_Size", "Private_Segment_Size", "Scratch_Per_Workitem"),
            "wave_size": num("Wave_Size"),  # for the occupancy; not a launch table column
        }
    )
    _add_launch_dims(out, k, num, src, warnings)
    return _join_siblings(out, src, arch, warnings)


def _add_launch_dims(out: pd.DataFrame, k: pd.DataFrame, num: Any, src: Source, warnings: list[str]) -> None:
    """Block and grid (in blocks) from per-axis work-item counts (rocprofv3), or from rocprofv2's one total
    each (``Grid_Size``/``Workgroup_Size``, a 1-D view as in rocprof v1); a trace with neither says so rather
    than leaving grid and block empty in silence."""
    if "Workgroup_Size_X" in k:
        wg = [num(f"Workgroup_Size_{a}") for a in "XYZ"]
        grid = [num(f"Grid_Size_{a}") for a in "XYZ"]
    elif "Workgroup_Size" in k:
        one = pd.Series([1] * len(k), dtype="Int64")
        wg = [num("Workgroup_Size"), one, one]
        grid = [num("Grid_Size"), one, one]
    else:
        warnings.append(
            f"{src}: no workgroup size column (Workgroup_Size_X or Workgroup_Size): grid and block are left "
            "empty (is this a rocprof version kprof does not know? please report its header)"
        )
        wg = grid = [pd.Series([pd.NA] * len(k), dtype="Int64")] * 3
    for a, g, w in zip("xyz", grid, wg):
        out[f"block_{a}"] = w
        out[f"grid_{a}"] = _ceil_div(g, w)


SAME_RUN_SLACK_NS = 60 * 10**9


def _same_run(kernels: pd.DataFrame, starts: pd.Series, src: Source, sibling: Path, warnings: list[str]) -> bool:
    """Whether a sibling file's times overlap the kernel trace's (within a minute); a file of another run
    shares the name prefix but not the clock window, and joining it would invent launch calls and copies."""
    k = kernels["start_ns"].dropna()
    s = starts.dropna()
    if k.empty or s.empty:
        return True
    lo, hi = int(k.min()) - SAME_RUN_SLACK_NS, int(kernels["end_ns"].max()) + SAME_RUN_SLACK_NS
    if int(s.max()) < lo or int(s.min()) > hi:
        warnings.append(f"{src}: not joined: {sibling.name} covers another time window (another run?)")
        return False
    return True


def _join_siblings(out: pd.DataFrame, src: Source, arch: str | None, warnings: list[str]) -> pd.DataFrame:
    api_path = _sibling(src, ("hip_api_trace.csv", "hip_runtime_trace.csv"))
    when, who = out["start_ns"], out["tid"]
    if api_path is not None:
        out = _join_api(out, Source(api_path), src, warnings)
        has_api = out["api_start_ns"].notna()
        when = out["api_start_ns"].where(has_api, out["start_ns"])
        who = out["api_tid"].where(has_api, out["tid"])
        out["tid"] = who
        out = out.drop(columns=["api_tid"])
    marker_path = _sibling(src, ("marker_api_trace.csv",))
    if marker_path is not None:
        msrc = Source(marker_path)
        m = msrc.table(what="rocprofv3 marker trace")
        for c in ("Thread_Id", "Start_Timestamp", "End_Timestamp", "Function"):
            if c not in m:
                raise msrc.fail(f"missing column {c!r}", "a rocprofv3 *_marker_api_trace.csv has it; capture again")
        mstarts = _int(m["Start_Timestamp"], msrc, "Start_Timestamp")
        if not _same_run(out, mstarts, src, marker_path, warnings):
            m = m.iloc[0:0]
        ranges = RangeIndex(
            zip(
                _int(m["Thread_Id"], msrc, "Thread_Id"),
                _int(m["Start_Timestamp"], msrc, "Start_Timestamp"),
                _int(m["End_Timestamp"], msrc, "End_Timestamp"),
                m["Function"],
            )
        )
        out["case"] = ranges.cases(who, when)
        warnings.append(f"{src}: joined the marker trace {marker_path.name} ({len(ranges)} kprof ranges)")
    copies_path = _sibling(src, ("memory_copy_trace.csv",))
    if copies_path is not None:
        csrc = Source(copies_path)
        copies = _v3_copies(csrc.table(what="rocprofv3 memory copy trace"), csrc)
        if _same_run(out, copies["start_ns"], src, copies_path, warnings):
            out = pd.concat([out, copies], ignore_index=True)
            warnings.append(f"{src}: joined the memory copy trace {copies_path.name} ({len(copies)} copies)")
        else:
            copies_path = None
    info = _sibling(src, ("agent_info.csv",))
    arch = arch or _arch_from_agent_info(info)
    _add_amd_occupancy(out, arch)
    table = _finish(out, src, warnings)
    table.attrs["arch"] = arch
    table.attrs["joined"] = [str(p) for p in (api_path, marker_path, copies_path) if p is not None]
    return table


def _join_api(out: pd.DataFrame, asrc: Source, src: Source, warnings: list[str]) -> pd.DataFrame:
    """Launch calls joined to kernels on correlation id, and only where the call is consistent with the
    kernel: a launch call, on the kernel's dispatching thread, started before the kernel."""
    api = asrc.table(what="rocprofv3 HIP API trace")
    for c in ("Correlation_Id", "Function", "Start_Timestamp", "End_Timestamp"):
        if c not in api:
            raise asrc.fail(f"missing column {c!r}", "a rocprofv3 HIP API trace has it; capture again")
    api = (
        pd.DataFrame(
            {
                "correlation_id": _int(api["Correlation_Id"], asrc, "Correlation_Id"),
                "api_name": api["Function"],
                "api_start_ns": _int(api["Start_Timestamp"], asrc, "Start_Timestamp"),
                "api_end_ns": _int(api["End_Timestamp"], asrc, "End_Timestamp"),
                "api_pid": _int(api["Process_Id"], asrc, "Process_Id") if "Process_Id" in api else pd.NA,
                "api_tid": _int(api["Thread_Id"], asrc, "Thread_Id") if "Thread_Id" in api else pd.NA,
            }
        )
        .dropna(subset=["correlation_id"])
        .drop_duplicates("correlation_id")
    )
    if not _same_run(out, api["api_start_ns"], src, asrc.path, warnings):
        api = api.iloc[0:0]
    merged = out.merge(api, on="correlation_id", how="left")
    ok = (
        merged["api_name"].astype("string").str.contains(_LAUNCH_CALL).fillna(False).astype(bool)
        & (merged["api_start_ns"] <= merged["start_ns"]).fillna(False).astype(bool)
        & ((merged["api_tid"] == merged["tid"]).fillna(True).astype(bool) | merged["tid"].isna())
    )
    tried = merged["api_name"].notna()
    bad = tried & ~ok
    for c in ("api_name", "api_start_ns", "api_end_ns", "api_pid", "api_tid"):
        merged.loc[~ok, c] = pd.NA
    # the launch call's process where joined; else the pid the kernel trace itself has (rocprofv2, --pmc)
    own = merged["pid"] if "pid" in merged else pd.Series([pd.NA] * len(merged), dtype="Int64")
    merged["pid"] = merged["api_pid"].astype("Int64").where(ok, own)
    merged = merged.drop(columns=["api_pid"])
    merged["launch_latency_ns"] = (merged["start_ns"] - merged["api_start_ns"]).where(ok)
    merged["queue_ns"] = (merged["start_ns"] - merged["api_end_ns"]).where(ok)
    kernels = int((merged["kind"] == "kernel").sum())
    note = f"joined the HIP API trace {asrc.path.name}: launch calls of {int(ok.sum())} of {kernels} kernels"
    if bad.any():
        note += (
            f"; {int(bad.sum())} correlation ids matched a call that cannot have launched the kernel (another "
            "call, thread, or a later time: is the file from another run?) and were left unjoined"
        )
    warnings.append(f"{src}: {note}")
    return merged


def _ceil_div(a: pd.Series, b: pd.Series) -> pd.Series:
    q = a.astype("Float64") / b.astype("Float64")
    return q.apply(lambda v: math.ceil(v) if pd.notna(v) and math.isfinite(v) else pd.NA).astype("Int64")


def _v3_copies(c: pd.DataFrame, src: Source) -> pd.DataFrame:
    for need in ("Direction", "Start_Timestamp", "End_Timestamp"):
        if need not in c:
            raise src.fail(f"missing column {need!r}", "a rocprofv3 memory copy trace has it; capture again")
    start, end = _int(c["Start_Timestamp"], src, "Start_Timestamp"), _int(c["End_Timestamp"], src, "End_Timestamp")
    direction = c["Direction"].astype("string").str.replace("MEMORY_COPY_", "", regex=False)
    return pd.DataFrame(
        {
            "kernel": "[memory copy " + direction + "]",
            "kind": "memcpy",
            "count": 1,
            "start_ns": start,
            "end_ns": end,
            "duration_ns": end - start,
            "copy_kind": direction.map(_DIRECTION),
            "stream": _int(c.get("Stream_Id"), src, "Stream_Id"),
            "correlation_id": _int(c.get("Correlation_Id"), src, "Correlation_Id"),
            "device": _copy_device(c, direction, src),
            "bytes": _int(c["Bytes"], src, "Bytes") if "Bytes" in c else pd.NA,
        }
    )


def _copy_device(c: pd.DataFrame, direction: pd.Series, src: Source) -> pd.Series:
    """The GPU of each copy: its destination agent, but its source for a device-to-host copy (whose destination
    is the CPU agent, an id that would pass for a GPU index), and none for a host-to-host copy."""
    dst = _agent(c["Destination_Agent_Id"], src) if "Destination_Agent_Id" in c else pd.Series([pd.NA] * len(c))
    srcs = _agent(c["Source_Agent_Id"], src) if "Source_Agent_Id" in c else pd.Series([pd.NA] * len(c))
    device = dst.astype("Int64").where((direction != "DEVICE_TO_HOST").fillna(True), srcs.astype("Int64"))
    return device.where((direction != "HOST_TO_HOST").fillna(True), pd.NA)


# ------------------------------------------------------------------------------------ counter collection
def parse_counters(path: Path | Source, arch: str | None = None) -> pd.DataFrame:
    """``*_counter_collection.csv``: one row per (dispatch, counter) -> one launch per dispatch."""
    src = as_source(path)
    c = src.table(what="rocprofv3 counter collection")
    warnings: list[str] = []
    c = _drop_unknown(c, "Kernel_Name", src, warnings)
    if c.empty:
        return _finish(launch_table.empty(), src, warnings)
    key = "Dispatch_Id" if "Dispatch_Id" in c else "Correlation_Id"
    if key not in c:
        raise src.fail(
            "counter collection without Dispatch_Id or Correlation_Id",
            "rows of one dispatch cannot be told apart; capture with a newer rocprofv3",
        )
    ids = _int(c[key], src, key)
    values: dict[int, dict[str, float]] = {}
    from kprof.profilers._io import real_numbers

    vals = real_numbers(c["Counter_Value"], src, "Counter_Value")
    for i, name, v in zip(ids.tolist(), c["Counter_Name"].tolist(), vals.tolist()):
        if i is pd.NA:
            raise src.fail(f"a row without {key}", "the file is damaged; capture again")
        values.setdefault(i, {})[str(name)] = None if v is pd.NA else float(v)
    first = c.assign(_key=ids).drop_duplicates("_key").reset_index(drop=True)

    def num(name: str) -> pd.Series:
        return _int(first[name], src, name) if name in first else pd.Series([pd.NA] * len(first), dtype="Int64")

    start, end = num("Start_Timestamp"), num("End_Timestamp")
    block = num("Workgroup_Size") if "Workgroup_Size" in first else num("Workgroup_Size_X")
    grid_items = num("Grid_Size") if "Grid_Size" in first else num("Grid_Size_X")
    out = pd.DataFrame(
        {
            "kernel": first["Kernel_Name"],
            "kind": "kernel",
            "count": 1,
            "start_ns": start,
            "end_ns": end,
            "duration_ns": end - start,
            "device": _agent(first["Agent_Id"], src) if "Agent_Id" in first else pd.NA,
            "stream": num("Queue_Id"),
            "correlation_id": num("Correlation_Id"),
            "pid": num("Process_Id"),
            "tid": num("Thread_Id"),
            # one number each: the total work-items and workgroup size (a 1-D view of the launch)
            "block_x": block,
            "block_y": 1,
            "block_z": 1,
            "grid_x": _ceil_div(grid_items, block),
            "grid_y": 1,
            "grid_z": 1,
            "registers_per_thread": num("VGPR_Count"),
            "accum_vgprs": num("Accum_VGPR_Count"),
            "sgprs": num("SGPR_Count"),
            "shared_mem_bytes": num("LDS_Block_Size"),
            "scratch_bytes": num("Scratch_Size"),
            "counters": [json.dumps(values[i], sort_keys=True) for i in first["_key"].tolist()],
        }
    )
    if out["start_ns"].isna().all():  # older rocprofv3 wrote no timestamps here: a launch with no time
        raise src.fail(
            "counter collection without Start_Timestamp/End_Timestamp (no kernel times)",
            f"add --kernel-trace and parse the *_kernel_trace.csv (`{V3_CSV} --pmc ...`)",
        )
    n = len(next(iter(values.values()))) if values else 0
    warnings.append(f"{src}: {len(c)} counter rows pivoted to {len(out)} launches ({n} counters each)")
    return _join_siblings(out, src, arch, warnings)


def _add_amd_occupancy(out: pd.DataFrame, arch: str | None) -> None:
    if not arch or out.empty:
        return
    try:
        limits = amd_limits(arch)
    except ValueError:
        return
    wave = out["wave_size"] if "wave_size" in out else pd.Series([pd.NA] * len(out))
    pct, lim = [], []
    for r, w in zip(out.itertuples(), wave):
        vals = (r.block_x, r.block_y, r.block_z, r.registers_per_thread)
        if getattr(r, "kind", "kernel") != "kernel" or any(pd.isna(v) for v in vals):
            pct.append(pd.NA)
            lim.append(pd.NA)
            continue
        accum = getattr(r, "accum_vgprs", pd.NA)
        sg = getattr(r, "sgprs", pd.NA)
        smem = getattr(r, "shared_mem_bytes", pd.NA)
        occ = amd_occupancy(
            int(r.block_x) * int(r.block_y) * int(r.block_z),
            int(r.registers_per_thread),
            0 if pd.isna(accum) else int(accum),
            0 if pd.isna(sg) else int(sg),
            0 if pd.isna(smem) else int(smem),
            limits,
            wave_size=None if pd.isna(w) else int(w),
        )
        pct.append(occ.occupancy_pct)
        lim.append(occ.limiter)
    out["occupancy_theoretical_pct"] = pct
    out["occupancy_limiter"] = lim


# ------------------------------------------------------------------------------------------ legacy CSV
def _rejoin_names(src: Source, name_col: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a legacy CSV whose ``name_col`` may hold unquoted commas: the extra fields of a
    row are joined back into the name (the only free-text column)."""
    rows = src.csv_rows()
    if not rows:
        raise src.fail("empty file", "the profiler wrote nothing; did it fail?")
    header = [h.strip() for h in rows[0]]
    name_at = header.index(name_col)
    fixed = []
    for i, r in enumerate(rows[1:], start=2):
        extra = len(r) - len(header)
        if extra > 0:  # an unquoted kernel name that contains commas
            r = r[:name_at] + [",".join(r[name_at : name_at + extra + 1])] + r[name_at + extra + 1 :]
        elif extra < 0:
            raise src.fail(
                f"line {i} has {len(r)} fields, the header {len(header)}", "the file is truncated; export it again"
            )
        fixed.append(r)
    return header, fixed


def parse_legacy_csv(path: Path | Source, arch: str | None = None) -> pd.DataFrame:
    src = as_source(path)
    header, rows = _rejoin_names(src, "KernelName")
    k = src.table([header, *rows], what="rocprof results.csv")
    warnings: list[str] = []
    k = _drop_unknown(k, "KernelName", src, warnings)
    if k.empty:
        return _finish(launch_table.empty(), src, warnings)

    def num(*names: str) -> pd.Series:
        c = next((k[n] for n in names if n in k), None)
        return _int(c, src, names[0]) if c is not None else pd.Series([pd.NA] * len(k), dtype="Int64")

    begin, end = num("BeginNs"), num("EndNs")
    if begin.isna().any() or end.isna().any():
        raise src.fail("kernel rows without BeginNs/EndNs", "profile with `rocprof --timestamp on`")
    wgr = num("wgr")
    out = pd.DataFrame(
        {
            "kernel": k["KernelName"],
            "kind": "kernel",
            "count": 1,
            "start_ns": begin,
            "end_ns": end,
            "duration_ns": end - begin,
            "device": num("gpu-id"),
            "stream": num("queue-id"),
            "pid": num("pid"),
            "tid": num("tid"),
            "grid_x": _ceil_div(num("grd"), wgr),
            "grid_y": 1,
            "grid_z": 1,
            "block_x": wgr,
            "block_y": 1,
            "block_z": 1,
            "registers_per_thread": num("arch_vgpr", "vgpr"),
            "accum_vgprs": num("accum_vgpr"),
            "sgprs": num("sgpr"),
            "shared_mem_bytes": num("lds"),
            "scratch_bytes": num("scr"),
            "wave_size": num("wave_size"),
        }
    )
    dispatch = num("DispatchNs")
    if dispatch.notna().any():
        # the dispatch packet was written at DispatchNs: its distance to BeginNs is queueing on the GPU
        out["queue_ns"] = begin - dispatch
    _add_amd_occupancy(out, arch)
    return _finish(out.drop(columns=["wave_size"]), src, warnings)


def parse_stats(path: Path | Source) -> pd.DataFrame:
    """``results.stats.csv`` / ``*_kernel_stats.csv`` / copy stats: one summary row per name."""
    src = as_source(path)
    header, rows = _rejoin_names(src, "Name")
    s = src.table([header, *rows], what="rocprof statistics")
    warnings: list[str] = []
    s = _drop_unknown(s, "Name", src, warnings)
    name = src.name
    names = s["Name"].astype("string").fillna("")
    if "domain_stats" in name or (
        len(names) > 0 and names.str.match(_DOMAIN).all() and not name.endswith(("copy_stats.csv",))
    ):
        raise src.fail(
            "summarises rocprofv3 tracing domains (HIP API, kernel dispatch, copies as a whole), not kernels",
            "parse the *_kernel_stats.csv or the *_kernel_trace.csv instead",
        )
    host_api = name.endswith(("hip_stats.csv", "hip_api_stats.csv", "hsa_stats.csv", "hsa_api_stats.csv")) or (
        len(names) > 0 and names.str.match(_HOST_API).all()
    )
    if host_api:
        raise src.fail(
            "summarises host HIP/HSA API calls, not GPU work",
            "parse the kernel stats (results.stats.csv / *_kernel_stats.csv) or a kernel trace instead",
        )
    calls = _int(s["Calls"], src, "Calls")
    if (calls.fillna(0) < 1).any():
        raise src.fail("a statistics row has no calls (Calls < 1)", "the file is damaged; export it again")
    total = _int(s["TotalDurationNs"], src, "TotalDurationNs")
    avg = (total.astype("Float64") / calls.astype("Float64")).round()
    is_copy = name.endswith(("copy_stats.csv", "memory_copy_stats.csv")) or (
        len(names) > 0 and names.str.startswith(("Copy", "MEMORY_COPY")).all()
    )
    out = pd.DataFrame({"kernel": names, "count": calls, "duration_ns": avg, "kind": "memcpy" if is_copy else "kernel"})
    if is_copy:
        out["copy_kind"] = names.str.replace("MEMORY_COPY_", "", regex=False).map(_DIRECTION)
        fill = names.str.contains("Fill|Memset", case=False).fillna(False).astype(bool)
        out.loc[fill, "kind"] = "memset"  # a buffer fill is a memset, not a copy
    table = _finish(out, src, warnings)
    table.attrs["summary"] = True
    return table


# ----------------------------------------------------------------------------------------- legacy JSON
_LAUNCH_DIMS = re.compile(r"(numBlocks|dimBlocks)\(\{z\((\d+)\) y\((\d+)\) x\((\d+)\}?\)")


def _ev_int(src: Source, e: dict, key: str, args: dict | None = None) -> int:
    holder = e if args is None else args
    if key not in holder:
        raise src.fail(f"an event has no {key!r}", "the trace is damaged or cut short; export it again")
    v = whole_numbers([holder[key]], src, key).iloc[0]
    if v is pd.NA:
        raise src.fail(f"an event's {key!r} is empty", "the trace is damaged; export it again")
    return int(v)


def parse_legacy_json(path: Path | Source, arch: str | None = None) -> pd.DataFrame:
    src = as_source(path)
    data = src.json()
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise src.fail("no 'traceEvents' list", "not a rocprof JSON trace")
    events = [e for e in events if isinstance(e, dict)]
    proc_names = {
        str(e.get("pid")): str((e.get("args") if isinstance(e.get("args"), dict) else {}).get("name", ""))
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    if not any(n.startswith("GPU") or n == "CPU HIP API" for n in proc_names.values()):
        raise src.fail("a Chrome trace without rocprof's GPU*/CPU HIP API processes", "not a rocprof JSON trace")
    api, gpu = [], []
    warnings: list[str] = []
    for e in events:
        if e.get("ph") != "X":
            continue
        pname = proc_names.get(str(e.get("pid")), "")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if "BeginNs" not in args:
            continue
        name = str(args.get("Name", e.get("name")))
        if name.strip().lower() == _UNKNOWN:
            warnings.append(f"{src}: left out a row named 'Unknown command type' (a barrier packet)")
            continue
        rec = {
            "pid_track": str(e.get("pid")),
            "tid_track": str(e.get("tid")),
            "ts": _ev_int(src, e, "ts"),
            "begin": _ev_int(src, e, "BeginNs", args),
            "end": _ev_int(src, e, "EndNs", args),
            "name": name,
            "args": args,
        }
        if pname == "CPU HIP API":
            api.append(rec)
        elif pname.startswith("GPU") or pname == "COPY":
            rec["copy"] = pname == "COPY"
            gpu.append(rec)
    # flow events: 's' on the API thread at the call, 't' on the GPU track at the kernel's ts
    starts = {str(e["id"]): e for e in events if e.get("ph") == "s" and "id" in e}
    api_by_track: dict[tuple[str, str], list[dict]] = {}
    for a in api:
        api_by_track.setdefault((a["pid_track"], a["tid_track"]), []).append(a)
    gpu_by_key = {(g["pid_track"], g["tid_track"], g["ts"]): g for g in gpu}
    for e in events:
        if e.get("ph") != "t" or str(e.get("id")) not in starts:
            continue
        g = gpu_by_key.get((str(e.get("pid")), str(e.get("tid")), _ev_int(src, e, "ts")))
        s = starts[str(e["id"])]
        if g is None:
            continue
        s_ts = _ev_int(src, s, "ts")
        for a in api_by_track.get((str(s.get("pid")), str(s.get("tid"))), []):
            if a["ts"] <= s_ts <= a["ts"] + (a["end"] - a["begin"]) // 1000 + 1:
                g["api"] = a
                break
    rows = []
    for g in gpu:
        a = g.get("api")
        args = g["args"]
        row: dict[str, Any] = {
            "kernel": g["name"],
            "kind": "memcpy" if g["copy"] else "kernel",
            "count": 1,
            "start_ns": g["begin"],
            "end_ns": g["end"],
            "duration_ns": g["end"] - g["begin"],
            "device": _maybe_int(args.get("dev-id")),
            "stream": _maybe_int(args.get("stream-id")),
            "pid": _maybe_int(args.get("pid")),
            "tid": _maybe_int(args.get("tid")),
        }
        if g["copy"]:
            row["copy_kind"] = _DIRECTION.get(g["name"])
            if "Fill" in g["name"]:
                row["kind"] = "memset"
        if a is not None and a["begin"] <= g["begin"]:
            row.update(
                api_name=a["name"],
                api_start_ns=a["begin"],
                api_end_ns=a["end"],
                launch_latency_ns=g["begin"] - a["begin"],
                queue_ns=g["begin"] - a["end"],
            )
            for which, z, y, x in _LAUNCH_DIMS.findall(str(a["args"].get("args", ""))):
                prefix = "grid" if which == "numBlocks" else "block"
                row.update({f"{prefix}_x": int(x), f"{prefix}_y": int(y), f"{prefix}_z": int(z)})
            smem = re.search(r"sharedMemBytes\((\d+)\)", str(a["args"].get("args", "")))
            if smem:
                row["shared_mem_bytes"] = int(smem.group(1))
        rows.append(row)
    if not rows:
        return _finish(launch_table.empty(), src, warnings)
    table = _finish(pd.DataFrame(rows), src, warnings)
    other = json.dumps(data.get("otherData", {}))
    found = re.search(r"gfx[0-9a-f]+", other)
    table.attrs["arch"] = arch or (found.group(0) if found else None)
    return table


def _maybe_int(v: Any) -> Any:
    try:
        out = whole_numbers([v], "", "").iloc[0]
    except TraceFormatError:
        return pd.NA
    return out


BACKEND = Backend(
    name="rocprof",
    description="AMD rocprofv3 / rocprof",
    sniff=sniff,
    parse=parse,
    marker="roctx",
    tools=TOOLS,
    default_repeats=5,
    capture=capture,
    auto_vendor="amd",
    sniff_rank=25,
)
