from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kprof import launch_table
from kprof.harness import CaseResult, Correctness
from kprof.metrics import (
    METRIC_COLUMNS,
    achieved,
    busy_ns,
    case_row,
    idle_launch_latency,
    launch_metrics,
    metrics_table,
    summarize_samples,
)
from kprof.occupancy import DeviceLimits, theoretical_occupancy
from kprof.profilers import torch_profiler
from kprof.registry import Case

TRACE = Path(__file__).parent.parent / "data" / "kineto_rmsnorm_h100_small.json.gz"


def test_summarize_samples_hand_checked():
    s = summarize_samples([0.001, 0.002, 0.003, 0.004, 0.005])  # ms
    assert s["gpu_time_us"] == pytest.approx(3.0)
    assert s["p20_us"] == pytest.approx(1.8) and s["p80_us"] == pytest.approx(4.2)
    assert s["noise"] == pytest.approx((4.0 - 2.0) / 3.0)
    assert s["n_samples"] == 5
    assert math.isnan(summarize_samples([])["gpu_time_us"])


def test_bandwidth_and_flops_arithmetic():
    # 268,443,648 bytes (16384x4096 bf16 rmsnorm) in 94.0 us -> 2855.8 GB/s; 95.2% of 3000 GB/s
    a = achieved(268_443_648, 4 * 16384 * 4096, 94.0, 3000.0)
    assert a["gbps"] == pytest.approx(268_443_648 / 94.0e-6 / 1e9)
    assert a["pct_peak_bw"] == pytest.approx(100 * a["gbps"] / 3000.0)
    assert a["tflops"] == pytest.approx(4 * 16384 * 4096 / 94.0e-6 / 1e12)
    assert math.isnan(achieved(1, 1, float("nan"), 1.0)["gbps"])
    assert math.isnan(achieved(1, 1, 1.0, None)["pct_peak_bw"])


def test_case_row_keeps_failed_cases_untimed():
    c = Case("rmsnorm", "p", (4, 4), "fp32")
    bad = CaseResult(c, "fail", "relative error 1e-1 above tolerance", Correctness(False, 0.1, 1.0, 0, 1e-5))
    row = case_row(bad, "triton", 3000.0)
    assert row["ok"] is False and "gpu_time_us" not in row
    table = metrics_table([row])
    assert list(table.columns) == list(METRIC_COLUMNS) and math.isnan(table.loc[0, "gpu_time_us"])


def test_idle_launch_latency_ignores_queued_launches():
    df = launch_table.validate(
        pd.DataFrame(
            {
                "kernel": ["a", "a", "a"],
                "start_ns": [1000, 3000, 9000],
                "end_ns": [2900, 5000, 9500],
                "duration_ns": [1900, 2000, 500],
                "api_start_ns": [100, 1100, 8000],
                "api_end_ns": [200, 1200, 8100],
                "launch_latency_ns": [900, 1900, 1000],
                "device": [0, 0, 0],
                "stream": [7, 7, 7],
                "source": ["t"] * 3,
            }
        )
    )
    # the second launch was issued while the first kernel still ran: it measures queueing
    assert list(idle_launch_latency(df)) == [900, 1000]


def test_busy_time_counts_overlapping_kernels_once():
    """Intervals out of order: [0, 10) and [4, 12) overlap (a PDL dependent), [12, 15) touches them,
    [20, 30) holds [22, 25) inside it, [40, 41) stands alone: 15 + 10 + 1 = 26 ns covered, 44 ns summed."""
    starts, ends = [20, 0, 12, 4, 40, 22], [30, 10, 15, 12, 41, 25]
    df = pd.DataFrame({"start_ns": starts, "end_ns": ends})
    assert busy_ns(df) == 26
    assert busy_ns(df.iloc[[1]]) == 10 and math.isnan(busy_ns(df.iloc[:0]))  # empty: NaN
    assert math.isnan(busy_ns(pd.DataFrame({"start_ns": [0, pd.NA], "end_ns": [5, pd.NA]}, dtype="Int64")))


