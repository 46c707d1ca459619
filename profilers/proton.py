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
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers._files import head
from kprof.profilers._ranges import case_name

SOURCE = "proton"


def _load(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"{path}: not readable as Proton JSON output: {exc}") from None


def looks_like(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith(".hatchet"):
        return True
    if not name.endswith((".chrome_trace", ".json")):
        return False
    text = head(path, 8192)
    return '"call_stack"' in text or ('"frame"' in text and '"metrics"' in text)


def parse(path: Path) -> pd.DataFrame:
    path = Path(path)
    data = _load(path)
    if isinstance(data, list) and data and isinstance(data[0], dict) and "frame" in data[0]:
        return parse_hatchet(data, where=str(path))
    if isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        return parse_chrome(data["traceEvents"], where=str(path))
    raise TraceFormatError(f"{path}: neither a Proton hatchet tree (a list whose first item has 'frame') nor a "
                           "Chrome trace with 'traceEvents'")


def _case_of(stack: list[str]) -> Any:
    for frame in reversed(stack):  # innermost kprof scope
        case = case_name(frame)
        if case is not None:
            return case
    return pd.NA


def parse_hatchet(tree: list, where: str = "hatchet") -> pd.DataFrame:
    rows: list[dict] = []

    def walk(node: dict, stack: list[str]) -> None:
        frame = node.get("frame") or {}
        name = str(frame.get("name", ""))
        metrics = node.get("metrics") or {}
        if "device_id" in metrics and metrics.get("count"):
            count = int(metrics["count"])
            total = float(metrics.get("time (ns)", 0))
            rows.append({
                "kernel": name, "kind": "kernel", "count": count, "duration_ns": round(total / count),
                "device": int(metrics["device_id"]), "case": _case_of(stack), "source": SOURCE,
            })
        for child in node.get("children") or []:
            walk(child, stack + [name])

    if not isinstance(tree[0], dict) or "frame" not in tree[0]:
        raise TraceFormatError(f"{where}: hatchet root has no 'frame'")
    walk(tree[0], [])
    if not rows:
        return launch_table.empty()
    return launch_table.validate(pd.DataFrame(rows), source=f"proton hatchet ({where})")


def parse_chrome(events: list, where: str = "trace") -> pd.DataFrame:
    rows = []
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X" or ev.get("cat") != "kernel":
            continue
        start = round(float(ev["ts"]) * 1000)
        dur = round(float(ev.get("dur", 0)) * 1000)
        stack = (ev.get("args") or {}).get("call_stack") or []
        rows.append({
            "kernel": str(ev.get("name", "")), "kind": "kernel", "count": 1,
            "start_ns": start, "end_ns": start + dur, "duration_ns": dur,
            "stream": ev.get("tid"), "case": _case_of([str(s) for s in stack]), "source": SOURCE,
        })
    if not rows:
        return launch_table.empty()
    df = pd.DataFrame(rows).sort_values("start_ns", kind="stable").reset_index(drop=True)
    return launch_table.validate(df, source=f"proton chrome trace ({where})")
