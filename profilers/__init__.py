"""Profiler backends, one module each, discovered like kernel families.

A backend is a module under ``kprof.profilers`` (or any folder added to this package's ``__path__``)
that defines ``BACKEND = Backend(...)``: its name (``--profiler``/``--format``), the range marker its
replay child opens, the tool binaries it drives, its default repeats, how to recognise and parse its
output, and the steps of a capture. The toolkit asks the record and never branches on a profiler's
name, so a new profiler is one new module and no other edit.

:func:`parse_trace` is the one entry for reading a trace file: the format is recognised by content
(compressed or not, BOM, CRLF), and anything unreadable ends in one
:class:`~kprof.errors.TraceFormatError` (``<file>: <what is wrong> (<what to do>)``), never a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from kprof.errors import KprofError, TraceFormatError
from kprof.profilers._io import Source

if TYPE_CHECKING:
    from kprof.external import CaptureContext
    from kprof.tools import ToolSpec


@dataclass(frozen=True)
class ParseOptions:
    arch: str | None = None  # AMD architecture (gfx942) where the trace does not say it


@dataclass(frozen=True)
class Backend:
    """Everything the toolkit needs to know about one profiler."""

    name: str
    description: str
    sniff: Callable[[Source], bool] | None = None  # does this file's content look like our output?
    parse: Callable[[Source, ParseOptions], pd.DataFrame] | None = None
    marker: str = "none"  # range marker of the replay child (kprof.markers): nvtx | roctx | proton | none
    tools: tuple[ToolSpec, ...] = ()  # binaries driven, in order of preference
    default_repeats: int = 5  # launches per case under this profiler
    capture: Callable[[CaptureContext], None] | None = None  # steps of an external capture
    in_process: bool = False  # runs inside kprof's own process (torch.profiler), not through a replay child
    auto_vendor: str | None = None  # --profiler auto picks it on this GPU vendor (nvidia | amd) when found
    auto_rank: int = 100  # among several for one vendor, lower first
    sniff_rank: int = 50  # specific formats before generic ones (Proton's JSON before Kineto's)
    version: Callable[[], str] | None = None  # version line when no tool binary reports one (Proton)


_BACKENDS: dict[str, Backend] = {}
# Tests set this to see a parser's unexpected exception itself instead of the one-line safety net below
# (every class of bad input should have its own message, not the generic one).
RAISE_UNEXPECTED = False
_discovered_paths: tuple[str, ...] = ()


def register(backend: Backend) -> Backend:
    """Add (or replace) a backend by name; modules do this by defining ``BACKEND``."""
    _BACKENDS[backend.name] = backend
    return backend


def backends() -> dict[str, Backend]:
    """Every backend, imported from each module of this package (re-scanned when ``__path__`` grows)."""
    global _discovered_paths
    paths = tuple(__path__)
    if paths != _discovered_paths:
        for info in sorted(pkgutil.iter_modules(list(paths)), key=lambda m: m.name):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{__name__}.{info.name}")
            if isinstance(getattr(mod, "BACKEND", None), Backend) and mod.BACKEND.name not in _BACKENDS:
                register(mod.BACKEND)
        _discovered_paths = paths
    return dict(_BACKENDS)


def backend(name: str) -> Backend:
    found = backends()
    if name not in found:
        raise KprofError(f"unknown profiler {name!r}; known: {', '.join(found)}")
    return found[name]


def default_repeats(name: str) -> int:
    """Launches per case under profiler ``name`` (its backend's default; 5 for none/unknown)."""
    b = backends().get(name)
    return b.default_repeats if b is not None else 5


def names() -> tuple[str, ...]:
    return tuple(backends())


def readers() -> list[Backend]:
    """Backends that read trace files, in sniffing order."""
    return sorted((b for b in backends().values() if b.parse is not None), key=lambda b: (b.sniff_rank, b.name))


def parse_trace(path: Path, fmt: str | None = None, arch: str | None = None) -> pd.DataFrame:
    """Parse any supported trace file into the launch table (format recognised unless ``fmt`` names it).

    ``arch`` (AMD, e.g. ``gfx942``) enables occupancy when the trace does not say it. The table's
    ``attrs["warnings"]`` lists what the user should know (sibling files joined, rows skipped, no rows).
    """
    src = Source(path)
    path = src.path
    if not path.exists():
        raise TraceFormatError(f"{path}: file not found (check the path)")
    if path.is_dir():
        raise TraceFormatError(f"{path}: is a folder (pass one trace file; for rocprofv3, its *_kernel_trace.csv)")
    if path.stat().st_size == 0:
        raise TraceFormatError(f"{path}: is empty (the profiler wrote nothing: did it fail?)")
    known = readers()
    if fmt is not None:
        chosen = [b for b in known if b.name == fmt]
        if not chosen:
            raise TraceFormatError(f"{path}: unknown trace format {fmt!r} (one of {', '.join(b.name for b in known)})")
    else:
        chosen = [b for b in known if b.sniff is not None and _sniffs(b, src)]
        if not chosen:
            raise TraceFormatError(
                f"{path}: not a trace kprof can read (tried {', '.join(b.name for b in known)}; "
                "pass --format to name the profiler, or see the README's list of formats)"
            )
    b = chosen[0]
    table = _parse_one(b, src, ParseOptions(arch=arch))
    notes = list(table.attrs.get("warnings", []))
    if table.empty:
        notes.append(
            f"{path}: no GPU activity in this {b.name} file (0 rows): was anything launched inside the profiled region?"
        )
    table.attrs["warnings"] = notes
    table.attrs["format"] = b.name
    return table


def _sniffs(b: Backend, src: Source) -> bool:
    try:
        return bool(b.sniff(src))  # type: ignore[misc]
    except KprofError:
        return False


def _parse_one(b: Backend, src: Source, opts: ParseOptions) -> pd.DataFrame:
    """One backend's parse; whatever it raises becomes one TraceFormatError line."""
    try:
        table = b.parse(src, opts)  # type: ignore[misc]
    except KprofError as exc:
        msg = " ".join(str(exc).split())
        raise TraceFormatError(msg if msg.startswith(str(src.path)) else f"{src.path}: {msg}") from None
    except RecursionError:
        raise src.fail("nested deeper than any profiler writes", "this is not a profiler trace") from None
    except MemoryError:
        raise src.fail("too large to read into memory", "parse a smaller capture") from None
    except Exception as exc:  # a format corner no parser rule covers: still one line, and what to try
        if RAISE_UNEXPECTED:
            raise
        what = " ".join(str(exc).split())[:200]
        raise src.fail(
            f"unreadable as {b.name} output ({type(exc).__name__}: {what})",
            "the file is damaged or not what it looks like; pass --format to name the profiler",
        ) from None
    return table


def as_source(path: Path | str | Source) -> Source:
    return path if isinstance(path, Source) else Source(path)
