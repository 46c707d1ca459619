"""Traces as users have them: older format versions, compressed, with BOMs, from other runs, with odd numbers.

Every input is a real profiler output from tests/data or a file derived from one the way the older tool
version (or the user's shell) would have written it; expectations are recomputed from the source files.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest

from kprof import launch_table
from kprof.analysis import compare_profilers, kernel_summary
from kprof.errors import LaunchTableError, TraceFormatError
from kprof.names import normalize
from kprof.profilers import parse_trace
from tests.conftest import DATA

V3 = DATA / "rocprof" / "rocprofv3"
LEGACY = DATA / "rocprof" / "rocprof_legacy"
KINETO = DATA / "kineto_rmsnorm_h100_small.json.gz"


def kineto_events() -> dict:
    with gzip.open(KINETO, "rt") as fh:
        return json.load(fh)


def write_json(path: Path, data: dict, gz: bool = False) -> Path:
    raw = json.dumps(data).encode()
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def dict_rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def write_rows(path: Path, records: list[dict], header: list[str] | None = None) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header or list(records[0]), quoting=csv.QUOTE_NONNUMERIC)
        w.writeheader()
        w.writerows(records)
    return path


# ------------------------------------------------------------------------------------------- formats
def test_gzip_of_every_format_parses_like_the_plain_file(tmp_path, data_file):
    """gzip is recognised by its magic bytes, whatever the file is called."""
    plain = [
        data_file(n)
        for n in (
            "nsys_rmsnorm.sqlite",
            "nsys_rmsnorm_cuda_gpu_trace.csv",
            "ncu_rmsnorm_raw.csv",
            "proton_rmsnorm_tree.hatchet",
            "proton_rmsnorm_trace.chrome_trace",
        )
    ]
    plain += [
        V3 / "rocprofiler-sdk_docs_kernel_trace_v2_LDS_VGPR_columns_agent_relative.csv",
        LEGACY / "HIP_Programming_MI300A_vec_add_results.json",
        LEGACY / "HPCTrainingExamples_finite-difference_results.stats.csv",
    ]
    for i, p in enumerate(plain):
        packed = tmp_path / f"g{i}" / (p.name + ".gz")
        packed.parent.mkdir()
        packed.write_bytes(gzip.compress(p.read_bytes()))
        a, b = parse_trace(p), parse_trace(packed)
        assert a.attrs["format"] == b.attrs["format"], p.name
        pd.testing.assert_frame_equal(a, b, obj=p.name)
    kineto = parse_trace(KINETO)
    assert kineto.attrs["format"] == "torch" and len(kineto) > 0


def test_bom_crlf_and_utf16_are_read(tmp_path):
    src = V3 / "rocprofiler-sdk_docs_kernel_trace_v2_LDS_VGPR_columns_agent_relative.csv"
    text = src.read_text()
    base = parse_trace(src)
    variants = {
        "bom.csv": ("\ufeff" + text).encode("utf-8"),
        "crlf.csv": text.replace("\n", "\r\n").encode("utf-8"),
        "utf16.csv": text.encode("utf-16"),
    }  # PowerShell's `>` writes UTF-16 with a BOM
    for name, raw in variants.items():
        (tmp_path / name).write_bytes(raw)
        pd.testing.assert_frame_equal(parse_trace(tmp_path / name), base, obj=name)


def test_gzipped_proton_trace_is_proton_not_torch(tmp_path, data_file):
    out = tmp_path / "proton.json.gz"  # named like a Kineto trace
    out.write_bytes(gzip.compress(data_file("proton_rmsnorm_trace.chrome_trace").read_bytes()))
    t = parse_trace(out)
    assert (t["source"] == "proton").all() and t.attrs["format"] == "proton"


# ------------------------------------------------------------------------------------ torch.profiler
def _old_kineto(data: dict) -> dict:
    """What PyTorch 1.8-1.9 wrote: capitalised categories, one ``Runtime`` category for launch calls."""
    rename = {
        "kernel": "Kernel",
        "cuda_runtime": "Runtime",
        "cuda_driver": "Runtime",
        "gpu_memcpy": "Memcpy",
        "gpu_memset": "Memset",
        "cpu_op": "Operator",
    }
    out = dict(data)
    out["traceEvents"] = [
        dict(e, cat=rename.get(e.get("cat"), e.get("cat"))) if isinstance(e, dict) else e for e in data["traceEvents"]
    ]
    return out


def test_old_kineto_categories_parse_like_new_ones(tmp_path):
    data = kineto_events()
    new = parse_trace(KINETO)
    old = parse_trace(write_json(tmp_path / "old.json", _old_kineto(data)))
    assert len(launch_table.kernels(old)) == sum(1 for e in data["traceEvents"] if e.get("cat") == "kernel") > 0
    pd.testing.assert_frame_equal(old, new)  # same kernels, launch calls, cases and syncs


def test_torch_rows_have_kind_count_and_syncs_like_nsys():
    data = kineto_events()
    t = parse_trace(KINETO)
    assert t["kind"].notna().all() and (t["count"] == 1).all()
    syncs = [e for e in data["traceEvents"] if e.get("cat") == "cuda_runtime" and "Synchronize" in e["name"]]
    got = t[t["kind"] == "sync"]
    assert len(got) == len(syncs) > 0 and (got["api_name"] == "cudaDeviceSynchronize").all()
    assert (got["start_ns"] == got["api_start_ns"]).all()  # a host call: host times


def test_torch_copies_memsets_and_fillbuffer(tmp_path):
    """Kineto's copy events (CUDA spelling) and ROCm's FillBuffer, added next to a real launch call."""
    data = kineto_events()
    events = data["traceEvents"]
    call = next(e for e in events if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel")
    base = dict(ph="X", pid=0, tid=7, dur=1.5)
    extra = [
        dict(
            base,
            cat="gpu_memcpy",
            name="Memcpy HtoD (Pageable -> Device)",
            ts=call["ts"] + 3,
            args={"device": 0, "stream": 7, "correlation": 990001, "bytes": 4096},
        ),
        dict(
            base,
            cat="gpu_memset",
            name="Memset (Device)",
            ts=call["ts"] + 6,
            args={"device": 0, "stream": 7, "correlation": 990002, "bytes": 512},
        ),
        dict(
            base,
            cat="gpu_memcpy",
            name="FillBuffer",
            ts=call["ts"] + 9,  # ROCm: a fill shows as a copy
            args={"device": 0, "stream": 7, "correlation": 990003, "bytes": 256},
        ),
    ]
    data["traceEvents"] = events + extra
    t = parse_trace(write_json(tmp_path / "copies.json", data))
    copy = t[t["kind"] == "memcpy"]
    sets = t[t["kind"] == "memset"].sort_values("start_ns")
    assert copy["copy_kind"].tolist() == ["HtoD"] and copy["bytes"].tolist() == [4096]
    assert sets["kernel"].tolist() == ["Memset (Device)", "FillBuffer"] and sets["bytes"].tolist() == [512, 256]


# ----------------------------------------------------------------------------------------------- nsys
def _nsys_kern_sum(data_file) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(data_file("nsys_rmsnorm_cuda_gpu_kern_sum.csv").read_text().splitlines()))
    return rows[0], rows[1:]


def test_old_nsys_report_names_and_headers(tmp_path, data_file):
    """nsys 2021-2022 called the report gpukernsum and its columns Time(%) / Average / Minimum ..."""
    header, body = _nsys_kern_sum(data_file)
    old = {
        "Time (%)": "Time(%)",
        "Avg (ns)": "Average",
        "Min (ns)": "Minimum",
        "Max (ns)": "Maximum",
        "StdDev (ns)": "StdDev",
    }
    keep = [i for i, h in enumerate(header) if h != "Med (ns)"]  # no median column then
    out = tmp_path / "report_gpukernsum.csv"
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([old.get(header[i], header[i]) for i in keep])
        w.writerows([[r[i] for i in keep] for r in body])
    new = parse_trace(data_file("nsys_rmsnorm_cuda_gpu_kern_sum.csv"))
    got = parse_trace(out)
    pd.testing.assert_frame_equal(got, new)
    assert got.attrs["summary"] and (got["count"] > 0).all() and got["start_ns"].isna().all()


def _columns_text(header: list[str], body: list[list[str]]) -> str:
    """A table the way `nsys stats` prints it to the terminal: right-aligned numbers, dashes under names."""
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    lines = [
        "  ".join(h.center(w) if i < len(header) - 1 else h for i, (h, w) in enumerate(zip(header, widths))),
        "  ".join("-" * w if i < len(header) - 1 else "-" * len(header[-1]) for i, w in enumerate(widths)),
    ]
    for r in body:
        lines.append("  ".join(c.rjust(w) if i < len(header) - 1 else c for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def test_nsys_stats_saved_from_stdout(tmp_path, data_file):
    """`nsys stats report.nsys-rep > stats.txt`: a processing line, titles, column tables (numbers with
    thousands separators); and the same with `--format csv` to stdout."""
    header, body = _nsys_kern_sum(data_file)
    grouped = [
        [
            f"{int(float(c)):,}" if h in ("Total Time (ns)", "Instances", "Min (ns)", "Max (ns)") else c
            for h, c in zip(header, r)
        ]
        for r in body
    ]
    text = (
        "Generating SQLite file report.sqlite from report.nsys-rep\n"
        "Processing [report.sqlite] with [/opt/nvidia/nsight-systems/2023.4.1/host-linux-x64/reports/"
        "cuda_api_sum.py]... \n\n ** CUDA API Summary (cuda_api_sum):\n\n"
        + _columns_text(["Time (%)", "Total Time (ns)", "Num Calls", "Name"], [["100.0", "1,234", "3", "cudaFree"]])
        + "\n\nProcessing [report.sqlite] with [/opt/nvidia/nsight-systems/2023.4.1/host-linux-x64/reports/"
        "cuda_gpu_kern_sum.py]... \n\n ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\n"
        + _columns_text(header, grouped)
        + "\n\n"
    )
    (tmp_path / "stats.txt").write_text(text)
    want = parse_trace(data_file("nsys_rmsnorm_cuda_gpu_kern_sum.csv"))
    got = parse_trace(tmp_path / "stats.txt")
    pd.testing.assert_frame_equal(got[["kernel", "count", "duration_ns"]], want[["kernel", "count", "duration_ns"]])
    assert any("cuda_api_sum" in w for w in got.attrs["warnings"])  # the other report is named, not used
    csv_text = (
        " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\n"
        + data_file("nsys_rmsnorm_cuda_gpu_kern_sum.csv").read_text()
        + "\n"
    )
    (tmp_path / "stats_csv.txt").write_text(csv_text)
    pd.testing.assert_frame_equal(parse_trace(tmp_path / "stats_csv.txt"), want)


def test_nsys_api_summary_is_refused(tmp_path):
    (tmp_path / "api.csv").write_text("Time (%),Total Time (ns),Num Calls,Avg (ns),Name\n90.0,100,2,50.0,cudaMalloc\n")
    with pytest.raises(TraceFormatError, match="host CUDA API calls, not GPU work"):
        parse_trace(tmp_path / "api.csv")


def test_nsys_null_and_text_timestamps_are_errors(tmp_path, data_file):
    for value, match in (("NULL", "have no start"), ("'soon'", "not a usable whole number")):
        out = tmp_path / f"n{len(value)}.sqlite"
        shutil.copy(data_file("nsys_rmsnorm.sqlite"), out)
        con = sqlite3.connect(out)
        # the same table without its NOT NULL constraints (as an export of a cut capture can have it)
        con.execute("CREATE TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL")
        con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
        con.execute("ALTER TABLE k RENAME TO CUPTI_ACTIVITY_KIND_KERNEL")
        con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = {value} WHERE rowid = 3")
        con.commit()
        con.close()
        with pytest.raises(TraceFormatError, match=match):
            parse_trace(out)


# ------------------------------------------------------------------------------------------------ ncu
def _details_page(raw_path: Path) -> str:
    """The raw page re-written as `ncu --csv` writes its default details page: one row per metric."""
    lines = raw_path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    header, units, body = rows[0], rows[1], rows[2:]
    ix = {h: i for i, h in enumerate(header)}
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    w.writerow(
        [
            "ID",
            "Process ID",
            "Process Name",
            "Host Name",
            "Kernel Name",
            "Context",
            "Stream",
            "Block Size",
            "Grid Size",
            "Device",
            "CC",
            "Section Name",
            "Metric Name",
            "Metric Unit",
            "Metric Value",
        ]
    )
    metrics = [
        ("GPU Speed Of Light Throughput", "Duration", "gpu__time_duration.sum"),
        ("Launch Statistics", "Registers Per Thread", "launch__registers_per_thread"),
        ("Occupancy", "Achieved Occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ]
    for r in body:
        for section, name, raw_name in metrics:
            unit = units[ix[raw_name]]
            value = r[ix[raw_name]]
            if name == "Duration":  # the details page prints microseconds
                unit, value = "usecond", f"{float(value.replace(',', '')) / 1000:.6f}"
            w.writerow(
                [
                    r[ix["ID"]],
                    r[ix["Process ID"]],
                    r[ix["Process Name"]],
                    r[ix["Host Name"]],
                    r[ix["Kernel Name"]],
                    r[ix["Context"]],
                    r[ix["Stream"]],
                    r[ix["Block Size"]],
                    r[ix["Grid Size"]],
                    r[ix["Device"]],
                    r[ix["CC"]],
                    section,
                    name,
                    unit,
                    value,
                ]
            )
    return out.getvalue()


def test_ncu_details_page_gives_per_launch_durations(tmp_path, data_file):
    raw = data_file("ncu_rmsnorm_raw.csv")
    (tmp_path / "details.csv").write_text(_details_page(raw))
    want = parse_trace(raw)
    got = parse_trace(tmp_path / "details.csv")
    assert got.attrs.get("page") == "details" and len(got) == len(want)
    assert (abs(got["duration_ns"] - want["duration_ns"]) <= 1).all()
    assert got["registers_per_thread"].tolist() == want["registers_per_thread"].tolist()
    assert got["grid_x"].tolist() == want["grid_x"].tolist()
    no_time = [ln for ln in _details_page(raw).splitlines() if '"Duration"' not in ln]
    (tmp_path / "no_time.csv").write_text("\n".join(no_time) + "\n")
    with pytest.raises(TraceFormatError, match=r"--page raw"):
        parse_trace(tmp_path / "no_time.csv")


# -------------------------------------------------------------------------------------------- rocprof
def _counter_collection(tmp_path: Path, counters: tuple[str, ...] = ("SQ_WAVES", "GRBM_GUI_ACTIVE")) -> Path:
    """rocprofv3 --pmc output, with the column set of the rocprofiler-sdk documentation, made from the real
    kernel trace: one row per counter per dispatch (Grid_Size / Workgroup_Size are totals there)."""
    k = dict_rows(V3 / "rocprofiler-sdk_docs_kernel_trace_v2_LDS_VGPR_columns_agent_relative.csv")
    header = [
        "Correlation_Id",
        "Dispatch_Id",
        "Agent_Id",
        "Queue_Id",
        "Process_Id",
        "Thread_Id",
        "Grid_Size",
        "Kernel_Id",
        "Kernel_Name",
        "Workgroup_Size",
        "LDS_Block_Size",
        "Scratch_Size",
        "VGPR_Count",
        "Accum_VGPR_Count",
        "SGPR_Count",
        "Counter_Name",
        "Counter_Value",
        "Start_Timestamp",
        "End_Timestamp",
    ]
    out = []
    for r in k:
        grid = int(r["Grid_Size_X"]) * int(r["Grid_Size_Y"]) * int(r["Grid_Size_Z"])
        for j, name in enumerate(counters):
            out.append(
                {
                    "Correlation_Id": r["Correlation_Id"],
                    "Dispatch_Id": r["Dispatch_Id"],
                    "Agent_Id": r["Agent_Id"],
                    "Queue_Id": r["Queue_Id"],
                    "Process_Id": "225049",
                    "Thread_Id": r["Thread_Id"],
                    "Grid_Size": grid,
                    "Kernel_Id": r["Kernel_Id"],
                    "Kernel_Name": r["Kernel_Name"],
                    "Workgroup_Size": r["Workgroup_Size_X"],
                    "LDS_Block_Size": r["LDS_Block_Size"],
                    "Scratch_Size": r["Scratch_Size"],
                    "VGPR_Count": r["VGPR_Count"],
                    "Accum_VGPR_Count": r["Accum_VGPR_Count"],
                    "SGPR_Count": r["SGPR_Count"],
                    "Counter_Name": name,
                    "Counter_Value": f"{grid / 64 * (j + 1):.6f}",
                    "Start_Timestamp": r["Start_Timestamp"],
                    "End_Timestamp": r["End_Timestamp"],
                }
            )
    (tmp_path / "pass_1").mkdir(exist_ok=True)
    return write_rows(tmp_path / "pass_1" / "312_counter_collection.csv", out, header)


def test_rocprofv3_counter_collection_is_one_launch_per_dispatch(tmp_path):
    path = _counter_collection(tmp_path)
    k = dict_rows(V3 / "rocprofiler-sdk_docs_kernel_trace_v2_LDS_VGPR_columns_agent_relative.csv")
    t = parse_trace(path)
    assert len(t) == len(k)  # not counters x dispatches
    by_id = {int(r["Correlation_Id"]): r for r in k}
    for row in t.itertuples():
        r = by_id[row.correlation_id]
        grid = int(r["Grid_Size_X"]) * int(r["Grid_Size_Y"]) * int(r["Grid_Size_Z"])
        assert row.duration_ns == int(r["End_Timestamp"]) - int(r["Start_Timestamp"])
        assert row.block_x == int(r["Workgroup_Size_X"]) and row.grid_x == -(-grid // int(r["Workgroup_Size_X"]))
        assert row.pid == 225049 and row.tid == int(r["Thread_Id"])
        assert json.loads(row.counters) == {"GRBM_GUI_ACTIVE": grid / 64 * 2, "SQ_WAVES": grid / 64}
    assert any("pivoted" in w for w in t.attrs["warnings"])


def test_api_and_domain_statistics_never_become_kernels(tmp_path):
    with pytest.raises(TraceFormatError, match="host HIP/HSA API"):
        parse_trace(V3 / "rocprofiler-sdk_docs_hip_api_stats.csv")
    rows = dict_rows(V3 / "rocprofiler-sdk_docs_hip_api_stats.csv")[:3]
    for r, domain in zip(rows, ("HIP_RUNTIME_API", "KERNEL_DISPATCH", "MEMORY_COPY")):
        r["Name"] = domain
    write_rows(tmp_path / "run_domain_stats.csv", rows)
    with pytest.raises(TraceFormatError, match="tracing domains"):
        parse_trace(tmp_path / "run_domain_stats.csv")


def test_unknown_command_type_rows_are_left_out_with_a_warning(tmp_path):
    path = LEGACY / "HPCTrainingExamples_finite-difference_results.stats.csv"
    rows = dict_rows(path)
    bad = dict(rows[0], Name="Unknown command type")
    write_rows(tmp_path / "results.stats.csv", rows + [bad])
    t = parse_trace(tmp_path / "results.stats.csv")
    assert t["kernel"].tolist() == [r["Name"] for r in rows]
    assert any("Unknown command type" in w for w in t.attrs["warnings"])


def test_legacy_stats_with_unquoted_names_containing_commas(tmp_path):
    path = LEGACY / "HPCTrainingExamples_finite-difference_results.stats.csv"
    lines = path.read_text().splitlines()
    (tmp_path / "results.stats.csv").write_text(
        "\n".join([lines[0]] + [ln.replace('"', "") for ln in lines[1:]]) + "\n"
    )
    got, want = parse_trace(tmp_path / "results.stats.csv"), parse_trace(path)
    assert any("," in k for k in want["kernel"])  # the names do hold commas
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs["summary"] and (got["count"] >= 1).all()


@pytest.mark.parametrize(
    "value,match",
    [
        ("1.5e300", "too large"),
        ("Infinity", "not a number"),
        ("NaN", "not a number"),
        ("12 ms", "not a number"),
        ("2.41e+15", "is not a kernel time"),
    ],
)
def test_numbers_are_whole_or_refused(tmp_path, value, match):
    """Where the old parser kept the first digits (1.5e300 -> 1), a number is read whole or refused."""
    path = LEGACY / "HPCTrainingExamples_finite-difference_results.TRUNCATED.csv"
    rows = dict_rows(path)
    rows[2]["EndNs"] = value
    write_rows(tmp_path / "results.csv", rows)
    with pytest.raises(TraceFormatError, match=match):
        parse_trace(tmp_path / "results.csv")


def test_grouped_thousands_and_exponents_are_whole_numbers(tmp_path):
    path = LEGACY / "HPCTrainingExamples_finite-difference_results.stats.csv"
    rows = dict_rows(path)
    rows[0]["TotalDurationNs"] = f"{int(rows[0]['TotalDurationNs']):,}"  # "1,915,000" style
    rows[1]["TotalDurationNs"] = f"{int(rows[1]['TotalDurationNs']):.6e}"
    write_rows(tmp_path / "results.stats.csv", rows)
    t = parse_trace(tmp_path / "results.stats.csv")
    raw = dict_rows(path)
    assert t.loc[0, "duration_ns"] == round(int(raw[0]["TotalDurationNs"]) / int(raw[0]["Calls"]))
    assert (
        abs(t.loc[1, "duration_ns"] - int(raw[1]["TotalDurationNs"]) / int(raw[1]["Calls"]))
        <= int(raw[1]["TotalDurationNs"]) * 1e-6
    )


def test_sibling_of_another_run_is_not_joined(tmp_path):
    """The fixtures share a name prefix but come from different runs: no launch call is invented."""
    for p in V3.glob("*.csv"):
        shutil.copy(p, tmp_path / p.name)
    t = parse_trace(tmp_path / "rocprofiler-sdk_docs_kernel_trace.csv")
    k = launch_table.kernels(t)
    assert k["api_name"].isna().all() and k["launch_latency_ns"].isna().all()
    assert any("0 of" in w and "hip_runtime_trace" in w for w in t.attrs["warnings"])


def test_api_rows_join_only_when_consistent(tmp_path):
    """A correlation id that names hipMalloc, or a call on another thread, is not the kernel's launch."""
    kern = dict_rows(V3 / "rocprofiler-sdk_docs_kernel_trace.csv")
    api = dict_rows(V3 / "rocprofiler-sdk_docs_hip_runtime_trace.csv")
    malloc = next(a for a in api if a["Function"] == "hipMalloc")
    launch = next(a for a in api if a["Function"] == "hipLaunchKernel")
    k0, k1, k2 = kern[0], kern[1], kern[2]
    t0, t1, t2 = (int(k["Start_Timestamp"]) for k in (k0, k1, k2))
    calls = [
        dict(malloc, Correlation_Id="1", Thread_Id=k0["Thread_Id"], Start_Timestamp=t0 - 900, End_Timestamp=t0 - 800),
        dict(launch, Correlation_Id="2", Thread_Id="1", Start_Timestamp=t1 - 900, End_Timestamp=t1 - 800),
        dict(launch, Correlation_Id="3", Thread_Id=k2["Thread_Id"], Start_Timestamp=t2 - 900, End_Timestamp=t2 - 800),
    ]
    kern = [dict(k0, Correlation_Id="1"), dict(k1, Correlation_Id="2"), dict(k2, Correlation_Id="3")]
    write_rows(tmp_path / "r_kernel_trace.csv", kern)
    write_rows(tmp_path / "r_hip_api_trace.csv", calls)
    t = parse_trace(tmp_path / "r_kernel_trace.csv").set_index("correlation_id")
    assert pd.isna(t.loc[1, "api_name"]) and pd.isna(t.loc[2, "api_name"])
    assert t.loc[3, "api_name"] == "hipLaunchKernel" and t.loc[3, "launch_latency_ns"] == 900
    assert any("1 of 3" in w and "2 correlation ids" in w for w in t.attrs["warnings"])


