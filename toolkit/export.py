"""Launch table -> Chrome/Perfetto trace JSON, whatever profiler captured it.

Layout (the Chrome trace event format that ui.perfetto.dev and chrome://tracing read):

* one process per GPU (``GPU 0``), one thread (track) per stream, a complete event (``ph: "X"``) per
  kernel / copy / memset with its case, grid, block, registers, shared memory and counters in ``args``;
* one process per host process, one track per host thread, an event per launch call and sync call;
* a flow arrow (``ph: "s"`` at the launch call, ``ph: "f"`` with ``bp: "e"`` at the kernel) linking each
  launch call to its kernel;
* rows without timestamps (ncu, summaries) cannot be placed on a timeline and are counted in
  ``otherData.untimed_rows`` instead of being invented.

Timestamps are microseconds, relative to the earliest event, so traces from any clock line up at 0.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd

from kprof import launch_table
from kprof.store import plain

_ARG_COLUMNS = (
    "case",
    "kind",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "shared_mem_bytes",
    "occupancy_theoretical_pct",
    "occupancy_achieved_pct",
    "dram_read_bytes",
    "dram_write_bytes",
    "copy_kind",
    "bytes",
    "correlation_id",
    "launch_latency_ns",
    "queue_ns",
    "source",
)


def to_chrome_trace(launches: pd.DataFrame, title: str = "kprof") -> dict:
    table = launch_table.validate(launches)
    timed = table[table["start_ns"].notna()]
    untimed = len(table) - len(timed)
    if timed.empty:
        return {"traceEvents": [], "displayTimeUnit": "ns", "otherData": {"title": title, "untimed_rows": untimed}}
    host_starts = timed["api_start_ns"].dropna()
    t0 = int(min(timed["start_ns"].min(), host_starts.min() if len(host_starts) else timed["start_ns"].min()))

    def us(ns: Any) -> float:
        return (int(ns) - t0) / 1000.0

    events: list[dict] = []
    gpu_pids: dict[Any, int] = {}
    host_pids: dict[Any, int] = {}
    named_threads: set[tuple[int, int]] = set()

    def gpu_pid(device: Any) -> int:
        key = plain(device)
        if key not in gpu_pids:
            pid = 1_000_000 + len(gpu_pids)
            gpu_pids[key] = pid
            events.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": pid,
                    "args": {"name": f"GPU {key if key is not None else '?'}"},
                }
            )
            events.append(
                {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": 10 + len(gpu_pids)}}
            )
        return gpu_pids[key]

    def host_pid(pid: Any) -> int:
        key = plain(pid)
        if key not in host_pids:
            host_pids[key] = int(key) if key is not None else 999_999
            events.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": host_pids[key],
                    "args": {"name": f"host process {key if key is not None else '?'}"},
                }
            )
            events.append({"ph": "M", "name": "process_sort_index", "pid": host_pids[key], "args": {"sort_index": 0}})
        return host_pids[key]

    def thread_name(pid: int, tid: int, name: str) -> None:
        if (pid, tid) not in named_threads:
            named_threads.add((pid, tid))
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})

    flow_id = 0
    for r in timed.itertuples(index=False):
        kind = r.kind if r.kind is not pd.NA else "kernel"
        args = {c: plain(getattr(r, c)) for c in _ARG_COLUMNS}
        args = {k: v for k, v in args.items() if v is not None}
        if kind == "sync":
            pid = host_pid(r.pid)
            tid = int(plain(r.tid) or 0)
            thread_name(pid, tid, f"thread {tid}")
            events.append(
                {
                    "ph": "X",
                    "name": str(r.kernel),
                    "cat": "sync",
                    "pid": pid,
                    "tid": tid,
                    "ts": us(r.start_ns),
                    "dur": int(r.duration_ns) / 1000.0,
                    "args": args,
                }
            )
            continue
        pid = gpu_pid(r.device)
        stream = plain(r.stream)
        tid = int(stream) if stream is not None else 0
        thread_name(pid, tid, f"stream {stream if stream is not None else '?'}")
        events.append(
            {
                "ph": "X",
                "name": str(r.kernel),
                "cat": kind,
                "pid": pid,
                "tid": tid,
                "ts": us(r.start_ns),
                "dur": int(r.duration_ns) / 1000.0,
                "args": args,
            }
        )
        if r.api_start_ns is not pd.NA and r.api_end_ns is not pd.NA:
            hpid = host_pid(r.pid)
            htid = int(plain(r.tid) or 0)
            thread_name(hpid, htid, f"thread {htid}")
            api = str(r.api_name) if r.api_name is not pd.NA else "launch"
            events.append(
                {
                    "ph": "X",
                    "name": api,
                    "cat": "launch",
                    "pid": hpid,
                    "tid": htid,
                    "ts": us(r.api_start_ns),
                    "dur": (int(r.api_end_ns) - int(r.api_start_ns)) / 1000.0,
                    "args": {"kernel": str(r.kernel), **({"case": args["case"]} if "case" in args else {})},
                }
            )
            flow_id += 1
            events.append(
                {
                    "ph": "s",
                    "id": flow_id,
                    "name": "launch",
                    "cat": "launch",
                    "pid": hpid,
                    "tid": htid,
                    "ts": us(r.api_start_ns),
                }
            )
            events.append(
                {
                    "ph": "f",
                    "bp": "e",
                    "id": flow_id,
                    "name": "launch",
                    "cat": "launch",
                    "pid": pid,
                    "tid": tid,
                    "ts": us(r.start_ns),
                }
            )
    sources = sorted(set(table["source"].dropna()))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"title": title, "sources": sources, "untimed_rows": untimed, "t0_ns": t0},
    }


def write_perfetto(launches: pd.DataFrame, path: Path, title: str = "kprof") -> dict:
    """Write the trace (gzipped when the name ends in .gz); returns its ``otherData`` summary."""
    trace = to_chrome_trace(launches, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(trace).encode()
    if path.name.endswith(".gz"):
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)
    return {**trace["otherData"], "events": len(trace["traceEvents"])}
