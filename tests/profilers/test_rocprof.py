"""rocprof parsers on the real AMD outputs in tests/data/rocprof/ (real outputs from public repositories; provenance
in its README)."""

from __future__ import annotations

import csv
import json
import math
import shutil

import pytest

from kprof.errors import TraceFormatError
from kprof.occupancy import amd_limits, amd_occupancy
from kprof.profilers import parse_trace, rocprof
from tests.conftest import DATA

V3 = DATA / "rocprof" / "rocprofv3"
LEGACY = DATA / "rocprof" / "rocprof_legacy"


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def alone(path, tmp_path, name=None):
    """A copy without its sibling files (the fixtures come from different runs and must not be joined)."""
    out = tmp_path / (name or path.name)
    shutil.copy(path, out)
    return out


@pytest.mark.parametrize(
    "name",
    [
        "rocprofiler-sdk_docs_kernel_trace.csv",
        "rocprofiler-sdk_docs_kernel_trace_v2_LDS_VGPR_columns_agent_relative.csv",
    ],
)
def test_v3_kernel_traces_both_column_sets(name, tmp_path):
    raw = sorted(rows(V3 / name), key=lambda r: int(r["Start_Timestamp"]))  # the table is in time order
    t = rocprof.parse(alone(V3 / name, tmp_path))
    assert len(t) == len(raw)
    assert t["kernel"].tolist() == [r["Kernel_Name"] for r in raw]
    assert t["duration_ns"].tolist() == [int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in raw]
    # grid sizes are work-items in rocprof: blocks = ceil(grid / workgroup)
    assert t["grid_x"].tolist() == [math.ceil(int(r["Grid_Size_X"]) / int(r["Workgroup_Size_X"])) for r in raw]
    assert t["device"].tolist() == [int(str(r["Agent_Id"]).split()[-1]) for r in raw]  # "Agent 4" and 2
    if "VGPR_Count" in raw[0]:
        assert t["registers_per_thread"].tolist() == [int(r["VGPR_Count"]) for r in raw]
        assert t["accum_vgprs"].tolist() == [int(r["Accum_VGPR_Count"]) for r in raw]
        assert t["shared_mem_bytes"].tolist() == [int(r["LDS_Block_Size"]) for r in raw]
    else:  # the older set has no register counts: missing, not zero
        assert t["registers_per_thread"].isna().all()
        assert t["shared_mem_bytes"].tolist() == [int(r["Group_Segment_Size"]) for r in raw]
    assert t["occupancy_theoretical_pct"].isna().all()  # no arch given and none next to the file


def test_v3_occupancy_with_an_arch(tmp_path):
    name = "rocprofiler-sdk_docs_kernel_trace_v2_LDS_VGPR_columns_agent_relative.csv"
    raw = sorted(rows(V3 / name), key=lambda r: int(r["Start_Timestamp"]))
    t = rocprof.parse(alone(V3 / name, tmp_path), arch="gfx942")
    lim = amd_limits("gfx942")
    for r, pct, limiter in zip(raw, t["occupancy_theoretical_pct"], t["occupancy_limiter"]):
        occ = amd_occupancy(
            int(r["Workgroup_Size_X"]),
            int(r["VGPR_Count"]),
            int(r["Accum_VGPR_Count"]),
            int(r["SGPR_Count"]),
            int(r["LDS_Block_Size"]),
            lim,
        )
        assert pct == pytest.approx(occ.occupancy_pct) and limiter == occ.limiter


