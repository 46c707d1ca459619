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

The details page (``ncu --csv`` without ``--page raw``; one row per metric per launch: ``Section Name``,
``Metric Name``, ``Metric Unit``, ``Metric Value``) is read too: its ``Duration`` gives the per-launch time,
with registers, shared memory, occupancy and DRAM throughput where the sections hold them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers import Backend, ParseOptions, as_source
from kprof.profilers._io import Source, parse_number
from kprof.tools import ToolSpec

if TYPE_CHECKING:
    from kprof.external import CaptureContext

SOURCE = "ncu"

# Kept in the launch table's ``counters`` (JSON, under these names): where a compute-bound kernel's time goes, the
# tensor cores' busy share of the elapsed cycles, and the SMs' cycles with work against the elapsed ones (SMs idle
# while others finish a last, partial wave of tiles show as the gap).
COUNTERS: dict[str, str] = {
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed": "tensor_pipe_pct",
    "sm__cycles_active.avg": "sm_active_cycles",
    "sm__cycles_elapsed.avg": "sm_elapsed_cycles",
}

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
    *COUNTERS,
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
RAW_EXPORT = "ncu --import REPORT.ncu-rep --csv --page raw --print-units base"

TOOL = ToolSpec(
    "ncu",
    "ncu",
    "KPROF_NCU",
    ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu"),
    hint="install Nsight Compute, or pass --tool-path / set KPROF_NCU to the ncu binary",
)


# --------------------------------------------------------------------------------------------- capture
def profile_command(ncu: str, child: Sequence[str], csv_path: Path, metrics: Sequence[str] = METRICS) -> list[str]:
    """ncu writing its raw CSV (banner lines included) to ``csv_path``. No .ncu-rep is kept: with every
    PyTorch module's code embedded it grows by ~1 MB per profiled kernel; add ``--export`` by hand to
    open a run in the Nsight Compute UI."""
    return [
        ncu,
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--log-file",
        str(csv_path),
        "--metrics",
        ",".join(metrics),
        "--clock-control",
        "none",
        "--nvtx",
        "--nvtx-include",
        "regex:kprof::.*/",
        "--target-processes",
        "all",
        *child,
    ]


def csv_command(ncu: str, report: Path) -> list[str]:
    """Raw CSV of a saved report (``ncu --import``)."""
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def capture(ctx: CaptureContext) -> None:
    """ncu around the replay, writing its raw CSV (the artefact parsed)."""
    assert ctx.tool is not None
    csv_path = ctx.workdir / "ncu_raw.csv"
    ctx.expect(
        ctx.step(profile_command(ctx.tool.path, ctx.child, csv_path), "ncu_profile"),
        csv_path,
        f"ncu finished but wrote no CSV {csv_path}",
    )


# ----------------------------------------------------------------------------------------------- sniff
def _header_index(lines: list[str]) -> int | None:
    for i, line in enumerate(lines[:200]):
        if line.startswith('"ID",') or line.startswith("ID,"):
            return i
    return None


def sniff(src: Source) -> bool:
    if src.is_sqlite:
        return False
    lines = src.head(65536).split("\n")
    i = _header_index(lines)
    return i is not None and "Kernel Name" in lines[i]


def looks_like(path: Path | Source) -> bool:
    return sniff(as_source(path))


# ----------------------------------------------------------------------------------------------- parse
def _unit_factor(unit: str) -> float:
    u = (unit or "").split("/")[0].strip()  # 'Kbyte/block' -> 'Kbyte'
    if u in _TIME:
        return _TIME[u]
    m = re.fullmatch(r"([KMGT]?)byte", u)
    if m:
        return _PREFIX[m.group(1)]
    return 1.0  # %, register/thread, block, warp, ...


def _number(
    text: object, unit: str, src: Source | str = "ncu CSV", column: str = "value", row: int = 0
) -> float | None:
    """'1,678,297.60' with unit 'Kbyte' -> 1678297600.0; '' / 'n/a' -> None; text, NaN, inf -> error."""
    try:
        d = parse_number(text)
    except ValueError as why:
        raise TraceFormatError(
            f"{src}: column {column!r}, row {row + 1}: {str(text)[:40]!r} is not a number ({why}) "
            "(the CSV is damaged or not ncu output)"
        ) from None
    if d is None:
        return None
    value = float(d) * _unit_factor(unit)
    if not math.isfinite(value) or abs(value) > 2**62:
        raise TraceFormatError(
            f"{src}: column {column!r}, row {row + 1}: {str(text)[:40]!r} is out of range "
            "(the CSV is damaged or not ncu output)"
        )
    return value


