"""kasmina's TMA kernel (``kasmina.tma``): every row of the H200's table, run in the interpreter at odd seed counts
against the float64 oracle (dormant seeds bit for bit x), the table's classes, and on an H200 the ops API's plan
that launches it."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.kasmina import op_plan, tma
from kprof.kernels.lib import launching, plans
from kprof.launch import DescribedLaunch
from tests.kernels.kasmina_inputs import inputs, rel
from tests.kernels.ops_paths import triton_ops

F = discover()


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("tile", tma._H200_TILES, ids=lambda t: f"c{t.channels}-b{t.block_b}w{t.num_warps}")
def test_each_tile_of_the_table_matches_the_oracle(tile, dtype, device):
    shape = (3 * tile.block_b, 5, tile.channels)  # three tiles of rows (the loop runs), an odd number of seeds
    inp = inputs(shape, dtype, device)
    y_ref, t_ref = F["kasmina"].oracle(**inp)
    y, tele = tma.launch(**inp, tile=tile)
    tol = F["kasmina"].tolerances[dtype]
    assert rel(y, y_ref) < tol and rel(tele, t_ref) < tol
    assert ((tele[:, 1].double() - t_ref[:, 1]).abs() / t_ref[:, 1].abs()).max().item() < tol  # the variance
    dormant = inp["lifecycle"] == 0
    x3, y3 = inp["x"].view(shape), y.view(shape)
    assert torch.equal(y3[:, dormant], x3[:, dormant])  # a product by I in fp32: x again


def test_a_seed_with_an_id_outside_the_registry_is_nan(device):
    inp = inputs((32, 3, 32), "bf16", device)
    inp["blueprint_id"][1] = 99
    y, tele = tma.launch(**inp, tile=tma.TmaTile(32, 16, 2, 2))
    assert torch.isnan(y.view(32, 3, 32)[:, 1]).all() and torch.isnan(tele[1]).all()
    assert not torch.isnan(y.view(32, 3, 32)[:, [0, 2]]).any() and not torch.isnan(tele[[0, 2]]).any()


def test_the_kernel_refuses_what_a_descriptor_cannot_tile(device):
    fam = F["kasmina"]
    partial = fam.make_inputs((40, 3, 32), "bf16", device, seed=1)
    with pytest.raises(ValueError, match="multiple of the tile"):
        tma.launch(**partial, tile=tma.TmaTile(32, 16, 2, 2))
    odd = fam.make_inputs((32, 3, 48), "bf16", device, seed=1)
    with pytest.raises(ValueError, match="channels in 16, 32, 64 or 128"):
        tma.launch(**odd, tile=tma.TmaTile(48, 16, 2, 2))
    assert not tma.fits(fam.make_inputs((32, 3, 32), "fp32", device, seed=1)["x"], 32, 16)
    strided = fam.make_inputs((32, 3, 32), "bf16", device, seed=1)["x"].view(2, 16, 96).transpose(0, 1)
    assert not tma.fits(strided, 32, 16)  # rows no view can address: no copy is made to check or run


@pytest.mark.parametrize(
    ("rows", "seeds", "c", "expected"),
    [
        (512, 1000, 32, (32, 6)),
        (64, 4000, 32, (16, 4)),
        (128, 1000, 32, None),  # 64-255 rows need 16 seeds an SM
        (256, 1000, 64, (16, 4)),
        (64, 4000, 64, (16, 4)),
        (64, 1000, 64, None),
        (512, 4000, 128, (32, 6)),
        (256, 4000, 128, None),  # 128 channels from 512 rows
        (512, 100, 64, None),  # fewer seeds than SMs: branch_free splits their rows
        (520, 1000, 32, None),  # not a whole number of tiles
        (512, 1000, 48, None),
        (8, 4000, 64, None),
    ],
)
def test_the_h200_table_takes_the_classes_it_was_raced_faster_in(rows, seeds, c, expected):
    tile = tma.table_tile(rows, seeds, c, sms=132)
    assert (None if tile is None else (tile.block_b, tile.stages)) == expected


@pytest.mark.parametrize(
    ("rows", "seeds", "c", "taken"),
    [
        (512, 1000, 128, True),
        (512, 4000, 32, True),
        (512, 1000, 64, True),
        (512, 1000, 32, True),
        (64, 4000, 64, True),
        (64, 4000, 32, False),  # 2^23 - 2^17 elements: the GPU time is under the plan's host time
        (64, 4096, 32, True),  # the table's 64-255 rows at 32 channels, from 2^23 elements
    ],
)
def test_the_ops_api_takes_it_only_where_x_is_large_enough(rows, seeds, c, taken):
    assert (tma.route_tile(rows, seeds, c, sms=132) is not None) == taken
    assert tma.table_tile(rows, seeds, c, sms=132) is not None  # the GPU race alone would have taken each


def test_no_tile_off_an_h200(device):
    x = F["kasmina"].make_inputs((512, 200, 32), "bf16", device, seed=1)["x"]
    if launching.fast_memory(x):
        pytest.skip("this GPU is an H200, where the table applies (the GPU test below covers it)")
    assert tma.tile_for(x, 200, 32) is None


def test_the_ops_plan_passes_the_kernel_its_arguments_in_order(device, monkeypatch):
    """The ops API's TMA plan (``op_plan.TmaPlan``), with the table taking a small shape: its planned call gives the
    checked first call's outputs bit for bit (its descriptors, pointers, sizes and constexprs reach the kernel in the
    signature's order), in the interpreter as on a GPU."""
    monkeypatch.setattr(tma, "tile_for", lambda x, n_seeds, c: tma.TmaTile(c, 16, 2, 2) if c == 32 else None)
    inp = inputs((48, 5, 32), "bf16", device)
    with triton_ops():
        first = ops.kasmina_forward(**inp)
        (plan,) = op_plan.PLANS.plans.values()
        second = ops.kasmina_forward(**inp)
    assert isinstance(plan, op_plan.TmaPlan)
    assert torch.equal(second[0], first[0]) and torch.equal(second[1], first[1])
    y_ref, t_ref = F["kasmina"].oracle(**inp)
    tol = F["kasmina"].tolerances["bf16"]
    assert rel(second[0], y_ref) < tol and rel(second[1], t_ref) < tol


