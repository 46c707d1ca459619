"""The GPU benchmark scripts at least import (their kernels compile in the interpreter on the CPU).

A script that needs an optional package that is not installed (Playwright for the dashboard's browser
timing) is skipped with the package's name, not failed: the suite must pass wherever the README's test
command ran, and that command only installs what it can.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).parents[1] / "benchmarks"
OPTIONAL = {"playwright"}  # top-level packages a benchmark may need that kprof does not depend on


@pytest.mark.parametrize("script", sorted(p.stem for p in BENCH.glob("*.py")))
def test_benchmark_imports(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    try:
        mod = importlib.import_module(script)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in OPTIONAL:
            raise
        pytest.skip(f"benchmarks/{script}.py needs {exc.name}, which is not installed (pip install {exc.name})")
    finally:
        sys.modules.pop(script, None)
    if script != "bench_common":
        assert callable(mod.main)


def test_new_addresses_never_repeats_a_set_a_plan_keeps(monkeypatch):
    """``bench_common.new_addresses``: copies of x, each at its own address, one more than a plan keeps, handed out
    in turn, so that a call never finds its address among the last ``DescribedLaunch.KEEP``."""
    import torch

    from kprof.launch import DescribedLaunch

    monkeypatch.syspath_prepend(str(BENCH))
    bench_common = importlib.import_module("bench_common")
    x = torch.randn(3, 5)
    new_x = bench_common.new_addresses(x)
    seen = [new_x() for _ in range(2 * (DescribedLaunch.KEEP + 1))]
    assert all(torch.equal(c, x) for c in seen)
    addresses = [c.data_ptr() for c in seen]
    assert len(set(addresses)) == DescribedLaunch.KEEP + 1 and x.data_ptr() not in addresses
    for i, a in enumerate(addresses):
        assert a not in addresses[max(0, i - DescribedLaunch.KEEP) : i]


def test_checked_poisons_every_output_before_each_candidate(monkeypatch):
    """``bench_common.checked``: each output (a tensor or a tuple of them) is NaN-poisoned before a candidate runs, so
    one that writes nothing, or a wrong second output, is left out; a right one is kept."""
    import torch

    monkeypatch.syspath_prepend(str(BENCH))
    from bench_common import checked

    y, h = torch.empty(5), torch.empty(5)
    ref = (torch.rand(5, dtype=torch.float64) + 1, torch.rand(5, dtype=torch.float64) + 1)

    def right():
        y.copy_(ref[0])
        h.copy_(ref[1])
        return y, h

    def wrong_h():
        y.copy_(ref[0])
        h.copy_(ref[1] * 2)
        return y, h

    fns, notes = checked({"right": (right, ref), "silent": (lambda: (y, h), ref), "wrong h": (wrong_h, ref)}, (y, h))
    assert list(fns) == ["right"] and set(notes) == {"silent", "wrong h"}
    one, one_notes = checked({"one": (lambda: y.copy_(ref[0]), ref[0])}, y)
    assert list(one) == ["one"] and not one_notes


def test_inductor_configs_reads_the_kept_launch_of_each_generated_kernel(monkeypatch):
    """``bench_common.inductor_configs``: in modules torch.compile generated (their file under a ``torchinductor``
    cache), each object's launchers give one line of their config; other modules and objects are not read."""
    import types

    monkeypatch.syspath_prepend(str(BENCH))
    from bench_common import inductor_configs

    cfg = types.SimpleNamespace(kwargs={"XBLOCK": 1, "R0_BLOCK": 4096}, num_warps=16, num_stages=1)
    kernel = types.SimpleNamespace(launchers=[types.SimpleNamespace(config=cfg)])
    generated = types.ModuleType("kprof_test_generated")
    generated.__file__ = "/tmp/torchinductor_me/ab/cab.py"
    generated.triton_red_fused_0, generated.not_a_kernel = kernel, 3
    elsewhere = types.ModuleType("kprof_test_elsewhere")
    elsewhere.__file__ = "/tmp/other/mod.py"
    elsewhere.triton_other = kernel
    monkeypatch.setitem(sys.modules, generated.__name__, generated)
    monkeypatch.setitem(sys.modules, elsewhere.__name__, elsewhere)
    lines = [line for line in inductor_configs() if line.startswith(("triton_red_fused_0:", "triton_other:"))]
    assert lines == ["triton_red_fused_0: {'XBLOCK': 1, 'R0_BLOCK': 4096} num_warps=16 num_stages=1"]


