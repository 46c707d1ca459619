"""rocprof outputs whose fields the parser used to drop or misread without a word.

Every input is a real file from tests/data/rocprof (provenance in its README) or derived from one the way the
documented format writes it; expectations are recomputed from the source files with the csv module.
"""

from __future__ import annotations

import csv
import math
import shutil

import pandas as pd
import pytest

from kprof.profilers import parse_trace, rocprof
from tests.conftest import DATA

V3 = DATA / "rocprof" / "rocprofv3"
LEGACY = DATA / "rocprof" / "rocprof_legacy"
RESULTS = LEGACY / "HPCTrainingExamples_finite-difference_results.TRUNCATED.csv"
COPIES = V3 / "rocprofiler-sdk_docs_memory_copy_trace.csv"

# rocprofv2's file plugin, version 2 (its default): the header as documented in ROCm/rocprofiler's README
# ("File plugin version 2 output header"), without the trailing counter columns of a --pmc run.
V2_HEADER = (
    "Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,"
    "Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID"
).split(",")
# the same fields under their rocprof v1 names (the renaming AMD's rocprofiler-compute applies to read both)
V1_NAMES = {
    "Dispatch_ID": "Index",
    "GPU_ID": "gpu-id",
    "Queue_ID": "queue-id",
    "PID": "pid",
    "TID": "tid",
    "Grid_Size": "grd",
    "Workgroup_Size": "wgr",
    "LDS_Per_Workgroup": "lds",
    "Scratch_Per_Workitem": "scr",
    "Arch_VGPR": "arch_vgpr",
    "Accum_VGPR": "accum_vgpr",
    "SGPR": "sgpr",
    "Wave_Size": "wave_size",
    "Kernel_Name": "KernelName",
    "Start_Timestamp": "BeginNs",
    "End_Timestamp": "EndNs",
    "Correlation_ID": "Index",  # the v1 file has no correlation id: the dispatch index stands in
}


def dict_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def write_rows(path, records, header):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header, quoting=csv.QUOTE_NONNUMERIC)
        w.writeheader()
        w.writerows(records)
    return path


def rocprofv2_trace(tmp_path):
    """The real rocprof v1 results.csv, written as rocprofv2's file plugin (v2) writes the same dispatches."""
    raw = dict_rows(RESULTS)
    records = [{col: r[V1_NAMES[col]] for col in V2_HEADER} for r in raw]
    return write_rows(tmp_path / "results_2046349.csv", records, V2_HEADER), raw


def test_rocprofv2_kernel_trace_keeps_device_dims_and_registers(tmp_path):
    """The v2 header has Kernel_Name/Start_Timestamp/End_Timestamp, so it is read as a kernel trace; its launch
    fields (GPU_ID, Grid_Size, Workgroup_Size, Arch_VGPR, LDS_Per_Workgroup...) used to come out all <NA>."""
    path, raw = rocprofv2_trace(tmp_path)
    t = parse_trace(path, arch="gfx90a")
    raw = sorted(raw, key=lambda r: int(r["BeginNs"]))
    assert len(t) == len(raw)
    assert t["duration_ns"].tolist() == [int(r["EndNs"]) - int(r["BeginNs"]) for r in raw]
    assert t["device"].tolist() == [int(r["gpu-id"]) for r in raw]
    assert t["stream"].tolist() == [int(r["queue-id"]) for r in raw]
    assert t["pid"].tolist() == [int(r["pid"]) for r in raw]
    assert t["tid"].tolist() == [int(r["tid"]) for r in raw]
    assert t["correlation_id"].tolist() == [int(r["Index"]) for r in raw]
    # one number each in this format: total work-items and workgroup size, as in rocprof v1
    assert t["block_x"].tolist() == [int(r["wgr"]) for r in raw]
    assert t["grid_x"].tolist() == [math.ceil(int(r["grd"]) / int(r["wgr"])) for r in raw]
    assert t["block_y"].tolist() == [1] * len(raw) and t["grid_z"].tolist() == [1] * len(raw)
    assert t["registers_per_thread"].tolist() == [int(r["arch_vgpr"]) for r in raw]
    assert t["accum_vgprs"].tolist() == [int(r["accum_vgpr"]) for r in raw]
    assert t["sgprs"].tolist() == [int(r["sgpr"]) for r in raw]
    assert t["shared_mem_bytes"].tolist() == [int(r["lds"]) for r in raw]
    assert t["scratch_bytes"].tolist() == [int(r["scr"]) for r in raw]
    assert t["occupancy_theoretical_pct"].notna().all()


def test_rocprofv2_trace_reads_like_the_same_dispatches_from_rocprof_v1(tmp_path):
    path, _ = rocprofv2_trace(tmp_path)
    v2, v1 = rocprof.parse(path, arch="gfx90a"), rocprof.parse(RESULTS, arch="gfx90a")
    same = [
        "kernel",
        "start_ns",
        "end_ns",
        "device",
        "stream",
        "grid_x",
        "block_x",
        "registers_per_thread",
        "accum_vgprs",
        "sgprs",
        "shared_mem_bytes",
        "scratch_bytes",
        "occupancy_theoretical_pct",
        "occupancy_limiter",
    ]
    pd.testing.assert_frame_equal(v2[same], v1[same])