def parse(path: Path | Source, opts: ParseOptions | None = None, **_: object) -> pd.DataFrame:
    src = as_source(path)
    lines = src.text.split("\n")
    start = _header_index(lines)
    if start is None:
        raise src.fail(
            'no ncu CSV header (a line starting with "ID")',
            f"expected the output of `ncu --csv --page raw` or `{RAW_EXPORT}`",
        )
    rows = src.csv_rows(start)
    header = [h.strip() for h in rows[0]]
    if "Kernel Name" not in header:
        raise src.fail("ncu CSV without a 'Kernel Name' column", f"export the raw page: `{RAW_EXPORT}`")
    if {"Metric Name", "Metric Value"} <= set(header):
        return _parse_details(src, rows)
    if "gpu__time_duration.sum" not in header:
        raise src.fail(
            "ncu CSV without a 'gpu__time_duration.sum' column",
            f"profile with `--page raw --metrics {METRICS[0]},...` (kprof's list: "
            f"kprof.profilers.ncu.METRICS), or export a saved report with `{RAW_EXPORT}`",
        )
    body = rows[1:]
    units: dict[str, str] = {}
    if body and body[0] and body[0][0] == "":
        units = dict(zip(header, body[0]))
        body = body[1:]
    df = src.table([header, *body], what="ncu raw CSV")
    if df.empty:
        return launch_table.empty()

    def num(col: str) -> pd.Series:
        if col not in df:
            return pd.Series([pd.NA] * len(df), dtype="Float64")
        vals = [_number(v, units.get(col, ""), src, col, i) for i, v in enumerate(df[col].tolist())]
        return pd.Series([pd.NA if v is None else v for v in vals], dtype="Float64")

    out = pd.DataFrame(
        {
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
        }
    )
    if out["duration_ns"].isna().any():
        raise src.fail(
            f"{int(out['duration_ns'].isna().sum())} launches have no gpu__time_duration.sum value",
            "profile them again; a launch ncu could not replay has no time",
        )
    static, dynamic = num("launch__shared_mem_per_block_static"), num("launch__shared_mem_per_block_dynamic")
    has_smem = static.notna() | dynamic.notna()
    out["shared_mem_bytes"] = (static.fillna(0) + dynamic.fillna(0)).round().where(has_smem, pd.NA)
    for axis, col in (("grid", "Grid Size"), ("block", "Block Size")):
        dims = [num(f"launch__{axis}_dim_{a}") for a in "xyz"]
        if col in df and all(d.isna().all() for d in dims):
            dims = _dims(df[col], src, col)
        for a, d in zip("xyz", dims):
            out[f"{axis}_{a}"] = d
    limit_cols = [c for c in _LIMITERS if c in df]
    if limit_cols:
        lim = pd.DataFrame({c: num(c) for c in limit_cols}).astype("float64")
        out["occupancy_limiter"] = [
            _LIMITERS[row.idxmin()] if row.notna().any() else pd.NA for _, row in lim.iterrows()
        ]
    out["counters"] = _counters(
        pd.DataFrame({name: num(metric) for metric, name in COUNTERS.items() if metric in df}), len(out)
    )
    nvtx_col = next((c for c in header if "Push/Pop_Range" in c), None)
    out["case"] = df[nvtx_col].map(_case_from_nvtx) if nvtx_col else pd.NA
    out["source"] = SOURCE
    return launch_table.validate(out, source=f"ncu ({src})")


def _counters(values: pd.DataFrame, n: int) -> list:
    """Per launch, the ``COUNTERS`` it has values for, as JSON (``{name: value}``); NA where none."""
    if values.empty:
        return [pd.NA] * n
    return [
        json.dumps({k: float(v) for k, v in row.items() if not pd.isna(v)}, sort_keys=True)
        if row.notna().any()
        else pd.NA
        for _, row in values.iterrows()
    ]


