"""The built-in backend: torch.profiler (Kineto). Capture labelled cases; parse Chrome traces.

Kineto's Chrome trace has, per GPU kernel, an event ``cat: "kernel"`` whose args carry the device,
stream, correlation id, grid, block, registers per thread, shared memory (static + dynamic) and an
occupancy estimate; and per host launch call an event ``cat: "cuda_runtime"`` (PyTorch's
``cudaLaunchKernel``) or ``cat: "cuda_driver"`` (Triton's ``cuLaunchKernelEx``) with the same
``args.correlation``. Each kprof case runs inside a ``record_function`` range named ``kprof::<case id>``
(``cat: "user_annotation"``); a launch call inside that range, on that thread, belongs to the case.

Rows: kernels, device copies (``gpu_memcpy``; ``copy_kind`` from the name, ``bytes`` from args),
memsets (``gpu_memset``, and ROCm's ``FillBuffer``, which is a fill, not a copy) and synchronisation
calls (``cuda_runtime`` ``*Synchronize``), each with ``kind`` and ``count`` = 1, as nsys gives them.
Categories are matched without case: PyTorch 1.8-1.9 wrote ``Kernel``, ``Memcpy``, ``Memset``,
``Runtime``. ``.json`` or ``.json.gz`` (gzip recognised by content).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers import Backend, ParseOptions, as_source
from kprof.profilers._io import Source, parse_number
from kprof.ranges import CASE_PREFIX, RangeIndex

SOURCE = "torch"
# lower-cased categories, today's and PyTorch 1.8-1.9's
_KERNEL_CATS = {"kernel"}
_MEMCPY_CATS = {"gpu_memcpy", "memcpy"}
_MEMSET_CATS = {"gpu_memset", "memset"}
_LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
_GPU_RANGE_CATS = {"gpu_user_annotation"}  # the GPU-side copy of a record_function range: not a host range
_COPY = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP)\b")


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
def load_events(path: Path | Source) -> list:
    """The ``traceEvents`` of a Chrome trace (``.json`` or gzipped)."""
    src = as_source(path)
    if not src.path.exists():
        raise TraceFormatError(f"{src.path}: file not found (check the path)")
    data = src.json()
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise src.fail("has no 'traceEvents' list", "not a torch.profiler/Kineto trace")
    return events


def sniff(src: Source) -> bool:
    if src.is_sqlite:
        return False
    text = src.head(8192).lstrip()
    return text.startswith(("{", "[")) and ("traceEvents" in text or "schemaVersion" in text)


def looks_like(path: Path | Source) -> bool:
    """Cheap format sniff used by ``kprof parse``."""
    return sniff(as_source(path))


def _ns(us: Any, where: Any = "trace", what: str = "ts") -> int:
    """Microseconds (Kineto's unit) -> integer ns; a missing, text, NaN, inf or huge value is an error."""
    try:
        d = parse_number(us)
        if d is None:
            raise ValueError("missing")
        ns = int((d * 1000).to_integral_value())
        if abs(ns) > 2**62:
            raise ValueError("out of range")
    except (ValueError, ArithmeticError) as why:
        raise TraceFormatError(
            f"{where}: an event's {what} {str(us)[:40]!r} is not usable ({why}) (the trace is "
            "damaged or cut short; export it again)"
        ) from None
    return ns


def _int_or_na(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return pd.NA
    try:
        d = parse_number(value)
    except ValueError:
        return pd.NA  # an id Kineto wrote as text ("cuda:0") carries no number
    if d is None or d != d.to_integral_value() or abs(d) > 2**62:
        return pd.NA
    return int(d)


def _triple(value: Any) -> tuple[Any, Any, Any]:
    if isinstance(value, (list, tuple)) and len(value) == 3:
        return tuple(_int_or_na(v) for v in value)  # type: ignore[return-value]
    return (pd.NA, pd.NA, pd.NA)


def _args(ev: dict) -> dict:
    a = ev.get("args")
    return a if isinstance(a, dict) else {}


def parse(path: Path | Source, opts: ParseOptions | None = None, **_: object) -> pd.DataFrame:
    """A Kineto Chrome trace -> the canonical launch table."""
    src = as_source(path)
    return parse_events(load_events(src), where=str(src))


def parse_events(events: list, where: str = "trace") -> pd.DataFrame:
    gpu: list[tuple[str, dict]] = []  # (kind, event)
    launches: dict[int, dict] = {}
    syncs: list[dict] = []
    spans: list[tuple[Any, int, int, str]] = []  # (host thread, start, end, range name)
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = str(ev.get("cat", "")).lower()
        name = str(ev.get("name", ""))
        if cat in _KERNEL_CATS:
            gpu.append(("memset" if "FillBuffer" in name else "kernel", ev))
        elif cat in _MEMCPY_CATS:
            gpu.append(("memset" if ("FillBuffer" in name or "Memset" in name) else "memcpy", ev))
        elif cat in _MEMSET_CATS:
            gpu.append(("memset", ev))
        elif cat in _LAUNCH_CATS:
            if "Synchronize" in name:
                syncs.append(ev)
            corr = _int_or_na(_args(ev).get("correlation"))
            if corr is pd.NA:
                continue
            prev = launches.get(corr)
            # cudaLaunchKernel (runtime) encloses a driver call with the same id: keep the outer one
            if prev is None or (
                str(prev.get("cat", "")).lower() in ("cuda_driver", "driver") and cat in ("cuda_runtime", "runtime")
            ):
                launches[corr] = ev
        elif cat not in _GPU_RANGE_CATS and name.startswith(CASE_PREFIX):
            start = _ns(ev.get("ts"), where)
            spans.append(((ev.get("pid"), ev.get("tid")), start, start + _ns(ev.get("dur"), where, "dur"), name))
    ranges = RangeIndex(spans)

    def case_of(launch: dict | None) -> Any:
        if launch is None:
            return pd.NA
        return ranges.case_at((launch.get("pid"), launch.get("tid")), _ns(launch.get("ts"), where))

    rows = [_gpu_row(kind, k, launches, case_of, where) for kind, k in gpu]
    for ev in syncs:
        start = _ns(ev.get("ts"), where)
        end = start + _ns(ev.get("dur"), where, "dur")
        name = str(ev.get("name", ""))
        rows.append(
            {
                "kernel": name,
                "kind": "sync",
                "count": 1,
                "start_ns": start,
                "end_ns": end,
                "duration_ns": end - start,
                "api_name": name,
                "api_start_ns": start,
                "api_end_ns": end,
                "pid": _int_or_na(ev.get("pid")),
                "tid": _int_or_na(ev.get("tid")),
                "case": case_of(ev),
                "source": SOURCE,
            }
        )
    if not rows:
        return launch_table.empty()
    df = pd.DataFrame(rows).sort_values("start_ns", kind="stable").reset_index(drop=True)
    return launch_table.validate(df, source=f"torch.profiler ({where})")


def _gpu_row(kind: str, k: dict, launches: dict, case_of: Callable[[dict | None], Any], where: str) -> dict:
    args = _args(k)
    start = _ns(k.get("ts"), where)
    dur = _ns(k.get("dur"), where, "dur")
    corr = _int_or_na(args.get("correlation"))
    launch = launches.get(corr) if corr is not pd.NA else None
    gx, gy, gz = _triple(args.get("grid"))
    bx, by, bz = _triple(args.get("block"))
    api_start = _ns(launch.get("ts"), where) if launch else pd.NA
    api_end = api_start + _ns(launch.get("dur"), where, "dur") if launch else pd.NA
    name = str(k.get("name", ""))
    copy = _COPY.search(name) if kind == "memcpy" else None
    occ = args.get("est. achieved occupancy %", pd.NA)
    occ = pd.NA if isinstance(occ, bool) or not isinstance(occ, (int, float)) or occ != occ or abs(occ) > 1e6 else occ
    return {
        "kernel": name,
        "kind": kind,
        "count": 1,
        "start_ns": start,
        "end_ns": start + dur,
        "duration_ns": dur,
        "device": _int_or_na(args.get("device", k.get("pid"))),
        "stream": _int_or_na(args.get("stream", k.get("tid"))),
        "correlation_id": corr,
        "grid_x": gx,
        "grid_y": gy,
        "grid_z": gz,
        "block_x": bx,
        "block_y": by,
        "block_z": bz,
        "registers_per_thread": _int_or_na(args.get("registers per thread")),
        "shared_mem_bytes": _int_or_na(args.get("shared memory")),
        "occupancy_est_pct": occ,
        "copy_kind": copy.group(1) if copy else pd.NA,
        "bytes": _int_or_na(args.get("bytes")) if kind != "kernel" else pd.NA,
        "api_name": launch.get("name") if launch else pd.NA,
        "api_start_ns": api_start,
        "api_end_ns": api_end,
        "launch_latency_ns": start - api_start if launch else pd.NA,
        "queue_ns": start - api_end if launch else pd.NA,
        "pid": _int_or_na(launch.get("pid")) if launch else pd.NA,
        "tid": _int_or_na(launch.get("tid")) if launch else pd.NA,
        "case": case_of(launch),
        "source": SOURCE,
    }


BACKEND = Backend(
    name="torch",
    description="torch.profiler (Kineto), in kprof's own process",
    sniff=sniff,
    parse=parse,
    marker="none",
    default_repeats=5,
    in_process=True,
    sniff_rank=90,
)
