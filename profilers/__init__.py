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


PARSERS: tuple[Parser, ...] = (
    Parser("torch", "kprof.profilers.torch_profiler"),
)


def parse_trace(path: Path, fmt: str | None = None) -> pd.DataFrame:
    """Parse any supported trace file into the launch table (format sniffed unless ``fmt`` names it)."""
    path = Path(path)
    if not path.exists():
        raise TraceFormatError(f"trace file not found: {path}")
    candidates = [p for p in PARSERS if fmt is None or p.name == fmt]
    if not candidates:
        raise TraceFormatError(f"unknown trace format {fmt!r}; known: {', '.join(p.name for p in PARSERS)}")
    for p in candidates:
        mod = importlib.import_module(p.module)
        if fmt is not None or mod.looks_like(path):
            return mod.parse(path)
    raise TraceFormatError(
        f"{path} is not a trace kprof can read (tried: {', '.join(p.name for p in candidates)}); "
        "pass --format to name the profiler"
    )