def test_gated_race_candidates_match_the_oracle_in_the_interpreter(monkeypatch):
    """Every launch the gated race times computes silu_mul, with each kernel body it races and the 1-D row kernel of
    ``--rows-1d``: checked against the float64 oracle at an odd H (1500, so every tile and flat block ends mid-row), in
    Triton's interpreter. In bf16 and fp16; the body that multiplies in the input's dtype in fp16 only (the
    interpreter's bf16 products are not bf16's: NaN at ordinary values)."""
    monkeypatch.syspath_prepend(str(BENCH))
    race = importlib.import_module("gated_placed_race")
    from kprof.kernels import discover
    from kprof.kernels.lib import gated

    fam = discover()["silu_mul"]
    op = gated.choose_config(1500, 2, 3)
    cands = race.candidates(1500, 2, op)
    assert {"op", "tile c2048 w16", "tile c1024 w8 const", "flat 1024 w8"} <= set(cands)  # 2048: the widest needed
    bodies = [(race.KERNELS["silu_mul"], ("bf16", "fp16")), (race.BODIES["div"], ("bf16", "fp16"))]
    bodies += [(race.BODIES["narrow"], ("fp16",)), (race.ROWS_1D["silu_mul"], ("bf16", "fp16"))]
    for dtype in ("bf16", "fp16"):
        inp = fam.make_inputs((3, 3000), dtype, "cpu", 7)
        ref = fam.oracle(**inp)
        for label, cfg in cands.items():
            assert cfg.flat or cfg.num_warps * 32 * 4 <= cfg.block_h, label
            y = torch.empty((3, 1500), dtype=inp["x"].dtype)
            for kernels in [k for k, dtypes in bodies if dtype in dtypes]:
                y.fill_(float("nan"))
                gated.launch_tile(kernels, cfg, inp["x"], y)
                err = float((y.double() - ref.double()).norm() / ref.double().norm())
                assert err <= fam.tolerances[dtype], (label, dtype, kernels.tile, err)


@pytest.mark.parametrize("family", ["silu_mul", "gelu_mul"])
def test_the_gated_races_1d_row_kernel_without_a_mask_matches_the_oracle(family, monkeypatch):
    """``--rows-1d``'s kernel where H is compiled in and a multiple of the block (no mask at all), and at run time,
    both families, in Triton's interpreter against the float64 oracle on fresh inputs strided past 2H."""
    monkeypatch.syspath_prepend(str(BENCH))
    race = importlib.import_module("gated_placed_race")
    from kprof.kernels import discover
    from kprof.kernels.lib import gated

    fam = discover()[family]
    for dtype, const in (("bf16", True), ("fp16", True), ("fp16", False)):
        x = fam.make_inputs((3, 2 * 2048 + 8), dtype, "cpu", torch.seed() % 2**31)["x"][:, : 2 * 2048]
        ref = fam.oracle(x=x)
        y = torch.full((3, 2048), float("nan"), dtype=x.dtype)
        gated.launch_tile(race.ROWS_1D[family], gated.Config(1024, 1, 4, False, cols_const=const), x, y)
        assert float((y.double() - ref).norm() / ref.norm()) <= fam.tolerances[dtype], (dtype, const)


def test_the_placed_races_time_only_the_peers_that_take_the_point(monkeypatch):
    """``peer_calls`` (every placed race's providers): a peer the family lacks, or whose version refuses the shape
    (silu_mul's one-row kernel past its one-block limit), is left out instead of failing the race; the calls it keeps
    run the provider on the place's inputs and the given arguments."""
    monkeypatch.syspath_prepend(str(BENCH))
    race = importlib.import_module("rmsnorm_placed_race")
    from kprof.kernels import discover

    fam = discover()["silu_mul"]
    for h, with_one_row in [(1500, True), (40000, False)]:
        x = fam.make_inputs((3, 2 * h), "bf16", "cpu", 7)["x"]
        spots = [({"x": x}, (), None, ())]
        calls = race.peer_calls(fam, spots, ("torch_eager", "triton_one_row", "no_such_provider"), "bf16")
        assert set(calls) == {("[torch_eager]", 0)} | ({("[triton_one_row]", 0)} if with_one_row else set())
        assert torch.equal(calls[("[torch_eager]", 0)](), fam.providers["torch_eager"].fn(x=x))
