"""The external profilers for real, on a GPU machine: one small rmsnorm run under each available tool.

Skipped without a CUDA GPU; each tool's test is skipped (with the reason kprof gives) when the tool is
not installed. Where nsys is the copy bundled with Nsight Compute, its libraries must be on LD_LIBRARY_PATH.
"""

from __future__ import annotations

import pytest

from kprof.external import choose
from kprof.harness import BenchSettings
from kprof.profilers.nsys import NO_IMPORTER
from kprof.runner import ProfileOptions, ProfilerFailed, profile
from kprof.store import RunStore
from kprof.tools import ToolNotFoundError

pytestmark = pytest.mark.gpu

CASES = dict(family="rmsnorm", providers=("triton_tuned", "torch_eager"), shapes=((64, 4096),), dtypes=("bf16",))


@pytest.mark.parametrize("profiler", ["nsys", "ncu", "proton"])
def test_profile_under_external_tool(profiler, store_path):
    try:
        choose(profiler, "gpu")
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))
    opts = ProfileOptions(
        **CASES, profiler=profiler, settings=BenchSettings(rep_ms=20, warmup_ms=5, graph=False), store=str(store_path)
    )
    try:
        run_id = profile(opts)
    except ProfilerFailed as exc:
        if profiler == "nsys" and NO_IMPORTER in str(exc):  # this machine's nsys cannot import: say why, skip
            pytest.skip(str(exc))
        raise
    st = RunStore(store_path)
    run = st.run(run_id)
    assert run["status"] == "complete", run["error"]
    caps = st.captures(run_id)
    assert (caps["returncode"] == 0).all() and len(caps) >= 1
    launches = st.launches(run_id)
    attributed = launches[launches["case"].notna() & (launches["kind"].fillna("kernel") == "kernel")]
    assert set(attributed["case"]) == {"rmsnorm/triton_tuned/64x4096/bf16", "rmsnorm/torch_eager/64x4096/bf16"}
    m = st.metrics(run_id).set_index("provider")
    repeats = 3 if profiler == "ncu" else 5
    assert attributed.groupby("case").size()["rmsnorm/triton_tuned/64x4096/bf16"] == repeats  # warm-up excluded
    assert m.loc["triton_tuned", "kernels_per_call"] == 1
    assert m.loc["torch_eager", "kernels_per_call"] > 1
    # the profiler's kernel time and kprof's own timer measure the same kernel: same order of magnitude
    ratio = m.loc["triton_tuned", "prof_kernel_us"] / m.loc["triton_tuned", "gpu_time_us"]
    assert 0.2 < ratio < 5, ratio
    if profiler == "ncu":
        assert m.loc["triton_tuned", "occupancy_achieved_pct"] > 0
        assert m.loc["triton_tuned", "dram_bytes_per_call"] > 0
        assert m.loc["triton_tuned", "occupancy_limiter"] in (
            "warps",
            "registers",
            "shared_memory",
            "blocks",
            "barriers",
        )
    if profiler == "nsys":
        assert m.loc["triton_tuned", "launch_latency_us"] > 0
        assert m.loc["triton_tuned", "transfers_per_call"] == 0
