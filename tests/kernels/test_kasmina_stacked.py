"""kasmina's stacked kernel for a few rows (``kasmina.stacked``): in the interpreter at odd shapes of every class it
covers (rows padded to a power of two, seeds not a multiple of the block, channels not a power of two), every dtype,
against the float64 oracle; dormant seeds bit for bit x, an id outside the registry flagged, blueprints shared."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover, ops
from kprof.kernels.kasmina import op_plan, stacked
from kprof.kernels.lib import launching
from tests.kernels.kasmina_inputs import inputs, rel
from tests.kernels.ops_paths import triton_ops

F = discover()


@pytest.mark.parametrize(
    ("by_blueprint", "early"),
    [(False, True), (False, False), (True, True), (True, False)],
    ids=["by-block", "by-block-late", "by-blueprint", "late"],
)
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize(
    ("shape", "block_s"),
    [
        ((1, 37, 20), 16),  # one row, seeds over three blocks, the last partial; 20 channels
        ((3, 13, 64), 4),  # 3 rows padded to 4: tile rows of no row
        ((2, 2, 5, 48), 8),  # two batch dimensions
        ((16, 7, 32), 1),  # 16 rows, one seed a program
        ((5, 19, 100), 2),  # 100 channels in a block of 128
        ((2, 9, 128), 16),
    ],
    ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v),
)
def test_matches_the_oracle(shape, block_s, dtype, by_blueprint, early, device):
    inp = inputs(shape, dtype, device)
    rows = inp["x"].numel() // inp["x"].shape[-1]
    tile = stacked.tile(rows, block_s, 4, by_blueprint, early)
    y_ref, t_ref = F["kasmina"].oracle(**inp)
    y, tele = stacked.launch(**inp, tile=tile)
    tol = F["kasmina"].tolerances[dtype]
    assert rel(y, y_ref) < tol and rel(tele, t_ref) < tol
    assert ((tele[:, 1].double() - t_ref[:, 1]).abs() / t_ref[:, 1].abs()).max().item() < tol  # each variance
    dormant = inp["lifecycle"] == 0
    seeds, c = shape[-2], shape[-1]
    x3, y3 = inp["x"].view(-1, seeds, c), y.view(-1, seeds, c)
    assert torch.equal(y3[:, dormant], x3[:, dormant])  # no product, no rounding: x


@pytest.mark.parametrize("by_blueprint", [False, True], ids=["by-block", "by-blueprint"])
def test_seeds_sharing_a_blueprint_and_one_flagged(by_blueprint, device):
    """Every seed of a block on one blueprint (one load for all) but one out of the registry: that seed is NaN in y
    and telemetry, its neighbours are not (by blueprint: the flagged seed is blueprint 0's program's, whose block has
    no other seed)."""
    inp = inputs((2, 24, 32), "bf16", device)
    inp["blueprint_id"].fill_(3)
    inp["blueprint_id"][5] = 8  # the registry has 8: ids 0-7
    y, tele = stacked.launch(**inp, tile=stacked.tile(2, 16, 4, by_blueprint))
    y3 = y.view(2, 24, 32)
    assert torch.isnan(y3[:, 5]).all() and torch.isnan(tele[5]).all()
    rest = [i for i in range(24) if i != 5]
    assert not torch.isnan(y3[:, rest]).any() and not torch.isnan(tele[rest]).any()
    y_ref, t_ref = F["kasmina"].oracle(**{**inp, "blueprint_id": inp["blueprint_id"].clamp(max=7)})
    assert rel(y3[:, rest], y_ref.view(2, 24, 32)[:, rest]) < F["kasmina"].tolerances["bf16"]


def test_the_kernel_refuses_what_it_does_not_cover(device):
    fam = F["kasmina"]
    wide = fam.make_inputs((1, 3, 256), "bf16", device, seed=1)
    with pytest.raises(ValueError, match="at most 128 channels"):
        stacked.launch(**wide, tile=stacked.tile(1, 16, 4))
    many = fam.make_inputs((33, 3, 32), "bf16", device, seed=1)
    with pytest.raises(ValueError, match="covering every row"):
        stacked.launch(**many, tile=stacked.tile(16, 1, 4))
    assert not stacked.fits(33, 32, 8)  # 8 seeds x 64 rows: over 256 tile rows


def test_a_tile_has_at_least_16_rows():
    assert stacked.tile(1, 4, 2) == stacked.StackedTile(16, 1, 2)
    assert stacked.tile(3, 2, 4) == stacked.StackedTile(4, 4, 4)
    assert stacked.tile(9, 8, 4) == stacked.StackedTile(8, 16, 4)
    assert stacked.tile(1, 32, 4, True).grid(100, 8) == (4, 8)
    assert stacked.tile(1, 32, 4).grid(100, 8) == (4, 1)


@pytest.mark.parametrize(
    ("rows", "seeds", "c", "expected"),
    [
        (1, 1000, 64, (64, 1, True)),
        (1, 4000, 128, (64, 1, True)),
        (1, 100, 32, (16, 1, True)),
        (1, 989, 64, (16, 1, True)),  # under 7.5 seeds an SM
        (4, 4000, 64, (4, 4, False)),
        (3, 4000, 32, (4, 4, False)),
        (2, 4000, 32, (8, 2, False)),  # 4 seeds of 2 rows raised to 16 tile rows
        (4, 1000, 128, (4, 4, False)),
        (4, 1000, 64, None),  # 2-4 rows at 1000 seeds: 128 channels only
        (4, 2000, 32, (4, 4, False)),  # 15 seeds an SM
        (8, 4000, 128, (8, 8, False)),
        (8, 2500, 64, None),  # 5-8 rows from 30 seeds an SM
        (8, 1000, 128, None),
        (1, 1000, 100, None),  # channels a multiple of 16
        (1, 4000, 48, (64, 1, True)),
        (1, 4000, 16, None),
        (16, 4000, 128, None),
        (1, 4000, 256, None),
        (4, 100, 64, None),
    ],
)
def test_the_h200_table_takes_the_classes_it_was_raced_faster_in(rows, seeds, c, expected):
    tile = stacked.table_tile(rows, seeds, c, sms=132)
    assert (None if tile is None else (tile.block_s, tile.rows, tile.by_blueprint)) == expected
    if tile is not None:
        assert stacked.fits(rows, c, tile.block_s) and tile.num_warps == 4
        assert tile.early == tile.by_blueprint  # x and the blueprint before the state: by blueprint only


@pytest.mark.parametrize(
    ("rows", "seeds", "c", "expected"),
    [
        (1, 1000, 32, (64, True, 4)),
        (1, 4000, 32, (64, True, 4)),
        (1, 989, 32, None),  # under 7.5 seeds an SM
        (1, 4000, 64, (16, False, 4)),  # from 22.5 seeds an SM: by block
        (1, 2970, 64, (16, False, 4)),
        (1, 2969, 64, (64, True, 4)),
        (1, 1980, 64, (64, True, 4)),
        (1, 1979, 64, (64, True, 8)),
        (1, 1000, 64, (64, True, 8)),
        (1, 1000, 48, (64, True, 8)),
        (1, 4000, 128, None),
        (1, 1000, 16, None),
        (2, 4000, 64, None),  # one row only
        (8, 1000, 64, None),
    ],
)
def test_the_h200_fp32_table_takes_one_row_at_32_to_64_channels(rows, seeds, c, expected):
    tile = stacked.table_tile(rows, seeds, c, sms=132, fp32=True)
    assert (None if tile is None else (tile.block_s, tile.by_blueprint, tile.num_warps)) == expected
    assert tile is None or stacked.fits(rows, c, tile.block_s)
    if tile is not None:  # by blueprint, it is loaded before the state but at 32 channels under 30 seeds an SM
        assert tile.early == (tile.by_blueprint and (c != 32 or seeds >= 30 * 132))


def test_no_tile_off_an_h200(device):
    fam = F["kasmina"]
    x = fam.make_inputs((1, 1000, 64), "bf16", device, seed=1)["x"]
    if launching.fast_memory(x):
        pytest.skip("this GPU is an H200, where the table applies (the GPU test below covers it)")
    assert stacked.tile_for(x, 1000, 64) is None
    assert stacked.tile_for(x.float(), 1000, 64) is None


@pytest.mark.parametrize("by_blueprint", [False, True], ids=["by-block", "by-blueprint"])
def test_the_ops_plan_passes_the_kernel_its_arguments_in_order(by_blueprint, device, monkeypatch):
    """The ops API's stacked plan (``op_plan.StackedPlan``), with the table taking a small shape: its planned call
    gives the checked first call's outputs bit for bit (pointers, sizes, strides and constexprs reach the kernel in
    the signature's order, the grid has its blueprint axis), in the interpreter as on a GPU."""
    monkeypatch.setattr(stacked, "tile_for", lambda x, n_seeds, c: stacked.tile(3, 4, 2, by_blueprint))
    inp = inputs((3, 21, 48), "bf16", device)
    with triton_ops():
        first = ops.kasmina_forward(**inp)
        (plan,) = op_plan.PLANS.plans.values()
        second = ops.kasmina_forward(**inp)
    assert isinstance(plan, op_plan.StackedPlan)
    assert torch.equal(second[0], first[0]) and torch.equal(second[1], first[1])
    y_ref, t_ref = F["kasmina"].oracle(**inp)
    tol = F["kasmina"].tolerances["bf16"]
    assert rel(second[0], y_ref) < tol and rel(second[1], t_ref) < tol


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((1, 1000, 64), "bf16"),
        ((4, 4000, 32), "fp16"),
        ((7, 4000, 128), "bf16"),
        ((1, 4000, 32), "fp32"),
        ((1, 1000, 32), "fp32"),  # EARLY off
        ((1, 4000, 64), "fp32"),
        ((1, 1000, 64), "fp32"),
    ],
)
def test_the_ops_plan_launches_the_stacked_kernel_on_an_h200(shape, dtype):
    """On an H200: kasmina_forward's first call runs the stacked kernel where the table says, its plan reaches the
    compiled launch, and every planned call (x at its own address and at another) gives the first call's outputs bit
    for bit, within the oracle's tolerance."""
    x = torch.empty(1, device="cuda")
    if not launching.fast_memory(x):
        pytest.skip("the stacked kernel's table is the H200's (not raced elsewhere)")
    inp = inputs(shape, dtype, "cuda")
    assert stacked.tile_for(inp["x"], shape[-2], shape[-1]) is not None
    with triton_ops():
        first = ops.kasmina_forward(**inp)
        for i in range(6):
            y, tele = ops.kasmina_forward(**(inp if i % 2 == 0 else {**inp, "x": inp["x"].clone()}))
            assert torch.equal(y, first[0]) and torch.equal(tele, first[1]), f"call {i + 1} differs from the first"
        (plan,) = op_plan.PLANS.plans.values()
    assert isinstance(plan, op_plan.StackedPlan) and plan.launch.entry is not None
    y_ref, t_ref = F["kasmina"].oracle(**inp)
    tol = F["kasmina"].tolerances[dtype]
    assert rel(first[0], y_ref) < tol and rel(first[1], t_ref) < tol
