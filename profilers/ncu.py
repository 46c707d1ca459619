"""Nsight Compute: drive ``ncu`` with a chosen metric list, read its ``--csv --page raw`` output.

Capture: ``ncu --metrics ... --clock-control none --nvtx --nvtx-include "regex:kprof::.*/"`` around
``python -m kprof.replay``; only kernels launched inside a ``kprof::<case>`` NVTX range are profiled, so
warm-up launches are never replayed. ``--clock-control none`` leaves the GPU clocks as they are (ncu
otherwise locks them to base clock, and its durations would not be comparable with nsys or
torch.profiler). ncu keeps its default ``--cache-control all``: caches are flushed before every profiled
kernel, the same cold-L2 condition as kprof's own timer. The CSV goes straight to a log file with
``--print-units base`` (bytes, ns).

The raw CSV: optional tool banner lines (``==PROF==`` ...) before the header; a header row starting with
``"ID"``; a units row (ID empty) after it; numbers may carry thousands separators (``"1,678,297.60"``);
units are converted to bytes and nanoseconds whatever prefix ncu chose (``Kbyte``, ``usecond`` ...).
The NVTX column (``thread Domain:Push/Pop_Range:...``) holds the ranges open at the launch; the innermost
``kprof::`` one names the case.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers._files import head

SOURCE = "ncu"

METRICS: tuple[str, ...] = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy
    "sm__maximum_warps_per_active_cycle_pct",  # theoretical occupancy
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__grid_size",
    "launch__block_size",
    "launch__waves_per_multiprocessor",
)

# ncu's limiter metric -> kprof's limiter names (kprof.occupancy)
_LIMITERS = {
    "launch__occupancy_limit_warps": "warps",
    "launch__occupancy_limit_registers": "registers",
    "launch__occupancy_limit_shared_mem": "shared_memory",
    "launch__occupancy_limit_blocks": "blocks",
    "launch__occupancy_limit_barriers": "barriers",
}
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_TIME = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
_NVTX_CASE = re.compile(r"kprof::([^:\"]+)")


# --------------------------------------------------------------------------------------------- capture
def profile_command(ncu: str, child: Sequence[str], csv_path: Path, metrics: Sequence[str] = METRICS) -> list[str]:
    """ncu writing its raw CSV (banner lines included) to ``csv_path``. No .ncu-rep is kept: with every
    PyTorch module's code embedded it grows by ~1 MB per profiled kernel; add ``--export`` by hand to
    open a run in the Nsight Compute UI."""
    return [
        ncu, "--csv", "--page", "raw", "--print-units", "base", "--log-file", str(csv_path),
        "--metrics", ",".join(metrics), "--clock-control", "none",
        "--nvtx", "--nvtx-include", "regex:kprof::.*/", "--target-processes", "all", *child,
    ]


def csv_command(ncu: str, report: Path) -> list[str]:
    """Raw CSV of a saved report (``ncu --import``)."""
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


# ----------------------------------------------------------------------------------------------- sniff
def _header_index(lines: list[str]) -> int | None:
    for i, line in enumerate(lines[:200]):
        if line.startswith('"ID",') or line.startswith("ID,"):
            return i
    return None


def looks_like(path: Path) -> bool:
    if path.suffix.lower() not in (".csv", ".txt"):
        return False
    lines = head(path, 65536).splitlines()
    i = _header_index(lines)
    return i is not None and "Kernel Name" in lines[i]


# ----------------------------------------------------------------------------------------------- parse
def _number(text: object, unit: str) -> float | None:
    """'1,678,297.60' with unit 'Kbyte' -> 1678297600.0; '' / 'n/a' -> None."""
    if text is None:
        return None
    s = str(text).strip().replace(",", "")
    if s in ("", "n/a", "N/A", "nan"):
        return None
    try:
        value = float(s)
    except ValueError:
        return None
    return value * _unit_factor(unit)


def _unit_factor(unit: str) -> float:
    u = (unit or "").split("/")[0].strip()  # 'Kbyte/block' -> 'Kbyte'
    if u in _TIME:
        return _TIME[u]
    m = re.fullmatch(r"([KMGT]?)byte", u)
    if m:
        return _PREFIX[m.group(1)]
    return 1.0  # %, register/thread, block, warp, ...


def parse(path: Path) -> pd.DataFrame:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceFormatError(f"cannot read {path}: {exc}") from None
    lines = text.splitlines()
    start = _header_index(lines)
    if start is None:
        raise TraceFormatError(f"{path}: no ncu CSV header (a line starting with \"ID\"); expected the output "
                               "of `ncu --csv --page raw`")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    for needed in ("Kernel Name", "gpu__time_duration.sum"):
        if needed not in header:
            raise TraceFormatError(f"{path}: ncu CSV without a {needed!r} column; profile with "
                                   f"`--page raw --metrics {','.join(METRICS[:1])},...` (kprof's list: "
                                   "kprof.profilers.ncu.METRICS)")
    body = rows[1:]
    units: dict[str, str] = {}
    if body and body[0] and body[0][0] == "":
        units = dict(zip(header, body[0]))
        body = body[1:]
    body = [r for r in body if r and any(c.strip() for c in r)]
    bad = [i for i, r in enumerate(body) if len(r) != len(header)]
    if bad:
        raise TraceFormatError(f"{path}: row {bad[0] + 1} has {len(body[bad[0]])} fields, the header "
                               f"{len(header)} (truncated file?)")
    df = pd.DataFrame(body, columns=header)
    if df.empty:
        return launch_table.empty()

    def num(col: str) -> pd.Series:
        if col not in df:
            return pd.Series([pd.NA] * len(df), dtype="Float64")
        return pd.Series([_number(v, units.get(col, "")) for v in df[col]], dtype="Float64")

    out = pd.DataFrame({
        "kernel": df["Kernel Name"],
        "kind": "kernel",
        "count": 1,
        "duration_ns": num("gpu__time_duration.sum").round(),
        "device": num("Device") if "Device" in df else num("launch__device_id"),
        "stream": num("Stream") if "Stream" in df else num("launch__stream_id"),
        "pid": num("Process ID"),
        "registers_per_thread": num("launch__registers_per_thread"),
        "dram_read_bytes": num("dram__bytes_read.sum").round(),
        "dram_write_bytes": num("dram__bytes_write.sum").round(),
        "dram_pct_peak": num("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        "occupancy_achieved_pct": num("sm__warps_active.avg.pct_of_peak_sustained_active"),
        "occupancy_theoretical_pct": num("sm__maximum_warps_per_active_cycle_pct"),
    })
    smem = num("launch__shared_mem_per_block_static").fillna(0) + num("launch__shared_mem_per_block_dynamic").fillna(0)
    has_smem = num("launch__shared_mem_per_block_static").notna() | num("launch__shared_mem_per_block_dynamic").notna()
    out["shared_mem_bytes"] = smem.round().where(has_smem, pd.NA)
    for axis, col in (("grid", "Grid Size"), ("block", "Block Size")):
        dims = [num(f"launch__{axis}_dim_{a}") for a in "xyz"]
        if col in df and all(d.isna().all() for d in dims):
            parsed = df[col].str.extract(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
            dims = [pd.to_numeric(parsed[i]) for i in range(3)]
        for a, d in zip("xyz", dims):
            out[f"{axis}_{a}"] = d
    limit_cols = [c for c in _LIMITERS if c in df]
    if limit_cols:
        lim = pd.DataFrame({c: num(c) for c in limit_cols}).astype("float64")
        out["occupancy_limiter"] = [
            _LIMITERS[row.idxmin()] if row.notna().any() else pd.NA for _, row in lim.iterrows()
        ]
    nvtx_col = next((c for c in header if "Push/Pop_Range" in c), None)
    out["case"] = df[nvtx_col].map(_case_from_nvtx) if nvtx_col else pd.NA
    out["source"] = SOURCE
    return launch_table.validate(out, source=f"ncu ({path})")


def _case_from_nvtx(cell: object) -> object:
    found = _NVTX_CASE.findall(str(cell or ""))
    return found[-1].strip() if found else pd.NA  # the innermost kprof range
