"""The report's speedup column divides two times only where they are one measurement.

A case whose CUPTI records could not be attributed falls back to CUDA events around each call: about 3 us of
event overhead on an H100, and the launch gaps of a multi-kernel call (eager PyTorch: 9 kernels). Divided by a
CUPTI busy time, that is a speedup of the timer, not of the kernel; ``kprof diff`` refuses the same pair.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from kprof.report import render, with_speedup

RUN = {
    "id": "r1",
    "family": "rmsnorm",
    "mode": "gpu",
    "status": "complete",
    "profiler": "none",
    "device": {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "cc_major": 9, "cc_minor": 0, "sm_count": 132},
    "ceiling_gbps": 3000.0,
}


def _metrics(eager_timer: str, mode: str = "cold") -> pd.DataFrame:
    rows = [("torch_eager", "eager", 14.0, eager_timer), ("triton_tuned", "triton", 2.0, "cupti")]
    return pd.DataFrame(
        [
            {
                "case": f"rmsnorm/{p}/1x4096/bf16",
                "family": "rmsnorm",
                "provider": p,
                "kind": kind,
                "shape": "1x4096",
                "dtype": "bf16",
                "status": "ok",
                "ok": True,
                "gpu_time_us": t,
                "noise": 0.01,
                "timing_mode": mode,
                "timer": timer,
                "max_rel_err": 1e-3,
            }
            for p, kind, t, timer in rows
        ]
    )


def test_no_speedup_against_a_baseline_timed_by_the_event_fallback():
    df = with_speedup(_metrics("events"), "torch_eager")
    tuned = df[df["provider"] == "triton_tuned"].iloc[0]
    assert math.isnan(tuned["speedup"])  # 14 us of events against 2 us of CUPTI busy time: not 7x
    assert df[df["provider"] == "torch_eager"].iloc[0]["speedup"] == 1.0  # the baseline against itself


def test_the_report_shows_no_speedup_across_timers_and_says_why():
    md = render(RUN, _metrics("events"))
    row = next(line for line in md.splitlines() if line.startswith("| **triton_tuned**"))
    assert "7.00×" not in row and "—" in row
    assert "CUDA-event fallback: not one measurement" in md


@pytest.mark.parametrize("mode", ["cold", "warm"])
def test_speedup_between_cupti_times(mode):
    df = with_speedup(_metrics("cupti", mode), "torch_eager")
    assert df[df["provider"] == "triton_tuned"].iloc[0]["speedup"] == 7.0


@pytest.mark.parametrize("mode", ["host", "graph"])
def test_host_and_graph_times_do_not_depend_on_the_cold_timer(mode):
    """Host and graph samples never go through CUPTI: a case whose cold time fell back still has a host time."""
    df = with_speedup(_metrics("events", mode), "torch_eager")
    assert df[df["provider"] == "triton_tuned"].iloc[0]["speedup"] == 7.0


def test_a_store_without_timer_columns_keeps_its_speedups():
    df = _metrics("cupti").drop(columns=["timer", "timing_mode"])
    assert with_speedup(df, "torch_eager")["speedup"].tolist() == [1.0, 7.0]