def test_a_kernel_trace_without_any_workgroup_column_says_so(tmp_path):
    """A column set kprof does not know (a future rename) must not leave grid/block empty in silence."""
    raw = dict_rows(V3 / "rocprofiler-sdk_docs_kernel_trace.csv")
    keep = [c for c in raw[0] if not c.startswith(("Workgroup_Size", "Grid_Size"))]
    path = write_rows(tmp_path / "k_kernel_trace.csv", [{c: r[c] for c in keep} for r in raw], keep)
    t = rocprof.parse(path)
    assert len(t) == len(raw) and t["block_x"].isna().all()
    assert any("workgroup" in w.lower() and "grid" in w.lower() for w in t.attrs["warnings"])


def copy_rows():
    return dict_rows(COPIES)


def turned_back(rows: list[dict]) -> list[dict]:
    """The real file's host-to-device copies as device-to-host ones: direction and agents swapped."""
    return [
        dict(
            r,
            Direction="MEMORY_COPY_DEVICE_TO_HOST",
            Source_Agent_Id=r["Destination_Agent_Id"],
            Destination_Agent_Id=r["Source_Agent_Id"],
        )
        for r in rows
    ]


def test_device_of_a_device_to_host_copy_is_its_source_gpu(tmp_path):
    """rocprofv3 writes Source_Agent_Id and Destination_Agent_Id; a device-to-host copy's destination is the
    CPU agent, so taking the destination made its device the CPU's agent id (0 here) instead of the GPU (2)."""
    rows = copy_rows()
    gpu = {r["Destination_Agent_Id"] for r in rows}
    assert len(gpu) == 1 and {r["Source_Agent_Id"] for r in rows} != gpu  # host -> GPU 2 in the real file
    back = turned_back(rows)
    path = write_rows(tmp_path / "m_memory_copy_trace.csv", rows + back, list(rows[0]))
    t = rocprof.parse(path)
    assert sorted(t["copy_kind"].tolist()) == ["DtoH"] * len(back) + ["HtoD"] * len(rows)
    assert t["device"].tolist() == [int(next(iter(gpu)))] * len(t)


def test_copies_joined_to_a_kernel_trace_sit_on_the_kernels_gpu(tmp_path):
    kern = dict_rows(V3 / "rocprofiler-sdk_docs_kernel_trace.csv")
    rows = copy_rows()
    back = turned_back(rows)
    shutil.copy(V3 / "rocprofiler-sdk_docs_kernel_trace.csv", tmp_path / "run_kernel_trace.csv")
    write_rows(tmp_path / "run_memory_copy_trace.csv", rows + back, list(rows[0]))
    t = rocprof.parse(tmp_path / "run_kernel_trace.csv")
    assert set(t["device"].dropna()) == {int(k["Agent_Id"]) for k in kern}


@pytest.mark.parametrize("direction", ["MEMORY_COPY_HOST_TO_HOST"])
def test_a_host_to_host_copy_has_no_gpu(tmp_path, direction):
    rows = copy_rows()
    path = write_rows(tmp_path / "h_memory_copy_trace.csv", [dict(rows[0], Direction=direction)], list(rows[0]))
    t = rocprof.parse(path)
    assert t["copy_kind"].tolist() == ["HtoH"] and t["device"].isna().all()


def counter_collection(tmp_path):
    """A rocprofv3 --pmc counter collection (columns as rocprofiler-sdk's generateCSV writes them) of the
    dispatches of the real v2 kernel trace: one row per counter per dispatch."""
    k = dict_rows(V3 / "rocprofiler-sdk_docs_kernel_trace_v2_LDS_VGPR_columns_agent_relative.csv")
    header = (
        "Correlation_Id,Dispatch_Id,Agent_Id,Queue_Id,Process_Id,Thread_Id,Grid_Size,Kernel_Id,Kernel_Name,"
        "Workgroup_Size,LDS_Block_Size,Scratch_Size,VGPR_Count,Accum_VGPR_Count,SGPR_Count,Counter_Name,"
        "Counter_Value,Start_Timestamp,End_Timestamp"
    ).split(",")
    rows = []
    for r in k:
        grid = int(r["Grid_Size_X"]) * int(r["Grid_Size_Y"]) * int(r["Grid_Size_Z"])
        base = dict(r, Process_Id="225049", Grid_Size=grid, Workgroup_Size=r["Workgroup_Size_X"])
        rows += [dict(base, Counter_Name="SQ_WAVES", Counter_Value=grid // 64)]
    return write_rows(tmp_path / "312_counter_collection.csv", [{c: r[c] for c in header} for r in rows], header)


def test_counter_collection_keeps_its_pid_when_an_api_trace_is_beside_it(tmp_path):
    """Joining the HIP API trace merged a second 'pid' column into the table and the process id was lost."""
    path = counter_collection(tmp_path)
    alone = rocprof.parse(path)
    assert alone["pid"].tolist() == [225049] * len(alone)  # (== ... .all() would skip <NA>)
    shutil.copy(V3 / "rocprofiler-sdk_docs_hip_runtime_trace.csv", tmp_path / "312_hip_api_trace.csv")
    t = rocprof.parse(path)
    assert any("hip_api_trace" in w for w in t.attrs["warnings"])  # the sibling was looked at
    assert t["pid"].tolist() == [225049] * len(t)