def test_v3_siblings_joined_by_prefix(tmp_path):
    """A kernel trace with its HIP API, marker and copy traces beside it (made from the real files)."""
    kern = rows(V3 / "rocprofiler-sdk_docs_kernel_trace.csv")
    api = rows(V3 / "rocprofiler-sdk_docs_hip_runtime_trace.csv")
    launch = next(a for a in api if a["Function"] == "hipLaunchKernel")
    # give the first dispatch the launch call's correlation id and put the call just before the kernel
    # the dispatching thread is the thread that made the launch call
    k0 = dict(kern[0], Correlation_Id=launch["Correlation_Id"], Thread_Id=launch["Thread_Id"])
    start = int(k0["Start_Timestamp"])
    launch = dict(launch, Start_Timestamp=str(start - 5000), End_Timestamp=str(start - 1000))
    api_rows = [launch if a["Correlation_Id"] == launch["Correlation_Id"] else a for a in api]
    marker = {
        "Domain": "MARKER_CORE_API",
        "Function": "kprof::demo/case/64/fp32",
        "Process_Id": launch["Process_Id"],
        "Thread_Id": launch["Thread_Id"],
        "Correlation_Id": "0",
        "Start_Timestamp": str(start - 9000),
        "End_Timestamp": str(start + 100000),
    }

    def write(name, records):
        with open(tmp_path / name, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(records[0]), quoting=csv.QUOTE_NONNUMERIC)
            w.writeheader()
            w.writerows(records)

    write("run_kernel_trace.csv", [k0] + kern[1:])
    write("run_hip_api_trace.csv", api_rows)
    write("run_marker_api_trace.csv", [marker])
    shutil.copy(V3 / "rocprofiler-sdk_docs_memory_copy_trace.csv", tmp_path / "run_memory_copy_trace.csv")
    t = rocprof.parse(tmp_path / "run_kernel_trace.csv")
    first = t[t["kind"] == "kernel"].sort_values("start_ns").iloc[0]
    assert first["api_name"] == "hipLaunchKernel"
    assert first["launch_latency_ns"] == 5000 and first["queue_ns"] == 1000
    assert first["case"] == "demo/case/64/fp32"
    copies = t[t["kind"] == "memcpy"]
    assert len(copies) == len(rows(V3 / "rocprofiler-sdk_docs_memory_copy_trace.csv"))
    assert set(copies["copy_kind"]) <= {"HtoD", "DtoH", "DtoD"}
    assert len(t.attrs["joined"]) == 3


def test_v3_copy_trace_alone():
    raw = rows(V3 / "rocprofiler-sdk_docs_memory_copy_trace.csv")
    t = rocprof.parse(V3 / "rocprofiler-sdk_docs_memory_copy_trace.csv")
    assert (t["kind"] == "memcpy").all() and len(t) == len(raw)
    assert t["copy_kind"].tolist() == [
        {"MEMORY_COPY_HOST_TO_DEVICE": "HtoD", "MEMORY_COPY_DEVICE_TO_HOST": "DtoH"}[r["Direction"]]
        for r in sorted(raw, key=lambda r: int(r["Start_Timestamp"]))
    ]


def test_legacy_results_csv():
    path = LEGACY / "HPCTrainingExamples_finite-difference_results.TRUNCATED.csv"
    raw = rows(path)
    t = rocprof.parse(path, arch="gfx90a")
    assert len(t) == len(raw)
    assert t["duration_ns"].tolist() == [int(r["DurationNs"]) for r in raw]  # EndNs - BeginNs == DurationNs
    assert t["kernel"].str.contains(r"\[clone .kd\]").any()  # kept as written
    assert not t["kernel_norm"].str.contains(r"\[clone").any()  # the key other profilers' names meet
    assert t["registers_per_thread"].tolist() == [int(r["arch_vgpr"]) for r in raw]
    assert t["queue_ns"].tolist() == [int(r["BeginNs"]) - int(r["DispatchNs"]) for r in raw]
    assert t["occupancy_theoretical_pct"].notna().all()


def test_legacy_unquoted_kernel_names_with_commas(tmp_path):
    """Old rocprof versions wrote names unquoted; rebuild such a file from the real one."""
    path = LEGACY / "HPCTrainingExamples_finite-difference_results.TRUNCATED.csv"
    lines = path.read_text().splitlines()
    unquoted = [lines[0]] + [ln.replace('"', "") for ln in lines[1:]]
    bad = tmp_path / "results.csv"
    bad.write_text("\n".join(unquoted) + "\n")
    assert rocprof.parse(bad)["kernel"].tolist() == rocprof.parse(path)["kernel"].tolist()


def test_legacy_stats_and_copy_stats():
    stats = rocprof.parse(LEGACY / "HPCTrainingExamples_finite-difference_results.stats.csv")
    raw = rows(LEGACY / "HPCTrainingExamples_finite-difference_results.stats.csv")
    assert stats["count"].tolist() == [int(r["Calls"]) for r in raw]
    assert stats["start_ns"].isna().all() and (stats["kind"] == "kernel").all()
    copies = rocprof.parse(LEGACY / "rocm-blogs_HIP_trace_results.copy_stats.csv")
    assert (copies["kind"] == "memcpy").all() and set(copies["copy_kind"]) == {"HtoD", "DtoH"}
    one = rocprof.parse(LEGACY / "rocm-blogs_HIP_trace_results.stats.csv")
    assert one["kernel"].tolist() == [r["Name"] for r in rows(LEGACY / "rocm-blogs_HIP_trace_results.stats.csv")]


