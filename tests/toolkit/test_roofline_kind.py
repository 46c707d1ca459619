"""Roofline providers (one cuBLAS product beside a matrix family) are timed but never checked against
the oracle nor ranked best; multi-output providers are judged by their worst output."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from kprof.harness import check_correctness
from kprof.kernels import discover
from kprof.registry import Case
from kprof.report import _gpu_table, _interp_table


def test_roofline_provider_is_not_checked(device):
    fam = discover()["swiglu"]
    prov = fam.providers["cublas_gate_up"]
    inputs = fam.make_inputs((4, 32, 24), "fp32", device, seed=1)
    assert prov.fn(**inputs).shape == (4, 48)  # not the family's output shape: checking it would fail
    corr = check_correctness(fam, prov, Case("swiglu", prov.name, (4, 32, 24), "fp32"), inputs)
    assert corr.ok and math.isnan(corr.rel_err)


@pytest.mark.parametrize("name", ["rmsnorm", "add_rmsnorm", "silu_mul", "gelu_mul"])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_a_memory_bound_familys_yardstick_copies_the_bytes_its_model_says_a_call_moves(name, dtype, device):
    """``copy_bytes``: one copy whose read and write together are the family's bytes model at the call's shape
    (odd rows, a batch dimension), never checked against the oracle."""
    fam = discover()[name]
    prov = fam.providers["copy_bytes"]
    shape = (3, 5, 2 * 37)
    inputs = fam.make_inputs(shape, dtype, device, seed=int(torch.randint(0, 1 << 30, ())))
    out = prov.fn(**inputs)
    assert prov.kind == "roofline" and out.device.type == torch.device(device).type
    assert 2 * out.numel() * out.element_size() == fam.bytes_model(shape, dtype)
    corr = check_correctness(fam, prov, Case(name, prov.name, shape, dtype), inputs)
    assert corr.ok and math.isnan(corr.rel_err)


def _row(provider, kind, t):
    return dict(
        provider=provider,
        kind=kind,
        status="ok",
        gpu_time_us=t,
        noise=0.01,
        gbps=1.0,
        pct_peak_bw=1.0,
        speedup=1.0,
        graph_time_us=t,
        host_time_us=5.0,
        launch_latency_us=3.0,
        kernels_per_call=1,
        occupancy_theoretical_pct=50.0,
        occupancy_achieved_pct=float("nan"),
        occupancy_est_pct=40.0,
        prof_kernel_us=t,
        max_rel_err=1e-3,
        max_abs_err=1e-3,
        note=None,
        dram_vs_model=float("nan"),
    )


def test_report_never_ranks_the_yardstick_best():
    g = pd.DataFrame([_row("cublas_xw", "roofline", 90.0), _row("triton_fused", "triton", 110.0)])
    table = _gpu_table(g, "torch_eager")
    assert "**triton_fused**" in table and "cublas_xw (roofline)" in table and "**cublas_xw" not in table
    assert "yardstick" in _interp_table(g)


def test_worst_output_decides(device):
    """A 1% error in a small second output is caught even beside a large exact first output."""
    fam = discover()["kasmina"]
    inputs = fam.make_inputs((32, 4, 16), "fp32", device, seed=2)
    good = fam.providers["torch_vectorised"]

    def skewed(**kw):
        y, tele = good.fn(**kw)
        return y, tele * torch.tensor([1.0, 1.02], device=tele.device)

    bad = type(good)(family="kasmina", name="skewed", kind="eager", description="", fn=skewed)
    corr = check_correctness(fam, bad, Case("kasmina", "skewed", (32, 4, 16), "fp32"), inputs)
    assert not corr.ok and 5e-3 < corr.rel_err < 5e-2


def test_report_never_ranks_a_floor_best():
    """A floor does less than the family's function: faster than every version, and still not the best."""
    g = pd.DataFrame([_row("copy_through_ids", "floor", 50.0), _row("triton_fused", "triton", 110.0)])
    table = _gpu_table(g, "torch_eager")
    assert "**triton_fused**" in table and "copy_through_ids (floor)" in table and "**copy_through_ids" not in table
    assert "floor: not the family's function, not checked" in _interp_table(g)
