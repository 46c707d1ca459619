"""The built-in backend: torch.profiler (Kineto). Capture labelled cases; parse Chrome traces.

Kineto's Chrome trace has, per GPU kernel, an event ``cat: "kernel"`` whose args carry the device,
stream, correlation id, grid, block, registers per thread, shared memory (static + dynamic) and an
occupancy estimate; and per host launch call an event ``cat: "cuda_runtime"`` (PyTorch's
``cudaLaunchKernel``) or ``cat: "cuda_driver"`` (Triton's ``cuLaunchKernelEx``) with the same
``args.correlation``. Each kprof case runs inside a ``record_function`` range named ``kprof::<case id>``
(``cat: "user_annotation"``); a launch call inside that range, on that thread, belongs to the case.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers._files import head
from kprof.profilers._ranges import CASE_PREFIX, RangeIndex

SOURCE = "torch"
_LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


# --------------------------------------------------------------------------------------------- capture
def capture(calls: Iterable[tuple[str, Callable[[], Any]]], path: Path, repeats: int = 5) -> Path:
    """Run each ``(case_id, fn)`` once unlabelled (warm-up) and ``repeats`` times inside its labelled range,
    under torch.profiler, and write the gzipped Chrome trace to ``path``."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with profile(activities=activities) as prof:
        for case_id, fn in calls:
            fn()  # warm-up launch: outside the range, so it is not attributed to the case
            sync()
            with record_function(CASE_PREFIX + case_id):
                for _ in range(repeats):
                    fn()
            sync()
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = path.with_suffix("") if path.suffix == ".gz" else path
    prof.export_chrome_trace(str(raw))
    if raw != path:
        with open(raw, "rb") as src, gzip.open(path, "wb") as dst:
            dst.write(src.read())
        raw.unlink()
    return path


# ----------------------------------------------------------------------------------------------- parse
def load_events(path: Path) -> list[dict]:
    """The ``traceEvents`` of a Chrome trace (``.json`` or ``.json.gz``)."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise TraceFormatError(f"trace file not found: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise TraceFormatError(f"{path} is not a readable Chrome trace JSON: {exc}") from None
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise TraceFormatError(f"{path} has no 'traceEvents' list: not a torch.profiler/Kineto trace")
    return events


def looks_like(path: Path) -> bool:
    """Cheap format sniff used by ``kprof parse``."""
    name = path.name.lower()
    if not (name.endswith(".json") or name.endswith(".json.gz")):
        return False
    text = head(path, 4096)
    return "traceEvents" in text or "schemaVersion" in text


def _ns(us: Any) -> int:
    return int(round(float(us) * 1000.0))


def _triple(value: Any) -> tuple[Any, Any, Any]:
    if isinstance(value, (list, tuple)) and len(value) == 3:
        return tuple(value)  # type: ignore[return-value]
    return (pd.NA, pd.NA, pd.NA)


def _int_or_na(value: Any) -> Any:
    if value is None:
        return pd.NA
    try:
        return int(value)
    except (TypeError, ValueError):
        return pd.NA


def parse(path: Path) -> pd.DataFrame:
    """A Kineto Chrome trace -> the canonical launch table (one row per GPU kernel)."""
    events = load_events(path)
    return parse_events(events, where=str(path))


def parse_events(events: list[dict], where: str = "trace") -> pd.DataFrame:
    kernels: list[dict] = []
    launches: dict[int, dict] = {}
    spans: list[tuple[Any, int, int, str]] = []  # (host thread, start, end, range name)
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = ev.get("cat")
        if cat == "kernel":
            kernels.append(ev)
        elif cat in _LAUNCH_CATS:
            corr = (ev.get("args") or {}).get("correlation")
            if corr is None:
                continue
            prev = launches.get(int(corr))
            # cudaLaunchKernel (runtime) encloses a driver call with the same id: keep the outer one
            if prev is None or (prev.get("cat") == "cuda_driver" and cat == "cuda_runtime"):
                launches[int(corr)] = ev
        elif cat == "user_annotation" and str(ev.get("name", "")).startswith(CASE_PREFIX):
            start = _ns(ev["ts"])
            spans.append(((ev.get("pid"), ev.get("tid")), start, start + _ns(ev.get("dur", 0)), ev["name"]))
    ranges = RangeIndex(spans)
    def case_of(launch: dict | None) -> Any:
        if launch is None:
            return pd.NA
        return ranges.case_at((launch.get("pid"), launch.get("tid")), _ns(launch["ts"]))

    rows = []
    for k in kernels:
        args = k.get("args") or {}
        start = _ns(k["ts"])
        dur = _ns(k.get("dur", 0))
        corr = args.get("correlation")
        launch = launches.get(int(corr)) if corr is not None else None
        gx, gy, gz = _triple(args.get("grid"))
        bx, by, bz = _triple(args.get("block"))
        api_start = _ns(launch["ts"]) if launch else pd.NA
        api_end = api_start + _ns(launch.get("dur", 0)) if launch else pd.NA
        rows.append({
            "kernel": str(k.get("name", "")),
            "start_ns": start,
            "end_ns": start + dur,
            "duration_ns": dur,
            "device": _int_or_na(args.get("device", k.get("pid"))),
            "stream": _int_or_na(args.get("stream", k.get("tid"))),
            "correlation_id": _int_or_na(corr),
            "grid_x": gx, "grid_y": gy, "grid_z": gz,
            "block_x": bx, "block_y": by, "block_z": bz,
            "registers_per_thread": _int_or_na(args.get("registers per thread")),
            "shared_mem_bytes": _int_or_na(args.get("shared memory")),
            "occupancy_est_pct": args.get("est. achieved occupancy %", pd.NA),
            "api_name": launch.get("name") if launch else pd.NA,
            "api_start_ns": api_start,
            "api_end_ns": api_end,
            "launch_latency_ns": start - api_start if launch else pd.NA,
            "queue_ns": start - api_end if launch else pd.NA,
            "pid": _int_or_na(launch.get("pid")) if launch else pd.NA,
            "tid": _int_or_na(launch.get("tid")) if launch else pd.NA,
            "case": case_of(launch),
            "source": SOURCE,
        })
    if not rows:
        return launch_table.empty()
    df = pd.DataFrame(rows).sort_values("start_ns", kind="stable").reset_index(drop=True)
    return launch_table.validate(df, source=f"torch.profiler ({where})")
