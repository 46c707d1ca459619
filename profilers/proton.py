"""Proton (Triton's own profiler): its hatchet tree and its Chrome trace, into the launch table.

Proton must run in a process of its own (in the same process as torch.profiler both subscribe to CUPTI and
Proton fails with CUPTI error 39), so kprof runs it through ``python -m kprof.replay`` with the marker
``proton``: each case is a ``proton.scope("kprof::<case>")``, and the session is deactivated during the
warm-up call so compilation and first launches stay out of the data.

* **hatchet** (``proton.start(data="tree")`` -> ``NAME.hatchet``): a JSON list ``[tree, device info]``.
  Nodes are ``{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}``; a kernel node carries
  ``count``, ``time (ns)`` (total) and ``device_id``. Scopes are nodes without those. Each kernel node
  becomes one summary row: ``count`` launches, ``duration_ns`` the mean, no timestamps.
* **Chrome trace** (``data="trace"``, finalised as ``chrome_trace``): ``traceEvents`` of ``cat: "kernel"``
  with ``ts``/``dur`` in microseconds, ``tid`` = stream, ``args.call_stack`` = the scopes from ROOT down to
  the kernel. One row per launch. Proton records no host launch calls, so API columns stay empty.

The scope path above each kernel (without ``ROOT``) is kept in ``scope``, so the same kernel under
different scopes (shapes, providers) stays in separate rows; Proton's names are mangled symbols, and the
demangled key is in ``kernel_norm``. Either file may be gzipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers import Backend, ParseOptions, as_source
from kprof.profilers._io import Source, parse_number
from kprof.ranges import case_name

SOURCE = "proton"


def sniff(src: Source) -> bool:
    if src.is_sqlite:
        return False
    head = src.head(16384).lstrip()
    if not head.startswith(("{", "[")):
        return False
    return '"call_stack"' in head or ('"frame"' in head and '"metrics"' in head)


def looks_like(path: Path | Source) -> bool:
    return sniff(as_source(path))


def parse(path: Path | Source, opts: ParseOptions | None = None, **_: object) -> pd.DataFrame:
    src = as_source(path)
    data = src.json()
    if isinstance(data, list) and data and isinstance(data[0], dict) and "frame" in data[0]:
        return parse_hatchet(data, where=src)
    if isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        return parse_chrome(data["traceEvents"], where=src)
    raise src.fail(
        "neither a Proton hatchet tree (a list whose first item has 'frame') nor a Chrome trace with 'traceEvents'",
        "pass Proton's .hatchet or .chrome_trace output",
    )


def _case_of(stack: list[str]) -> Any:
    for frame in reversed(stack):  # innermost kprof scope
        case = case_name(frame)
        if case is not None:
            return case
    return pd.NA


def _scope_of(stack: list[str]) -> Any:
    path = [f for f in stack if f != "ROOT"]
    return " / ".join(path) if path else pd.NA


def _num(where: Any, what: str, value: Any, whole: bool = False) -> float | int:
    try:
        d = parse_number(value)
        if d is None:
            raise ValueError("empty")
        v = int(d) if whole else float(d)
        if not whole and not (abs(v) < 2**62):
            raise ValueError("out of range")
        if whole and (d != int(d) or abs(v) > 2**62):
            raise ValueError("not a whole number in range")
    except (ValueError, OverflowError) as why:
        raise TraceFormatError(
            f"{where}: {what} {str(value)[:40]!r} is not usable ({why}) (the file is damaged or not Proton output)"
        ) from None
    return v


def parse_hatchet(tree: list, where: Any = "hatchet") -> pd.DataFrame:
    rows: list[dict] = []
    if not isinstance(tree[0], dict) or "frame" not in tree[0]:
        raise TraceFormatError(f"{where}: hatchet root has no 'frame' (not Proton output)")
    todo: list[tuple[Any, list[str]]] = [(tree[0], [])]
    while todo:  # a loop, not recursion: a deep tree must not exhaust Python's stack
        node, stack = todo.pop()
        if not isinstance(node, dict):
            raise TraceFormatError(
                f"{where}: a hatchet node is {type(node).__name__}, not an object (the file is "
                "damaged or not Proton output)"
            )
        frame = node.get("frame") or {}
        metrics = node.get("metrics") or {}
        children = node.get("children") or []
        if not isinstance(frame, dict) or not isinstance(metrics, dict) or not isinstance(children, list):
            raise TraceFormatError(
                f"{where}: a hatchet node has a malformed frame/metrics/children (the file is "
                "damaged or not Proton output)"
            )
        name = str(frame.get("name", ""))
        if "device_id" in metrics and metrics.get("count"):
            count = _num(where, "count", metrics["count"], whole=True)
            if "time (ns)" not in metrics:  # not 0 ns: a kernel without its time is a damaged or unknown tree
                raise TraceFormatError(
                    f"{where}: kernel {name[:60]!r} has a count but no 'time (ns)' (metrics: {sorted(metrics)[:8]}) "
                    "(the file is damaged, or a Proton version kprof does not know: please report it)"
                )
            total = _num(where, "time (ns)", metrics["time (ns)"])
            if count < 1 or total < 0:
                raise TraceFormatError(
                    f"{where}: kernel {name[:60]!r} has count {count} and time {total} (not a "
                    "measurement; the file is damaged)"
                )
            rows.append(
                {
                    "kernel": name,
                    "kind": "kernel",
                    "count": count,
                    "duration_ns": round(total / count),
                    "device": _num(where, "device_id", metrics["device_id"], whole=True),
                    "case": _case_of(stack),
                    "scope": _scope_of(stack),
                    "source": SOURCE,
                }
            )
        for child in reversed(children):
            todo.append((child, stack + [name]))
    if not rows:
        return launch_table.empty()
    table = launch_table.validate(pd.DataFrame(rows), source=f"proton hatchet ({where})")
    table.attrs["summary"] = True
    return table


def parse_chrome(events: list, where: Any = "trace") -> pd.DataFrame:
    rows = []
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X" or ev.get("cat") != "kernel":
            continue
        if "ts" not in ev or "dur" not in ev:
            raise TraceFormatError(
                f"{where}: a kernel event has no {'ts' if 'ts' not in ev else 'dur'} (the trace "
                "is damaged; finalise the Proton session again)"
            )
        start = round(_num(where, "ts", ev["ts"]) * 1000)
        dur = round(_num(where, "dur", ev["dur"]) * 1000)
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        stack = args.get("call_stack") if isinstance(args.get("call_stack"), list) else []
        frames = [str(s) for s in stack]
        if frames and frames[-1] == str(ev.get("name", "")):
            frames = frames[:-1]  # the kernel itself ends the call stack
        rows.append(
            {
                "kernel": str(ev.get("name", "")),
                "kind": "kernel",
                "count": 1,
                "start_ns": start,
                "end_ns": start + dur,
                "duration_ns": dur,
                "stream": _num(where, "tid", ev["tid"], whole=True) if ev.get("tid") is not None else pd.NA,
                "case": _case_of(frames),
                "scope": _scope_of(frames),
                "source": SOURCE,
            }
        )
    if not rows:
        return launch_table.empty()
    df = pd.DataFrame(rows).sort_values("start_ns", kind="stable").reset_index(drop=True)
    return launch_table.validate(df, source=f"proton chrome trace ({where})")


def _version() -> str:
    import triton

    return f"Proton in Triton {triton.__version__}"


def capture(ctx: Any) -> None:
    """Proton runs inside the replay child itself (marker ``proton``): the child is the whole step."""
    out = ctx.workdir / "proton.chrome_trace"
    ctx.expect(ctx.step(ctx.child, "proton"), out, f"Proton finished but wrote no {out}")


BACKEND = Backend(
    name="proton",
    description="Triton's profiler, run in a child process",
    sniff=sniff,
    parse=parse,
    marker="proton",
    default_repeats=5,
    capture=capture,
    version=_version,
    sniff_rank=30,
)
