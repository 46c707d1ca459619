"""rocprof (AMD): rocprofv3 CSVs and legacy rocprof v1/v2 CSV/JSON outputs, into the launch table.

Column sets change between ROCm releases, so everything is mapped by column name and absent columns stay
``<NA>``. Timestamps of both generations are nanoseconds.

rocprofv3 (``--kernel-trace --hip-trace --marker-trace --memory-copy-trace --output-format csv``):

* ``*_kernel_trace.csv``: one row per dispatch. ``Agent_Id`` is an integer or ``"Agent 4"``; grid sizes
  are in *work-items* (HSA), so ``grid_x = ceil(Grid_Size_X / Workgroup_Size_X)`` blocks; ``VGPR_Count``,
  ``Accum_VGPR_Count``, ``SGPR_Count``, ``LDS_Block_Size`` (or ``Group_Segment_Size``) and
  ``Scratch_Size`` (or ``Private_Segment_Size``) where that ROCm writes them.
* Siblings with the same prefix are joined when present: ``*_hip_api_trace.csv`` (or the older
  ``*_hip_runtime_trace.csv``) on ``Correlation_Id`` for the launch call; ``*_marker_api_trace.csv``
  for roctx ranges (``kprof::<case>``, attributed by the launch call's thread and start time, or the
  kernel's dispatching thread and start when no HIP trace is there); ``*_memory_copy_trace.csv`` for
  copies; ``*_agent_info.csv`` for the GPU architecture (occupancy).
* ``*_kernel_stats.csv`` (Name, Calls, TotalDurationNs, AverageNs, ...): one summary row per kernel.

Legacy rocprof: ``results.csv`` (``--timestamp on``; KernelName, gpu-id, queue-id, tid, grd, wgr, lds,
scr, arch_vgpr or vgpr, accum_vgpr, sgpr, wave_size, DispatchNs/BeginNs/EndNs), ``results.stats.csv``,
``results.copy_stats.csv`` and ``results.json`` (Chrome trace with BeginNs/EndNs in args and flow events
from each hipLaunchKernel to its kernel). Some old versions write kernel names unquoted although they
contain commas; the extra fields are joined back into the name. ``[clone .kd]`` suffixes are dropped so
names match rocprofv3's.

Occupancy for AMD is computed (``kprof.occupancy.amd_occupancy``) from workgroup size, VGPRs, AGPRs,
SGPRs and LDS when the architecture is known (``arch=`` / ``kprof parse --arch gfx942``, or an agent
info file next to the trace); otherwise it is left empty rather than guessed.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.occupancy import amd_limits, amd_occupancy
from kprof.profilers._files import csv_header, head
from kprof.profilers._ranges import RangeIndex

SOURCE = "rocprof"
_CLONE = re.compile(r"\s*\[clone \.kd\]\s*$")
_DIRECTION = {"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH", "DEVICE_TO_DEVICE": "DtoD",
              "HOST_TO_HOST": "HtoH", "CopyHostToDevice": "HtoD", "CopyDeviceToHost": "DtoH",
              "CopyDeviceToDevice": "DtoD", "CopyHostToHost": "HtoH"}


# --------------------------------------------------------------------------------------------- capture
def rocprofv3_command(tool: str, child: list[str], out_dir: Path) -> list[str]:
    return [tool, "--kernel-trace", "--hip-trace", "--marker-trace", "--memory-copy-trace", "--stats",
            "--output-format", "csv", "-d", str(out_dir), "-o", "kprof", "--", *child]


def rocprof_legacy_command(tool: str, child: list[str], out_csv: Path) -> list[str]:
    return [tool, "--hip-trace", "--roctx-trace", "--timestamp", "on", "--stats", "-o", str(out_csv), *child]


# ----------------------------------------------------------------------------------------------- sniff
def _csv_kind(path: Path, header: list[str]) -> str | None:
    h = set(header)
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


def looks_like(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith(".csv"):
        return _csv_kind(path, csv_header(path)) is not None
    if name.endswith(".json"):
        text = head(path, 8192)
        return "traceEvents" in text and ("BeginNs" in text or "CPU HIP API" in text)
    return False


# ----------------------------------------------------------------------------------------------- parse
def parse(path: Path, arch: str | None = None) -> pd.DataFrame:
    path = Path(path)
    if path.suffix.lower() == ".json" or head(path, 64).lstrip().startswith(("{", "[")):
        return parse_legacy_json(path, arch=arch)
    header = csv_header(path)
    kind = _csv_kind(path, header)
    if kind is None:
        shown = [h[:30] for h in header[:6]]
        raise TraceFormatError(f"{path}: not a rocprof output kprof knows (columns {shown}); expected a "
                               "rocprofv3 *_kernel_trace.csv / *_memory_copy_trace.csv / *_kernel_stats.csv or "
                               "a legacy results.csv / results.stats.csv / results.json")
    if kind == "v3_kernel_trace":
        return parse_v3(path, arch=arch)
    if kind == "v3_memory_copy_trace":
        return _finish(_v3_copies(_read_csv(path)), path)
    if kind == "v3_api_trace":
        raise TraceFormatError(f"{path} is a rocprofv3 host API/marker trace, not GPU activity; parse the "
                               "*_kernel_trace.csv next to it (the API trace is joined in automatically)")
    if kind == "legacy_results":
        return parse_legacy_csv(path, arch=arch)
    return parse_stats(path)


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"{path}: unreadable CSV ({exc})") from None


def _int(col: pd.Series | None) -> pd.Series:
    if col is None:
        return pd.Series(dtype="Int64")
    digits = col.astype(str).str.extract(r"(-?\d+)")[0]  # "Agent 4" -> 4
    return pd.to_numeric(digits, errors="coerce").astype("Int64")


def _finish(df: pd.DataFrame, path: Path | str) -> pd.DataFrame:
    df["source"] = SOURCE
    if "start_ns" in df and df["start_ns"].notna().any():
        df = df.sort_values("start_ns", kind="stable").reset_index(drop=True)
    return launch_table.validate(df, source=f"rocprof ({path})")


def _sibling(path: Path, suffixes: tuple[str, ...]) -> Path | None:
    stem = path.name[: -len("kernel_trace.csv")] if path.name.endswith("kernel_trace.csv") else None
    if stem is None:
        return None
    for suffix in suffixes:
        cand = path.with_name(stem + suffix)
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
    found = re.search(r"\bgfx[0-9a-f]{3,4}\b", path.read_text(errors="replace"))
    return found.group(0) if found else None


def parse_v3(path: Path, arch: str | None = None) -> pd.DataFrame:
    k = _read_csv(path)
    if k.empty:
        return launch_table.empty()

    def col(*names: str) -> pd.Series | None:
        return next((k[n] for n in names if n in k), None)

    start, end = _int(col("Start_Timestamp")), _int(col("End_Timestamp"))
    wg = [_int(col(f"Workgroup_Size_{a}")) for a in "XYZ"]
    grid = [_int(col(f"Grid_Size_{a}")) for a in "XYZ"]
    out = pd.DataFrame({
        "kernel": k["Kernel_Name"].str.replace(_CLONE, "", regex=True),
        "kind": "kernel", "count": 1,
        "start_ns": start, "end_ns": end, "duration_ns": end - start,
        "device": _int(col("Agent_Id")),
        "stream": _int(col("Stream_Id", "Queue_Id")),
        "correlation_id": _int(col("Correlation_Id")),
        "tid": _int(col("Thread_Id")),
        "block_x": wg[0], "block_y": wg[1], "block_z": wg[2],
        "registers_per_thread": _int(col("VGPR_Count", "Arch_VGPR_Count")),
        "accum_vgprs": _int(col("Accum_VGPR_Count")),
        "sgprs": _int(col("SGPR_Count")),
        "shared_mem_bytes": _int(col("LDS_Block_Size", "Group_Segment_Size")),
        "scratch_bytes": _int(col("Scratch_Size", "Private_Segment_Size")),
    })
    for a, g, w in zip("xyz", grid, wg):
        out[f"grid_{a}"] = _ceil_div(g, w)
    api_path = _sibling(path, ("hip_api_trace.csv", "hip_runtime_trace.csv"))
    when, who = out["start_ns"], out["tid"]
    if api_path is not None:
        api = _read_csv(api_path)
        api = pd.DataFrame({
            "correlation_id": _int(api["Correlation_Id"]), "api_name": api["Function"],
            "api_start_ns": _int(api["Start_Timestamp"]), "api_end_ns": _int(api["End_Timestamp"]),
            "pid": _int(api.get("Process_Id")), "api_tid": _int(api.get("Thread_Id")),
        }).drop_duplicates("correlation_id")
        out = out.merge(api, on="correlation_id", how="left")
        out["launch_latency_ns"] = out["start_ns"] - out["api_start_ns"]
        out["queue_ns"] = out["start_ns"] - out["api_end_ns"]
        has_api = out["api_start_ns"].notna()
        when = out["api_start_ns"].where(has_api, out["start_ns"])
        who = out["api_tid"].where(has_api, out["tid"])
        out["tid"] = who
    marker_path = _sibling(path, ("marker_api_trace.csv",))
    if marker_path is not None:
        m = _read_csv(marker_path)
        ranges = RangeIndex(zip(_int(m["Thread_Id"]), _int(m["Start_Timestamp"]), _int(m["End_Timestamp"]),
                                m["Function"]))
        out["case"] = ranges.cases(who, when)
    copies_path = _sibling(path, ("memory_copy_trace.csv",))
    if copies_path is not None:
        out = pd.concat([out, _v3_copies(_read_csv(copies_path))], ignore_index=True)
    arch = arch or _arch_from_agent_info(_sibling(path, ("agent_info.csv",)))
    _add_amd_occupancy(out, arch)
    table = _finish(out, path)
    table.attrs["arch"] = arch
    table.attrs["joined"] = [str(p) for p in (api_path, marker_path, copies_path) if p is not None]
    return table


def _ceil_div(a: pd.Series, b: pd.Series) -> pd.Series:
    q = a.astype("Float64") / b.astype("Float64")
    return q.apply(lambda v: math.ceil(v) if pd.notna(v) else pd.NA).astype("Int64")


def _v3_copies(c: pd.DataFrame) -> pd.DataFrame:
    start, end = _int(c["Start_Timestamp"]), _int(c["End_Timestamp"])
    direction = c["Direction"].str.replace("MEMORY_COPY_", "", regex=False)
    return pd.DataFrame({
        "kernel": "[memory copy " + direction + "]", "kind": "memcpy", "count": 1,
        "start_ns": start, "end_ns": end, "duration_ns": end - start,
        "copy_kind": direction.map(_DIRECTION), "stream": _int(c.get("Stream_Id")),
        "correlation_id": _int(c.get("Correlation_Id")), "device": _int(c.get("Destination_Agent_Id")),
        "bytes": _int(c["Bytes"]) if "Bytes" in c else pd.NA,
    })


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
        occ = amd_occupancy(
            int(r.block_x) * int(r.block_y) * int(r.block_z), int(r.registers_per_thread),
            0 if pd.isna(r.accum_vgprs) else int(r.accum_vgprs), 0 if pd.isna(r.sgprs) else int(r.sgprs),
            0 if pd.isna(r.shared_mem_bytes) else int(r.shared_mem_bytes), limits,
            wave_size=None if pd.isna(w) else int(w),
        )
        pct.append(occ.occupancy_pct)
        lim.append(occ.limiter)
    out["occupancy_theoretical_pct"] = pct
    out["occupancy_limiter"] = lim


# ------------------------------------------------------------------------------------------ legacy CSV
def _read_legacy_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise TraceFormatError(f"{path}: empty file")
    header = rows[0]
    name_at = header.index("KernelName")
    fixed = []
    for i, r in enumerate(rows[1:], start=2):
        if not r:
            continue
        extra = len(r) - len(header)
        if extra > 0:  # an unquoted kernel name that contains commas
            r = r[:name_at] + [",".join(r[name_at:name_at + extra + 1])] + r[name_at + extra + 1:]
        elif extra < 0:
            raise TraceFormatError(f"{path}: line {i} has {len(r)} fields, the header {len(header)} (truncated?)")
        fixed.append(r)
    return header, fixed


def parse_legacy_csv(path: Path, arch: str | None = None) -> pd.DataFrame:
    header, rows = _read_legacy_rows(path)
    k = pd.DataFrame(rows, columns=header)
    if k.empty:
        return launch_table.empty()

    def col(*names: str) -> pd.Series | None:
        return next((k[n] for n in names if n in k), None)

    begin, end = _int(col("BeginNs")), _int(col("EndNs"))
    wgr = _int(col("wgr"))
    out = pd.DataFrame({
        "kernel": k["KernelName"].str.replace(_CLONE, "", regex=True),
        "kind": "kernel", "count": 1,
        "start_ns": begin, "end_ns": end, "duration_ns": end - begin,
        "device": _int(col("gpu-id")), "stream": _int(col("queue-id")),
        "pid": _int(col("pid")), "tid": _int(col("tid")),
        "grid_x": _ceil_div(_int(col("grd")), wgr), "grid_y": 1, "grid_z": 1,
        "block_x": wgr, "block_y": 1, "block_z": 1,
        "registers_per_thread": _int(col("arch_vgpr", "vgpr")),
        "accum_vgprs": _int(col("accum_vgpr")),
        "sgprs": _int(col("sgpr")),
        "shared_mem_bytes": _int(col("lds")),
        "scratch_bytes": _int(col("scr")),
        "wave_size": _int(col("wave_size")),
    })
    dispatch = _int(col("DispatchNs"))
    if dispatch.notna().any():
        # the dispatch packet was written at DispatchNs: its distance to BeginNs is queueing on the GPU
        out["queue_ns"] = begin - dispatch
    _add_amd_occupancy(out, arch)
    return _finish(out.drop(columns=["wave_size"]), path)


def parse_stats(path: Path) -> pd.DataFrame:
    s = _read_csv(path)
    name = path.name.lower()
    names = s["Name"].astype(str)
    host_api = name.endswith(("hip_stats.csv", "hip_api_stats.csv", "hsa_stats.csv", "hsa_api_stats.csv")) or (
        len(names) > 0 and names.str.match(r"^(hip|hsa)[A-Z_]").all())
    if host_api:
        raise TraceFormatError(f"{path} summarises host HIP/HSA API calls, not GPU work; parse the kernel stats "
                               "(results.stats.csv / *_kernel_stats.csv) or a kernel trace instead")
    calls = _int(s["Calls"])
    avg = (pd.to_numeric(s["TotalDurationNs"], errors="coerce") / calls.astype("float64")).round()
    is_copy = name.endswith(("copy_stats.csv", "memory_copy_stats.csv")) or (
        len(names) > 0 and names.str.startswith(("Copy", "MEMORY_COPY")).all())
    out = pd.DataFrame({
        "kernel": names.str.replace(_CLONE, "", regex=True), "count": calls, "duration_ns": avg,
        "kind": "memcpy" if is_copy else "kernel",
    })
    if is_copy:
        out["copy_kind"] = names.str.replace("MEMORY_COPY_", "", regex=False).map(_DIRECTION)
    return _finish(out, path)


# ----------------------------------------------------------------------------------------- legacy JSON
_LAUNCH_DIMS = re.compile(r"(numBlocks|dimBlocks)\(\{z\((\d+)\) y\((\d+)\) x\((\d+)\}?\)")


def parse_legacy_json(path: Path, arch: str | None = None) -> pd.DataFrame:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"{path}: not readable as a rocprof JSON trace: {exc}") from None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise TraceFormatError(f"{path}: no 'traceEvents' list: not a rocprof JSON trace")
    proc_names = {str(e.get("pid")): (e.get("args") or {}).get("name", "") for e in events
                  if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name"}
    if not any(n.startswith("GPU") or n == "CPU HIP API" for n in proc_names.values()):
        raise TraceFormatError(f"{path}: a Chrome trace without rocprof's GPU*/CPU HIP API processes")
    api, gpu = [], []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        pname = proc_names.get(str(e.get("pid")), "")
        args = e.get("args") or {}
        if "BeginNs" not in args:
            continue
        rec = {"pid_track": str(e.get("pid")), "tid_track": str(e.get("tid")), "ts": int(float(e["ts"])),
               "begin": int(args["BeginNs"]), "end": int(args["EndNs"]), "name": str(args.get("Name", e.get("name"))),
               "args": args}
        if pname == "CPU HIP API":
            api.append(rec)
        elif pname.startswith("GPU") or pname == "COPY":
            rec["copy"] = pname == "COPY"
            gpu.append(rec)
    # flow events: 's' on the API thread at the call, 't' on the GPU track at the kernel's ts
    starts = {e["id"]: e for e in events if isinstance(e, dict) and e.get("ph") == "s" and "id" in e}
    api_by_track: dict[tuple[str, str], list[dict]] = {}
    for a in api:
        api_by_track.setdefault((a["pid_track"], a["tid_track"]), []).append(a)
    gpu_by_key = {(g["pid_track"], g["tid_track"], g["ts"]): g for g in gpu}
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "t" or e.get("id") not in starts:
            continue
        g = gpu_by_key.get((str(e.get("pid")), str(e.get("tid")), int(float(e["ts"]))))
        s = starts[e["id"]]
        if g is None:
            continue
        for a in api_by_track.get((str(s.get("pid")), str(s.get("tid"))), []):
            if a["ts"] <= int(float(s["ts"])) <= a["ts"] + (a["end"] - a["begin"]) // 1000 + 1:
                g["api"] = a
                break
    rows = []
    for g in gpu:
        a = g.get("api")
        args = g["args"]
        row: dict[str, Any] = {
            "kernel": _CLONE.sub("", g["name"]), "kind": "memcpy" if g["copy"] else "kernel", "count": 1,
            "start_ns": g["begin"], "end_ns": g["end"], "duration_ns": g["end"] - g["begin"],
            "device": _maybe_int(args.get("dev-id")), "stream": _maybe_int(args.get("stream-id")),
            "pid": _maybe_int(args.get("pid")), "tid": _maybe_int(args.get("tid")),
        }
        if g["copy"]:
            row["copy_kind"] = _DIRECTION.get(g["name"])
        if a is not None:
            row.update(api_name=a["name"], api_start_ns=a["begin"], api_end_ns=a["end"],
                       launch_latency_ns=g["begin"] - a["begin"], queue_ns=g["begin"] - a["end"])
            for which, z, y, x in _LAUNCH_DIMS.findall(str(a["args"].get("args", ""))):
                prefix = "grid" if which == "numBlocks" else "block"
                row.update({f"{prefix}_x": int(x), f"{prefix}_y": int(y), f"{prefix}_z": int(z)})
            smem = re.search(r"sharedMemBytes\((\d+)\)", str(a["args"].get("args", "")))
            if smem:
                row["shared_mem_bytes"] = int(smem.group(1))
        rows.append(row)
    if not rows:
        return launch_table.empty()
    table = _finish(pd.DataFrame(rows), path)
    other = json.dumps(data.get("otherData", {}))
    found = re.search(r"gfx[0-9a-f]+", other)
    table.attrs["arch"] = arch or (found.group(0) if found else None)
    return table


def _maybe_int(v: Any) -> Any:
    try:
        return int(v)
    except (TypeError, ValueError):
        return pd.NA
