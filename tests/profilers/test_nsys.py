"""nsys parser on a real H100 capture (tests/data/nsys_rmsnorm.*): SQLite export and the stats CSVs."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest

from kprof import launch_table
from kprof.errors import TraceFormatError
from kprof.profilers import nsys, parse_trace


@pytest.fixture
def spec():
    from tests.conftest import DATA

    return json.loads((DATA / "replay_spec_rmsnorm_4cases.json").read_text())


@pytest.fixture
def table(data_file):
    return nsys.parse(data_file("nsys_rmsnorm.sqlite"))


def test_every_kernel_of_the_export_is_a_row_with_its_raw_fields(table, data_file):
    con = sqlite3.connect(data_file("nsys_rmsnorm.sqlite"))
    raw = pd.read_sql_query(
        'SELECT start, "end", registersPerThread, gridX, blockX, staticSharedMemory + '
        "dynamicSharedMemory AS smem FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start",
        con,
    )
    k = launch_table.kernels(table).reset_index(drop=True)
    assert len(k) == len(raw)
    assert (k["start_ns"].to_numpy() == raw["start"].to_numpy()).all()
    assert (k["duration_ns"].to_numpy() == (raw["end"] - raw["start"]).to_numpy()).all()
    assert (k["registers_per_thread"].to_numpy() == raw["registersPerThread"].to_numpy()).all()
    assert (k["shared_mem_bytes"].to_numpy() == raw["smem"].to_numpy()).all()
    assert (k["source"] == "nsys").all()


def test_cases_come_from_the_nvtx_ranges_and_exclude_the_warmup(table, spec):
    k = launch_table.kernels(table)
    cases = k[k["case"].notna()]
    assert set(cases["case"]) == {c["id"] for c in spec["cases"]}
    per_case = cases.groupby("case")["kernel"].agg(["count", "nunique"])
    # every launch inside a range is a multiple of the repeats (one per call per kernel of the provider)
    assert ((per_case["count"] % spec["repeats"]) == 0).all()
    tuned = cases[cases["case"].str.contains("triton_tuned")]
    assert len(tuned) == spec["repeats"] and (tuned["kernel"] == "_rmsnorm_rows_kernel").all()
    # the warm-up launch of each case ran outside its range: one more launch of that kernel in the trace
    all_tuned = k[k["kernel"] == "_rmsnorm_rows_kernel"]
    assert len(all_tuned) == spec["repeats"] + 1 and all_tuned["case"].isna().sum() == 1


def test_launch_calls_joined_by_correlation_and_queue_time(table):
    k = launch_table.kernels(table)
    assert k["api_name"].notna().all()
    triton = k[k["kernel"].str.startswith("_rmsnorm")]
    assert set(triton["api_name"]) == {"cuLaunchKernelEx"}  # Triton's driver launch, version suffix dropped
    torch_k = k[k["kernel"].str.contains("at::native")]
    assert set(torch_k["api_name"]) == {"cudaLaunchKernel"}
    assert (k["launch_latency_ns"] == k["start_ns"] - k["api_start_ns"]).all()
    assert (k["queue_ns"] == (k["start_ns"] - k["api_end_ns"]).clip(lower=0)).all()
    assert (k["launch_latency_ns"] > 0).all()


def test_syncs_are_rows_and_devices_are_read(table, spec):
    syncs = table[table["kind"] == "sync"]
    assert syncs["kernel"].str.contains("Synchronize").all()
    in_cases = syncs[syncs["case"].notna()]
    assert in_cases.groupby("case").size().to_dict() == {c["id"]: 1 for c in spec["cases"]}  # the replay's own
    assert table.attrs["devices"][0]["name"].startswith("NVIDIA")
    assert table.attrs["devices"][0]["cudaId"] in set(table["device"].dropna())
    assert table.attrs["nvtx_case_ranges"] == len(spec["cases"])


def test_stats_csvs_agree_with_the_sqlite(table, data_file):
    k = launch_table.kernels(table)
    exec_trace = nsys.parse(data_file("nsys_rmsnorm_cuda_kern_exec_trace.csv"))
    gpu_trace = nsys.parse(data_file("nsys_rmsnorm_cuda_gpu_trace.csv"))
    kern_sum = nsys.parse(data_file("nsys_rmsnorm_cuda_gpu_kern_sum.csv"))
    for t in (exec_trace, gpu_trace):
        assert sorted(t["start_ns"]) == sorted(k["start_ns"])
        assert sorted(t["duration_ns"]) == sorted(k["duration_ns"])
    by_start = exec_trace.set_index("start_ns")
    joined = k.set_index("start_ns")
    assert (by_start.loc[joined.index, "api_start_ns"] == joined["api_start_ns"]).all()
    assert (by_start.loc[joined.index, "grid_x"] == joined["grid_x"]).all()
    # queue time as nsys's own report computes it (empty there = did not queue = 0 here)
    raw = pd.read_csv(data_file("nsys_rmsnorm_cuda_kern_exec_trace.csv")).set_index("Kernel Start (ns)")
    assert (raw.loc[joined.index, "Queue Dur (ns)"].fillna(0).to_numpy() == joined["queue_ns"].to_numpy()).all()
    assert raw["Queue Dur (ns)"].notna().any() and raw["Queue Dur (ns)"].isna().any()  # both kinds occur
    assert int(kern_sum["count"].sum()) == len(k)
    assert kern_sum["start_ns"].isna().all()
    total = (kern_sum["duration_ns"] * kern_sum["count"]).sum()
    assert abs(total - k["duration_ns"].sum()) <= len(kern_sum)  # the summary's mean is rounded per kernel


def test_sniffed_without_format(data_file):
    for name in (
        "nsys_rmsnorm.sqlite",
        "nsys_rmsnorm_cuda_gpu_kern_sum.csv",
        "nsys_rmsnorm_cuda_kern_exec_trace.csv",
        "nsys_rmsnorm_cuda_gpu_trace.csv",
    ):
        assert (parse_trace(data_file(name))["source"] == "nsys").all()


def test_other_sqlite_and_reports_are_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="not an Nsight Systems export"):
        nsys.parse(other)
    rep = tmp_path / "x.nsys-rep"
    rep.write_bytes(b"\0" * 16)
    with pytest.raises(TraceFormatError, match="nsys export --type sqlite"):
        nsys.parse(rep)


def test_commands_are_argv_lists(tmp_path):
    argv = nsys.profile_command("/x/nsys", ["python", "-m", "kprof.replay", "s.json"], tmp_path / "out")
    assert argv[:2] == ["/x/nsys", "profile"] and "--trace=cuda,nvtx" in argv and argv[-1] == "s.json"
    assert nsys.export_command("/x/nsys", tmp_path / "a.nsys-rep", tmp_path / "a.sqlite")[1:4] == [
        "export",
        "--type",
        "sqlite",
    ]


def test_copies_memsets_and_syncs_from_a_real_capture(data_file):
    path = data_file("nsys_transfers.sqlite")
    t = nsys.parse(path)
    con = sqlite3.connect(path)
    copies = pd.read_sql_query(
        "SELECT m.bytes, e.label FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
        "JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind ORDER BY m.start",
        con,
    )
    memsets = con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMSET").fetchone()[0]
    got = t[t["kind"] == "memcpy"].sort_values("start_ns")
    assert got["bytes"].tolist() == copies["bytes"].tolist()
    assert got["copy_kind"].tolist() == [
        {"Host-to-Device": "HtoD", "Device-to-Host": "DtoH"}[x] for x in copies["label"]
    ]
    assert (t["kind"] == "memset").sum() == memsets > 0
    assert got["case"].notna().all() and got["api_name"].notna().all()  # the copy calls ran inside the range
    from kprof.metrics import launch_metrics
    from kprof.occupancy import DeviceLimits

    calls = 3  # the program's loop
    m = launch_metrics(t, calls, DeviceLimits()).set_index("case").loc["demo/transfers/1024x1024/fp32"]
    assert m["transfers_per_call"] == len(copies) / calls
    syncs = t[(t["kind"] == "sync") & (t["case"] == "demo/transfers/1024x1024/fp32")]
    assert m["syncs_per_call"] == (len(syncs) - 1) / calls and len(syncs) > calls


def test_a_recording_nsys_could_not_import_says_what_to_install(tmp_path):
    """nsys bundled with Nsight Compute stops at a .qdstrm file where libdw.so.1 is missing (its importer fails,
    yet nsys exits 0): the error names the libraries instead of only the missing report."""
    from kprof.profilers.nsys import NO_IMPORTER, no_report

    rep = tmp_path / "nsys.nsys-rep"
    assert no_report(rep) == f"nsys finished but wrote no report {rep}"
    rep.with_suffix(".qdstrm").write_bytes(b"\0" * 64)
    msg = no_report(rep)
    assert NO_IMPORTER in msg and "nsys.qdstrm" in msg and "libdw.so.1" in msg and "--profiler torch" in msg