def test_launch_metrics_on_a_real_trace():
    launches = torch_profiler.parse(TRACE)
    lm = launch_metrics(launches, calls_per_case=5, limits=DeviceLimits()).set_index("case")
    assert lm.loc["rmsnorm/triton_tuned/64x4096/bf16", "kernels_per_call"] == 1
    eager = launches[launches["case"] == "rmsnorm/torch_eager/64x4096/bf16"]
    assert lm.loc["rmsnorm/torch_eager/64x4096/bf16", "kernels_per_call"] == len(eager) / 5 > 1
    row = lm.loc["rmsnorm/triton_tuned/64x4096/bf16"]
    k = launches[launches["case"] == "rmsnorm/triton_tuned/64x4096/bf16"].iloc[0]
    expect = theoretical_occupancy(
        int(k.block_x * k.block_y * k.block_z), int(k.registers_per_thread), int(k.shared_mem_bytes), DeviceLimits()
    )
    assert row["occupancy_theoretical_pct"] == pytest.approx(expect.occupancy_pct)
    assert row["main_kernel"].startswith("_rmsnorm_rows_kernel")
    assert 0 < row["launch_latency_us"] < 1000 and 0 < row["api_time_us"] < 1000
    assert np.isfinite(lm["launch_latency_us"]).all()
    # one stream, kernels one after another: covered time is at most the summed time, never more
    assert (lm["prof_busy_us"] <= lm["prof_call_us"] + 1e-9).all() and (lm["prof_busy_us"] > 0).all()
    assert lm["waves"].isna().all()  # without the GPU's SM count there are no waves


def test_waves_are_the_main_kernels_blocks_over_what_the_gpu_holds_at_once():
    """On the real trace, with an H100's 132 SMs: each case's waves are its main kernel's grid over the blocks an SM
    holds (the calculator's occupancy) times 132, and scale inversely with the SM count."""
    launches = torch_profiler.parse(TRACE)
    lm = launch_metrics(launches, calls_per_case=5, limits=DeviceLimits(), sm_count=132).set_index("case")
    half = launch_metrics(launches, calls_per_case=5, limits=DeviceLimits(), sm_count=66).set_index("case")
    assert lm["waves"].notna().any()
    for case, row in lm.iterrows():
        k = launches[(launches["case"] == case) & (launches["kernel"] == row["main_kernel"])].iloc[0]
        occ = theoretical_occupancy(
            int(k.block_x * k.block_y * k.block_z), int(k.registers_per_thread), int(k.shared_mem_bytes)
        )
        grid = int(k.grid_x * k.grid_y * k.grid_z)
        assert row["waves"] == pytest.approx(grid / (occ.blocks_per_sm * 132)), case
        assert half.loc[case, "waves"] == pytest.approx(2 * row["waves"]), case


def test_launch_metrics_from_nsys_and_ncu_captures(data_file):
    """Per-case metrics from real H100 captures of the same 4-case replay (3 launches per case)."""
    import json

    from kprof import launch_table
    from kprof.kernels import discover
    from kprof.occupancy import DeviceLimits
    from kprof.profilers import ncu, nsys
    from tests.conftest import DATA

    spec = json.loads((DATA / "replay_spec_rmsnorm_4cases.json").read_text())
    fam = discover()["rmsnorm"]
    model = {c["id"]: fam.bytes_model(tuple(c["shape"]), c["dtype"]) for c in spec["cases"]}
    reps = spec["repeats"]
    ns = nsys.parse(data_file("nsys_rmsnorm.sqlite"))
    m = launch_metrics(ns, reps, DeviceLimits(), model).set_index("case")
    k = launch_table.kernels(ns)
    for case in model:
        assert m.loc[case, "kernels_per_call"] == (k["case"] == case).sum() / reps
    assert m.loc["rmsnorm/triton_tuned/64x4096/bf16", "kernels_per_call"] == 1
    assert m.loc["rmsnorm/torch_eager/8x2048/fp16", "kernels_per_call"] > 1
    assert (m["transfers_per_call"] == 0).all()  # inputs are made on the GPU: no host<->device copies
    assert (m["syncs_per_call"] == 0).all()  # only the replay's own synchronize, which is not counted
    assert m["queue_us"].notna().all() and m["dram_vs_model"].isna().all()  # nsys has no counters
    tuned = k[k["case"] == "rmsnorm/triton_tuned/64x4096/bf16"]["duration_ns"]
    assert m.loc["rmsnorm/triton_tuned/64x4096/bf16", "prof_kernel_us"] == tuned.median() / 1e3

    nc = ncu.parse(data_file("ncu_rmsnorm_raw.csv"))
    c = launch_metrics(nc, reps, DeviceLimits(), model).set_index("case")
    for case in model:
        rows = nc[nc["case"] == case]
        measured = (rows["dram_read_bytes"] + rows["dram_write_bytes"]).sum() / reps
        assert c.loc[case, "dram_bytes_per_call"] == measured
        assert c.loc[case, "dram_vs_model"] == measured / model[case]
    main = nc[(nc["case"] == "rmsnorm/triton_tuned/64x4096/bf16")]
    assert (
        c.loc["rmsnorm/triton_tuned/64x4096/bf16", "occupancy_achieved_pct"] == main["occupancy_achieved_pct"].median()
    )
    assert c.loc["rmsnorm/triton_tuned/64x4096/bf16", "occupancy_limiter"] == main["occupancy_limiter"].mode()[0]
    assert c["launch_latency_us"].isna().all()  # ncu has no host-side timestamps


