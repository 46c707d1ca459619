"""Perfetto export of launch tables from every profiler."""

from __future__ import annotations

import gzip
import json

from kprof import launch_table
from kprof.export import to_chrome_trace, write_perfetto
from kprof.profilers import ncu, nsys, torch_profiler
from tests.conftest import DATA


def test_nsys_table_becomes_tracks_and_flows(data_file):
    table = nsys.parse(data_file("nsys_rmsnorm.sqlite"))
    trace = to_chrome_trace(table)
    ev = trace["traceEvents"]
    gpu = [e for e in ev if e["ph"] == "X" and e["cat"] == "kernel"]
    launches = [e for e in ev if e["ph"] == "X" and e["cat"] == "launch"]
    assert len(gpu) == len(launch_table.kernels(table)) == len(launches)
    starts = [e for e in ev if e["ph"] == "s"]
    ends = [e for e in ev if e["ph"] == "f"]
    assert len(starts) == len(ends) == len(launches)
    assert {e["id"] for e in starts} == {e["id"] for e in ends}
    # a flow starts at its launch call and ends at its kernel, which is later
    by_id = {e["id"]: e for e in ends}
    assert all(by_id[s["id"]]["ts"] >= s["ts"] for s in starts)
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert any(n.startswith("stream ") for n in names) and any(n.startswith("thread ") for n in names)
    assert min(e["ts"] for e in ev if "ts" in e) == 0
    cased = [e for e in gpu if "case" in e["args"]]
    assert len(cased) == int(table.loc[launch_table.kernels(table).index, "case"].notna().sum())


def test_untimed_rows_are_counted_not_placed(data_file, tmp_path):
    table = ncu.parse(data_file("ncu_rmsnorm_raw.csv"))
    info = write_perfetto(table, tmp_path / "ncu.json")
    assert info["untimed_rows"] == len(table) and info["events"] == 0


def test_gzip_output_from_a_kineto_trace(tmp_path):
    table = torch_profiler.parse(DATA / "kineto_rmsnorm_h100_small.json.gz")
    info = write_perfetto(table, tmp_path / "t.json.gz", title="x")
    data = json.loads(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))
    assert data["otherData"]["sources"] == ["torch"] and len(data["traceEvents"]) == info["events"]


def _table(rows):
    import pandas as pd

    base = {"kind": "kernel", "stream": 7, "tid": 1, "source": "torch"}
    df = pd.DataFrame([{**base, **r} for r in rows])
    df["end_ns"] = df["start_ns"] + df["duration_ns"]
    return launch_table.validate(df)


def _gpu_tracks(trace) -> dict[int, str]:
    ev = trace["traceEvents"]
    return {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}


def test_a_fanout_runs_workers_each_get_their_own_gpu_track():
    """Fan-out workers each see their one GPU as device 0 (CUDA_VISIBLE_DEVICES pinned), and their launches land
    in one table: kernels of two GPUs must not be drawn as one GPU 0's, overlapping on one stream."""
    table = _table(
        [
            {"kernel": "k_a", "start_ns": 1_000, "duration_ns": 500, "device": 0, "pid": 101, "case": "f/a/1x1/fp16"},
            {"kernel": "k_b", "start_ns": 1_100, "duration_ns": 500, "device": 0, "pid": 202, "case": "f/b/1x1/fp16"},
        ]
    )
    trace = to_chrome_trace(table)
    kernels = {e["name"]: e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "kernel"}
    assert kernels["k_a"]["pid"] != kernels["k_b"]["pid"]
    names = _gpu_tracks(trace)
    assert "101" in names[kernels["k_a"]["pid"]] and "202" in names[kernels["k_b"]["pid"]]


def test_one_process_on_two_gpus_keeps_one_track_per_gpu():
    table = _table(
        [
            {"kernel": "k_a", "start_ns": 1_000, "duration_ns": 500, "device": 0, "pid": 101},
            {"kernel": "k_b", "start_ns": 1_100, "duration_ns": 500, "device": 1, "pid": 101},
        ]
    )
    trace = to_chrome_trace(table)
    kernels = {e["name"]: e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "kernel"}
    names = _gpu_tracks(trace)
    assert names[kernels["k_a"]["pid"]] == "GPU 0" and names[kernels["k_b"]["pid"]] == "GPU 1"


def test_a_host_process_numbered_like_a_gpu_track_stays_its_own_process():
    """Linux numbers processes up to 4194304: a host process 1000000 is not GPU 0's track."""
    table = _table(
        [
            {
                "kernel": "k",
                "start_ns": 2_000,
                "duration_ns": 500,
                "device": 0,
                "pid": 1_000_000,
                "api_name": "cuLaunchKernelEx",
                "api_start_ns": 1_000,
                "api_end_ns": 1_500,
            }
        ]
    )
    trace = to_chrome_trace(table)
    ev = trace["traceEvents"]
    kernel = next(e for e in ev if e["ph"] == "X" and e["cat"] == "kernel")
    call = next(e for e in ev if e["ph"] == "X" and e["cat"] == "launch")
    assert kernel["pid"] != call["pid"]
    names = _gpu_tracks(trace)
    assert names[kernel["pid"]] == "GPU 0" and names[call["pid"]] == "host process 1000000"
    assert len([e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]) == len(names) == 2
