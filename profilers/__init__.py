"""Profiler backends. Each module captures and/or parses one profiler's output into the canonical
launch table (:mod:`kprof.launch_table`). A new profiler is one new module plus one entry below."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kprof.errors import TraceFormatError


@dataclass(frozen=True)
class Parser:
    name: str
    module: str  # module under kprof.profilers with looks_like(path) and parse(path)


# Sniffing order matters: Proton's and rocprof's JSON are Chrome traces too, so the generic Kineto
# reader comes last.
PARSERS: tuple[Parser, ...] = (
    Parser("nsys", "kprof.profilers.nsys"),
    Parser("ncu", "kprof.profilers.ncu"),
    Parser("rocprof", "kprof.profilers.rocprof"),
    Parser("proton", "kprof.profilers.proton"),
    Parser("torch", "kprof.profilers.torch_profiler"),
)


def parse_trace(path: Path, fmt: str | None = None, arch: str | None = None) -> pd.DataFrame:
    """Parse any supported trace file into the launch table (format sniffed unless ``fmt`` names it).

    ``arch`` (rocprof only, e.g. ``gfx942``) enables AMD occupancy when the trace does not say it.
    """
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(f"trace file not found: {path}")
    candidates = [p for p in PARSERS if fmt is None or p.name == fmt]
    if not candidates:
        raise TraceFormatError(f"unknown trace format {fmt!r}; known: {', '.join(p.name for p in PARSERS)}")
    if path.is_dir():
        raise TraceFormatError(f"{path} is a folder; pass one trace file (for rocprofv3, its *_kernel_trace.csv)")
    if path.stat().st_size == 0:
        raise TraceFormatError(f"{path} is empty: the profiler wrote nothing (did it fail?)")
    for p in candidates:
        mod = importlib.import_module(p.module)
        if fmt is not None or mod.looks_like(path):
            return mod.parse(path, arch=arch) if p.name == "rocprof" else mod.parse(path)
    raise TraceFormatError(
        f"{path} is not a trace kprof can read (tried: {', '.join(p.name for p in candidates)}); "
        "pass --format to name the profiler"
    )