def test_summary_rows_count_as_their_launches():
    import pandas as pd

    from kprof import launch_table
    from kprof.occupancy import DeviceLimits

    t = launch_table.validate(
        pd.DataFrame(
            {
                "kernel": ["a", "b", "[CUDA memcpy Host-to-Device]"],
                "kind": ["kernel", "kernel", "memcpy"],
                "count": [10, 5, 5],
                "duration_ns": [100, 50, 10],
                "case": ["c", "c", "c"],
                "copy_kind": [None, None, "HtoD"],
                "source": "test",
            }
        )
    )
    m = launch_metrics(t, 5, DeviceLimits()).set_index("case")
    assert m.loc["c", "kernels_per_call"] == 3 and m.loc["c", "main_kernel"] == "a"
    assert m.loc["c", "prof_call_us"] == (10 * 100 + 5 * 50) / 5 / 1e3
    assert math.isnan(m.loc["c", "prof_busy_us"])  # summary rows have no start and end
    assert m.loc["c", "transfers_per_call"] == 1


# ------------------------------------------------------------------------------------ roofline ---------
def test_roofline_point_places_cases_under_the_lower_roof():
    from kprof.metrics import roofline_point

    # H100-like ceilings: 3000 GB/s, 700 TFLOP/s -> ridge at 233 FLOP/byte
    mem = roofline_point(flops=4e6, bytes_moved=8e6, tflops=1.2, ceiling_gbps=3000, peak_tflops=700)
    assert mem["intensity"] == pytest.approx(0.5) and mem["bound"] == "memory"
    assert mem["pct_roof"] == pytest.approx(100 * 1.2 / (0.5 * 3.0))  # roof: 0.5 FLOP/B x 3 TB/s = 1.5 TFLOP/s
    comp = roofline_point(flops=9.2e10, bytes_moved=7.6e7, tflops=560, ceiling_gbps=3000, peak_tflops=700)
    assert comp["bound"] == "compute" and comp["pct_roof"] == pytest.approx(80.0)
    # no compute ceiling measured (older runs): the memory roof only
    assert roofline_point(9.2e10, 7.6e7, 560, 3000, None)["bound"] == "memory"
    assert math.isnan(roofline_point(0, 8e6, 1.0, 3000, 700)["intensity"])