def test_a_launch_latency_longer_than_the_trace_is_an_error(data_file):
    t = parse_trace(data_file("nsys_rmsnorm.sqlite"))
    k = launch_table.kernels(t).copy()
    k.loc[k.index[0], "launch_latency_ns"] = 4 * 86_400 * 10**9  # the 4-day latency of a wrong join
    with pytest.raises(LaunchTableError, match="longer than the trace"):
        launch_table.validate(k)
    k.loc[k.index[0], "launch_latency_ns"] = -5 * 10**6
    with pytest.raises(LaunchTableError, match="negative"):
        launch_table.validate(k)


def test_rocpd_database_is_refused_with_the_csv_command(tmp_path):
    out = tmp_path / "results.db"
    con = sqlite3.connect(out)
    con.execute("CREATE TABLE rocpd_kernel_dispatch (id INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="--output-format csv"):
        parse_trace(out)


# ------------------------------------------------------------------------------------- Proton, names
def test_proton_scope_path_keeps_one_kernel_under_two_scopes_apart(tmp_path, data_file):
    tree = json.loads(data_file("proton_rmsnorm_tree.hatchet").read_text())
    root = tree[0]
    kernel = next(c for c in root["children"] if "device_id" in c.get("metrics", {}))
    for scope in ("shape=64x4096", "shape=1000x333"):  # the same kernel under two user scopes
        root["children"].append(
            {"frame": {"name": scope, "type": "function"}, "metrics": {}, "children": [json.loads(json.dumps(kernel))]}
        )
    (tmp_path / "two.hatchet").write_text(json.dumps(tree))
    t = parse_trace(tmp_path / "two.hatchet")
    same = t[t["kernel"] == kernel["frame"]["name"]]
    assert {"shape=1000x333", "shape=64x4096"} <= set(same["scope"].dropna())
    summary = kernel_summary(t)
    assert (summary["kernel"] == kernel["frame"]["name"]).sum() == len(same) >= 3  # not merged into one row
    assert t.attrs["summary"] and (t["count"] >= 1).all()


def test_names_normalised_the_same_across_profilers(data_file):
    """Proton keeps mangled symbols, nsys demangles with NVIDIA's demangler: kernel_norm meets."""
    proton = parse_trace(data_file("proton_rmsnorm_tree.hatchet"))
    nsys = launch_table.kernels(parse_trace(data_file("nsys_rmsnorm.sqlite")))
    assert proton["kernel"].str.startswith("_Z").any()
    assert set(proton["kernel_norm"]) == set(nsys["kernel_norm"])
    both = compare_profilers({"nsys": nsys, "proton": parse_trace(data_file("proton_rmsnorm_trace.chrome_trace"))})
    assert (both["match"] == "name").all()
    amd = "void test_function_kernel<double>(double*, int, int, int, double, double, double)"
    assert normalize(amd + " [clone .kd]") == normalize(amd) == normalize("_Z20test_function_kernelIdEvPdiiiddd.kd")


# ---------------------------------------------------------------------------------------- CLI output
def run_cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    from kprof import cli

    monkeypatch.setattr(sys, "argv", ["kprof", *args])
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_kernel_names_are_data_on_the_terminal_and_in_csv(tmp_path, monkeypatch, capsys):
    data = kineto_events()
    names = ["kern[/]", "[lambda() (instance 1)]", "evil\x1b[2J\x1b]0;pwned\x07", '=HYPERLINK("http://x")']
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    for e, n in zip(kernels, names):
        e["name"] = n
    path = write_json(tmp_path / "names.json", data)
    code, out, err = run_cli(monkeypatch, capsys, "parse", str(path))
    assert code == 0, err
    assert "kern[/]" in out and "[lambda() (instance 1)]" in out
    assert "\x1b" not in out and "\\x1b[2J" in out
    code, _, err = run_cli(monkeypatch, capsys, "parse", str(path), "--csv", str(tmp_path / "t.csv"))
    cells = pd.read_csv(tmp_path / "t.csv")["kernel"].tolist()
    assert '\'=HYPERLINK("http://x")' in cells and '=HYPERLINK("http://x")' not in cells


def test_one_error_line_and_exit_2(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k[/]", "ts": "soon", "dur": 1}]}')
    code, out, err = run_cli(monkeypatch, capsys, "parse", str(bad))
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"kprof: {bad}: ")
    assert "Traceback" not in err + out


def test_zero_rows_warn_on_stderr(tmp_path, monkeypatch, capsys):
    data = kineto_events()
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("cat") not in ("kernel", "cuda_runtime")]
    path = write_json(tmp_path / "idle.json", data)
    assert any("0 rows" in w for w in parse_trace(path).attrs["warnings"])
    code, _, err = run_cli(monkeypatch, capsys, "parse", str(path))
    assert code == 0 and "0 rows" in err


def test_huge_field_deep_nesting_and_header_only(tmp_path):
    rows = dict_rows(V3 / "rocprofiler-sdk_docs_kernel_trace.csv")
    write_rows(tmp_path / "a_kernel_trace.csv", [dict(rows[0], Kernel_Name="k" * 200_000)])
    with pytest.raises(TraceFormatError, match="128 KiB"):
        parse_trace(tmp_path / "a_kernel_trace.csv")
    (tmp_path / "deep.json").write_text('{"traceEvents": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(TraceFormatError, match="nested deeper"):
        parse_trace(tmp_path / "deep.json")
    header = (V3 / "rocprofiler-sdk_docs_kernel_trace.csv").read_text().splitlines()[0]
    (tmp_path / "b_kernel_trace.csv").write_text(header + "\n")
    t = parse_trace(tmp_path / "b_kernel_trace.csv")
    assert t.empty and any("0 rows" in w for w in t.attrs["warnings"])
