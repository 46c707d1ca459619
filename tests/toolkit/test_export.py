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