def test_specialization_fields_pick_the_main_kernel_and_its_occupancy():
    from kprof.metrics import specialization_fields
    from kprof.occupancy import limits_for

    norm = {
        "kernel": "norm",
        "constexprs": {"BLOCK_N": 4096},
        "num_warps": 8,
        "num_stages": 3,
        "grid": [64],
        "registers": 38,
        "local_bytes": 0,
        "shared_mem_bytes": 32,
        "resources_from": "driver",
    }
    product = {
        "kernel": "product",
        "constexprs": {"BLOCK_M": 128},
        "num_warps": 8,
        "num_stages": 4,
        "grid": [512],
        "autotuned": True,
        "registers": 176,
        "local_bytes": 0,
        "shared_mem_bytes": 98304,
        "resources_from": "driver",
    }
    f = specialization_fields([norm, product], limits_for(9, 0), {"BLOCK_M": 128})
    assert f["main_kernel"] == "product" and f["config"] == "BLOCK_M=128 num_warps=8 num_stages=4 (autotuned)"
    assert json.loads(f["params"]) == {"BLOCK_M": 128}
    assert [k["kernel"] for k in json.loads(f["triton_kernels"])] == ["norm", "product"]
    # 176 registers x 256 threads = 45056 per block: 1 block of 8 warps fits 65536 registers -> 8/64 warps
    assert f["occupancy_theoretical_pct"] == pytest.approx(12.5) and f["occupancy_limiter"] == "registers"
    assert specialization_fields([], None) == {"params": None}
    # without the profiler's durations the last launch is the main kernel (prologue first, then the work)
    assert specialization_fields([product, norm], None)["main_kernel"] == "norm"


def test_launches_are_attributed_by_case_and_kernel_name():
    from kprof.metrics import attribute_launches

    launches = launch_table.validate(
        pd.DataFrame(
            {
                "kernel": ["_k", "_k", "cublas_gemm"],
                "duration_ns": [10, 10, 20],
                "source": ["torch"] * 3,
                "case": ["f/a/1x1/bf16", "f/b/1x1/bf16", "f/a/1x1/bf16"],
            }
        )
    )
    spec = {"kernel": "_k", "constexprs": {"BLOCK": 64}, "num_warps": 4, "num_stages": 2}
    out = attribute_launches(launches, {"f/a/1x1/bf16": [spec], "f/b/1x1/bf16": []})
    assert list(out["config"].fillna("-")) == ["BLOCK=64 num_warps=4 num_stages=2", "-", "-"]
    assert out["num_warps"].iloc[0] == 4 and pd.isna(out["num_warps"].iloc[2])


def _ncu_raw_table(path: Path) -> pd.DataFrame:
    """An ``ncu --csv --page raw`` file as ncu wrote it: its own ``==PROF==`` lines before the header, and a row of
    units after it."""
    import io

    from kprof.profilers.ncu import _header_index  # the parser's own rule for where the header is

    lines = path.read_text(errors="replace").splitlines()
    at = _header_index(lines)
    return pd.read_csv(io.StringIO("\n".join([lines[at], *lines[at + 2 :]])), thousands=",", low_memory=False)


def test_waves_agree_with_ncus_own_waves_per_sm_on_every_committed_capture():
    """Every ncu capture of a kprof run committed under benchmarks/results (H100s and H200s, Triton and cuBLAS
    kernels, persistent launches among them): per launch, kprof's waves (:func:`kprof.occupancy.waves_per_sm` of the
    calculator's occupancy from the parsed launch table, with the capture's SM count) equal ncu's
    ``launch__waves_per_multiprocessor`` to its printed precision."""
    from kprof.occupancy import waves_per_sm
    from kprof.profilers import ncu

    root = Path(__file__).parents[2] / "benchmarks" / "results"
    compared, fractional, over_one = 0, 0, 0
    for path in sorted(root.rglob("ncu_raw.csv")):
        raw = _ncu_raw_table(path)
        if "launch__waves_per_multiprocessor" not in raw:
            continue
        launches = ncu.parse(path)
        kernels = launches[launches["kind"] == "kernel"].reset_index(drop=True)
        assert len(kernels) == len(raw), path
        for i, k in kernels.iterrows():
            occ = theoretical_occupancy(
                int(k.block_x * k.block_y * k.block_z), int(k.registers_per_thread), int(k.shared_mem_bytes)
            )
            sms = int(raw["device__attribute_multiprocessor_count"].iloc[i])
            theirs = float(raw["launch__waves_per_multiprocessor"].iloc[i])
            ours = waves_per_sm(int(k.grid_x * k.grid_y * k.grid_z), occ, sms)
            # ncu prints two decimals (0.125 as 0.12)
            assert ours == pytest.approx(theirs, rel=1e-4, abs=0.0051), (path, i, k.kernel)
            compared += 1
            fractional += theirs % 1 > 0.001
            over_one += theirs > 1
    assert compared >= 600 and fractional >= 100 and over_one >= 100, (compared, fractional, over_one)