def _dims(col: pd.Series, src: Source, name: str) -> list[pd.Series]:
    """``"(256, 1, 1)"`` -> three integer columns."""
    parsed = col.astype("string").str.extract(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")
    from kprof.profilers._io import whole_numbers

    return [whole_numbers(parsed[i], src, name) for i in range(3)]


# details page: metric name -> (column, how to combine); units come per row
_DETAILS = {
    "Duration": "duration_ns",
    "Registers Per Thread": "registers_per_thread",
    "Achieved Occupancy": "occupancy_achieved_pct",
    "Theoretical Occupancy": "occupancy_theoretical_pct",
    "DRAM Throughput": "dram_pct_peak",
    "Static Shared Memory Per Block": "smem_static",
    "Dynamic Shared Memory Per Block": "smem_dynamic",
    "Block Limit Registers": "launch__occupancy_limit_registers",
    "Block Limit Shared Mem": "launch__occupancy_limit_shared_mem",
    "Block Limit Warps": "launch__occupancy_limit_warps",
    "Block Limit SM": "launch__occupancy_limit_blocks",
    "Block Limit Barriers": "launch__occupancy_limit_barriers",
}


def _parse_details(src: Source, rows: list[list[str]]) -> pd.DataFrame:
    """The details page: one row per (launch, metric) -> one row per launch."""
    df = src.table(rows, what="ncu details CSV")
    if df.empty:
        return launch_table.empty()
    if not (df["Metric Name"] == "Duration").any():
        raise src.fail(
            "ncu details page without a 'Duration' metric (the GPU Speed Of Light section was not collected)",
            f"export the raw page: `{RAW_EXPORT}`, or profile with `--section SpeedOfLight`",
        )
    launches: dict[str, dict] = {}
    unit_col = "Metric Unit" if "Metric Unit" in df else None
    nvtx_col = next((c for c in df.columns if "Push/Pop_Range" in c), None)
    for i, r in enumerate(df.itertuples(index=False)):
        row = dict(zip(df.columns, r))
        key = row["ID"]
        one = launches.setdefault(
            key,
            {
                "kernel": row["Kernel Name"],
                "kind": "kernel",
                "count": 1,
                "stream": row.get("Stream"),
                "device": row.get("Device"),
                "pid": row.get("Process ID"),
                "grid": row.get("Grid Size"),
                "block": row.get("Block Size"),
                "case": _case_from_nvtx(row[nvtx_col]) if nvtx_col else pd.NA,
            },
        )
        target = _DETAILS.get(str(row["Metric Name"]).strip())
        if target is None:
            continue
        one[target] = _number(row["Metric Value"], row[unit_col] if unit_col else "", src, str(row["Metric Name"]), i)
    out = pd.DataFrame(list(launches.values()))
    if out.get("duration_ns") is None or out["duration_ns"].isna().any():
        raise src.fail("some launches on the details page have no 'Duration'", f"export the raw page: `{RAW_EXPORT}`")
    out["duration_ns"] = out["duration_ns"].astype("float64").round()
    for c in ("stream", "device", "pid"):
        vals = [_number(v, "", src, c, i) for i, v in enumerate(out[c].tolist())]
        out[c] = pd.Series([pd.NA if v is None else v for v in vals], dtype="Float64")
    if "smem_static" in out or "smem_dynamic" in out:
        st = out.get("smem_static", pd.Series([None] * len(out))).astype("float64")
        dy = out.get("smem_dynamic", pd.Series([None] * len(out))).astype("float64")
        out["shared_mem_bytes"] = (st.fillna(0) + dy.fillna(0)).round().where(st.notna() | dy.notna())
    for axis in ("grid", "block"):
        dims = _dims(out[axis], src, f"{axis.title()} Size")
        for a, d in zip("xyz", dims):
            out[f"{axis}_{a}"] = d
    limits = [c for c in _LIMITERS if c in out]
    if limits:
        lim = out[limits].astype("float64")
        out["occupancy_limiter"] = [
            _LIMITERS[row.idxmin()] if row.notna().any() else pd.NA for _, row in lim.iterrows()
        ]
    out["source"] = SOURCE
    table = launch_table.validate(out, source=f"ncu details ({src})")
    table.attrs["page"] = "details"
    return table


def _case_from_nvtx(cell: object) -> object:
    found = _NVTX_CASE.findall(str(cell or ""))
    return found[-1].strip() if found else pd.NA  # the innermost kprof range


BACKEND = Backend(
    name="ncu",
    description="Nsight Compute",
    sniff=sniff,
    parse=parse,
    marker="nvtx",
    tools=(TOOL,),
    # every profiled launch is replayed once per metric pass: 3 launches per case keep a run short
    default_repeats=3,
    capture=capture,
    sniff_rank=20,
)
