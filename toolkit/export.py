"""Launch table -> Chrome/Perfetto trace JSON, whatever profiler captured it.

Layout (the Chrome trace event format that ui.perfetto.dev and chrome://tracing read):

* one process per GPU (``GPU 0``; ``GPU 0 (process 4242)`` when the kernels come from several host
  processes, each numbering its GPUs from 0), one thread (track) per stream, a complete event (``ph: "X"``)
  per kernel / copy / memset with its case, grid, block, registers, shared memory and counters in ``args``;
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
    unknown_host, first_gpu = _free_pids(table)
    per_process = _gpu_rows_of_several_processes(timed)

    def gpu_pid(device: Any, host: Any) -> int:
        key = (plain(host), plain(device)) if per_process else plain(device)
        if key not in gpu_pids:
            pid = first_gpu + len(gpu_pids)
            gpu_pids[key] = pid
            events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": _gpu_label(key)}})
            events.append(
                {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": 10 + len(gpu_pids)}}
            )
        return gpu_pids[key]

    def host_pid(pid: Any) -> int:
        key = plain(pid)
        if key not in host_pids:
            host_pids[key] = int(key) if key is not None else unknown_host
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
        pid = gpu_pid(r.device, r.pid)
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


def _free_pids(table: pd.DataFrame) -> tuple[int, int]:
    """Trace pids for a host process of unknown id and for the first GPU track, above every host pid in
    ``table``. Why: host tracks use the process's own id, and Linux numbers processes up to 4194304, so a
    fixed GPU number (1000000) could be a host process's too and merge the two tracks."""
    pids = table["pid"].dropna()
    top = int(pids.max()) if len(pids) else 0
    first_gpu = max(1_000_000, top + 2)
    return first_gpu - 1, first_gpu


def _gpu_rows_of_several_processes(timed: pd.DataFrame) -> bool:
    """Whether the GPU rows come from more than one host process. A device index is the process's own
    (``CUDA_VISIBLE_DEVICES`` renumbers): a fan-out run's workers each call their one GPU device 0, so their
    kernels get a track per process, not one "GPU 0" with several GPUs' kernels overlapping on it."""
    gpu = timed[timed["kind"].fillna("kernel") != "sync"]
    return gpu["pid"].dropna().nunique() > 1


def _gpu_label(key: Any) -> str:
    host, device = key if isinstance(key, tuple) else (None, key)
    name = f"GPU {device if device is not None else '?'}"
    return name if not isinstance(key, tuple) else f"{name} (process {host if host is not None else '?'})"


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