def test_legacy_json_links_launches_by_flow_events():
    path = LEGACY / "HIP_Programming_MI300A_vec_add_results.json"
    t = rocprof.parse(path)
    data = json.loads(path.read_text())
    gpu_events = [e for e in data["traceEvents"] if e.get("ph") == "X" and "dev-id" in (e.get("args") or {})]
    assert len(t) == len(gpu_events)
    k = t[t["kind"] == "kernel"].iloc[0]
    assert k["api_name"] == "hipLaunchKernel" and k["launch_latency_ns"] > 0
    assert (k["grid_x"], k["block_x"]) == (3906250, 256)  # from the hipLaunchKernel arguments
    assert t.attrs["arch"] == "gfx942"  # read from otherData (rocminfo), an MI300A
    assert set(t.loc[t["kind"] == "memcpy", "copy_kind"]) == {"HtoD", "DtoH"}


@pytest.mark.parametrize(
    "name,match",
    [
        ("rocprofiler-sdk_docs_hip_api_stats.csv", "host HIP/HSA API"),
        ("rocprofiler-sdk_docs_hip_runtime_trace.csv", "host API/marker trace"),
    ],
)
def test_host_api_files_are_refused_with_a_pointer(name, match):
    with pytest.raises(TraceFormatError, match=match):
        rocprof.parse(V3 / name)
    with pytest.raises(TraceFormatError, match="host HIP/HSA API"):
        rocprof.parse(LEGACY / "rocm-blogs_HIP_trace_results.hip_stats.csv")


def test_every_fixture_is_sniffed_as_rocprof():
    for path in [*V3.glob("*.csv"), *LEGACY.glob("*.csv"), *LEGACY.glob("*.json")]:
        if "hip_" in path.name:
            continue
        assert (parse_trace(path)["source"] == "rocprof").all(), path


def test_amd_occupancy_limits():
    lim = amd_limits("gfx942")
    full = amd_occupancy(256, 32, 0, 32, 0, lim)
    assert full.occupancy_pct == 100 and full.limiter == "waves"
    # 128 VGPRs: 512/128 = 4 waves per SIMD of 8 -> half occupancy, limited by VGPRs
    half = amd_occupancy(256, 128, 0, 32, 0, lim)
    assert half.occupancy_pct == 50 and half.limiter == "vgprs"
    # AGPRs count in the same file: 64 arch + 64 accum = 128
    assert amd_occupancy(256, 64, 64, 32, 0, lim).occupancy_pct == 50
    # 32 KiB of LDS per workgroup: 2 workgroups of 4 waves = 8 of 32 waves per CU
    lds = amd_occupancy(256, 32, 0, 32, 32768, lim)
    assert lds.limiter == "lds" and lds.occupancy_pct == 25
    with pytest.raises(ValueError, match="gfx1100"):
        amd_limits("gfx1100")


def test_capture_commands(tmp_path):
    child = ["python", "-m", "kprof.replay", "spec.json"]
    v3 = rocprof.rocprofv3_command("/opt/rocm/bin/rocprofv3", child, tmp_path)
    for flag in ("--kernel-trace", "--hip-trace", "--marker-trace", "--memory-copy-trace"):
        assert flag in v3
    assert v3[v3.index("--output-format") + 1] == "csv"  # ROCm 7 writes a rocpd database unless told
    assert v3[v3.index("--") + 1 :] == child
    legacy = rocprof.rocprof_legacy_command("/opt/rocm/bin/rocprof", child, tmp_path / "results.csv")
    assert "--roctx-trace" in legacy and legacy[legacy.index("-o") + 1].endswith("results.csv")
    assert legacy[-len(child) :] == child


def test_arch_from_an_agent_info_file_next_to_the_trace(tmp_path):
    name = "rocprofiler-sdk_docs_kernel_trace_v2_LDS_VGPR_columns_agent_relative.csv"
    shutil.copy(V3 / name, tmp_path / "run_kernel_trace.csv")
    (tmp_path / "run_agent_info.csv").write_text(
        '"Node_Id","Agent_Type","Name"\n0,"CPU","AMD EPYC"\n4,"GPU","gfx90a:sramecc+:xnack-"\n'
    )
    t = rocprof.parse(tmp_path / "run_kernel_trace.csv")
    assert t.attrs["arch"] == "gfx90a" and t["occupancy_theoretical_pct"].notna().all()
