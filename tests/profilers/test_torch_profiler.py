"""The Kineto parser on real torch.profiler traces captured by `kprof profile rmsnorm` on an H100
(torch 2.11, Triton 3.6; tests/data/README.md). Expected values are recomputed from the raw JSON."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers import parse_trace, torch_profiler

DATA = Path(__file__).parent.parent / "data"
TRACES = sorted(DATA.glob("kineto_*.json.gz"))


def ns(us: float) -> int:
    """Kineto's microseconds as written in the JSON (shortest repr) -> exact ns; float products round
    4482178705501.859 * 1000 up to ...860."""
    return int(Decimal(repr(us)) * 1000)


def raw_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


@pytest.fixture(params=TRACES, ids=lambda p: p.name)
def trace(request) -> tuple[Path, list[dict], pd.DataFrame]:
    path = request.param
    return path, raw_events(path), torch_profiler.parse(path)


def test_there_are_real_traces():
    assert len(TRACES) >= 2


def test_one_row_per_kernel_event_with_exact_times(trace):
    _, events, df = trace
    df = launch_table.kernels(df)
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    assert len(df) == len(kernels) > 0
    by_corr = {e["args"]["correlation"]: e for e in kernels}
    for row in df.itertuples():
        raw = by_corr[row.correlation_id]
        assert row.kernel == raw["name"]
        assert row.duration_ns == ns(raw["dur"])
        assert row.start_ns == ns(raw["ts"])
        assert row.registers_per_thread == raw["args"]["registers per thread"]
        assert row.shared_mem_bytes == raw["args"]["shared memory"]
        assert (row.grid_x, row.grid_y, row.grid_z) == tuple(raw["args"]["grid"])
        assert (row.block_x, row.block_y, row.block_z) == tuple(raw["args"]["block"])


def test_launch_calls_matched_by_correlation(trace):
    _, events, df = trace
    df = launch_table.kernels(df)
    launches = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    assert df["api_name"].notna().all(), "every kernel in these traces has its launch call"
    for row in df.itertuples():
        api = launches[row.correlation_id]
        assert row.api_name == api["name"]
        assert row.api_start_ns == ns(api["ts"])
        assert row.launch_latency_ns == row.start_ns - row.api_start_ns > 0
        assert row.queue_ns == max(0, row.start_ns - row.api_end_ns)


def test_triton_launches_are_driver_calls_and_pytorch_runtime_calls(trace):
    _, _, df = trace
    ours = df[df["kernel"].str.startswith("_rmsnorm_")]
    assert len(ours) and set(ours["api_name"]) == {"cuLaunchKernelEx"}
    aten = df[df["kernel"].str.contains("at::native")]
    assert len(aten) and set(aten["api_name"]) == {"cudaLaunchKernel"}


def test_kernels_attributed_to_their_case_range(trace):
    _, events, df = trace
    ranges = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("kprof::")]
    launches = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    kernel_corr = {e["args"]["correlation"] for e in events if e.get("cat") == "kernel"}
    for r in ranges:
        inside = [
            e
            for e in launches
            if r["ts"] <= e["ts"] <= r["ts"] + r["dur"]
            and e["tid"] == r["tid"]
            and e["args"].get("correlation") in kernel_corr
        ]
        case = r["name"][len("kprof::") :]
        assert (df["case"] == case).sum() == len({e["args"]["correlation"] for e in inside}) > 0
        # Triton versions launch exactly one kernel per call (5 calls per case range)
        if "/triton_" in case:
            assert (df["case"] == case).sum() == 5
    # the warm-up call before each range and the input set-up are not attributed to any case
    assert df["case"].isna().any()


def test_output_is_a_valid_launch_table(trace):
    _, _, df = trace
    assert list(df.columns) == list(launch_table.COLUMN_NAMES)
    pd.testing.assert_frame_equal(df, launch_table.validate(df))
    assert (df["source"] == "torch").all()


def test_parse_trace_sniffs_the_format():
    df = parse_trace(TRACES[0])
    assert len(df) == len(torch_profiler.parse(TRACES[0]))


@pytest.mark.parametrize(
    "content, match",
    [
        (b"not json at all", "not valid JSON"),
        (b'{"foo": 1}', "traceEvents"),
    ],
)
def test_bad_files_raise_trace_format_error(tmp_path, content, match):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    with pytest.raises(TraceFormatError, match=match):
        torch_profiler.parse(p)


def test_truncated_gzip_is_a_clear_error(tmp_path):
    data = TRACES[0].read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError):
        torch_profiler.parse(p)


def test_unknown_file_and_format(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    with pytest.raises(TraceFormatError, match="not a trace kprof can read"):
        parse_trace(p)
    with pytest.raises(TraceFormatError, match="not found"):
        parse_trace(tmp_path / "missing.json")
    with pytest.raises(TraceFormatError, match="unknown trace format"):
        parse_trace(TRACES[0], fmt="nope")


def test_capture_on_cpu_writes_a_trace_with_case_ranges(tmp_path):
    import torch

    path = tmp_path / "t.json.gz"
    torch_profiler.capture([("fam/p/4x4/fp32", lambda: torch.ones(4, 4) * 2)], path, repeats=3)
    events = raw_events(path)
    assert any(e.get("name") == "kprof::fam/p/4x4/fp32" for e in events)
    df = torch_profiler.parse(path)
    if not torch.cuda.is_available():
        assert df.empty and list(df.columns) == list(launch_table.COLUMN_NAMES)