@pytest.mark.gpu
@pytest.mark.parametrize(("rows", "c", "dtype"), [(256, 64, "bf16"), (512, 32, "fp16"), (512, 128, "bf16")])
def test_the_ops_plan_launches_the_tma_kernel_on_an_h200(rows, c, dtype):
    """On an H200: kasmina_forward's first call runs the TMA kernel, its plan reaches the compiled launch and then
    keeps its encoded descriptors by address, and every planned call (x at its own address and at another, encoded
    anew or found kept) gives the first call's outputs bit for bit, within the oracle's tolerance."""
    x = torch.empty(1, device="cuda")
    if not launching.fast_memory(x):
        pytest.skip("the TMA kernel's table is the H200's (not raced elsewhere)")
    seeds = max(launching.sm_count(x) + 3, -(-tma.TMA_MIN_ELEMENTS // (rows * c)))
    inp = inputs((rows, seeds, c), dtype, "cuda")
    assert tma.tile_for(inp["x"], seeds, c) is not None
    with triton_ops():
        plans.reset()
        first = ops.kasmina_forward(**inp)
        for i in range(8):  # x at a second address every other call; each y freed before the next call
            y, tele = ops.kasmina_forward(**(inp if i % 2 == 0 else {**inp, "x": inp["x"].clone()}))
            assert torch.equal(y, first[0]) and torch.equal(tele, first[1]), f"call {i + 1} differs from the first"
            del y, tele
        (plan,) = op_plan.PLANS.plans.values()
    assert isinstance(plan, op_plan.TmaPlan) and plan.launch.entry is not None
    described = plan.launch.described()
    assert isinstance(described, DescribedLaunch) and described.c_launch is not None, "every call took the wrapper"
    # the last five calls took the described launch (the first three: the JIT, the entry's lookup, the compiled
    # launch); PyTorch's allocator hands freed blocks back, so some pair of addresses came again
    assert 1 <= len(described.kept) < 5
    y_ref, t_ref = F["kasmina"].oracle(**inp)
    tol = F["kasmina"].tolerances[dtype]
    assert rel(first[0], y_ref) < tol and rel(first[1], t_ref) < tol
    plans.reset()
