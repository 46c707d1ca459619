"""kasmina's stacked kernel for a few rows (``kasmina.stacked``): in the interpreter at odd shapes of every class it
covers (rows padded to a power of two, seeds not a multiple of the block, channels not a power of two), every dtype,
against the float64 oracle; dormant seeds bit for bit x, an id outside the registry flagged, blueprints shared."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover
from kprof.kernels.kasmina import stacked

F = discover()


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return ((a.double() - ref).norm() / ref.norm()).item()


def _inputs(shape: tuple[int, ...], dtype: str, device: str) -> dict:
    inp = F["kasmina"].make_inputs(shape, dtype, device, seed=sum(shape))
    inp["x"] = inp["x"] + 3.0  # a mean far from zero: the variance must not cancel
    inp["lifecycle"] = torch.arange(shape[-2], dtype=torch.int8, device=device) % 3  # every state present
    return inp


@pytest.mark.parametrize("by_blueprint", [False, True], ids=["by-block", "by-blueprint"])
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
def test_matches_the_oracle(shape, block_s, dtype, by_blueprint, device):
    inp = _inputs(shape, dtype, device)
    rows = inp["x"].numel() // inp["x"].shape[-1]
    tile = stacked.tile(rows, block_s, 4, by_blueprint)
    y_ref, t_ref = F["kasmina"].oracle(**inp)
    y, tele = stacked.launch(**inp, tile=tile)
    tol = F["kasmina"].tolerances[dtype]
    assert _rel(y, y_ref) < tol and _rel(tele, t_ref) < tol
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
    inp = _inputs((2, 24, 32), "bf16", device)
    inp["blueprint_id"].fill_(3)
    inp["blueprint_id"][5] = 8  # the registry has 8: ids 0-7
    y, tele = stacked.launch(**inp, tile=stacked.tile(2, 16, 4, by_blueprint))
    y3 = y.view(2, 24, 32)
    assert torch.isnan(y3[:, 5]).all() and torch.isnan(tele[5]).all()
    rest = [i for i in range(24) if i != 5]
    assert not torch.isnan(y3[:, rest]).any() and not torch.isnan(tele[rest]).any()
    y_ref, t_ref = F["kasmina"].oracle(**{**inp, "blueprint_id": inp["blueprint_id"].clamp(max=7)})
    assert _rel(y3[:, rest], y_ref.view(2, 24, 32)[:, rest]) < F["kasmina"].tolerances["bf16"]


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
