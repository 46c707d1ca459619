"""kasmina's kernel with the seeds grouped by blueprint (``kasmina.by_blueprint``), in the interpreter (compiled on a
GPU): against the float64 oracle at odd shapes of each dtype, dormant seeds bit for bit x, an id outside the registry
flagged NaN without touching the other seeds, and groups left empty in a program's run of seeds."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover
from kprof.kernels.kasmina import by_blueprint

F = discover()["kasmina"]
TILES = (
    by_blueprint.BlueprintTile(16, 2, 4),
    by_blueprint.BlueprintTile(32, 4, 2),
    by_blueprint.BlueprintTile(16, 2, 16),
)


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return ((a.double() - ref).norm() / ref.norm()).item()


def _inputs(shape: tuple[int, ...], dtype: str, device: str) -> dict:
    inp = F.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    inp["x"] = inp["x"] + 3.0  # a mean far from zero: the sums must be shifted to keep the variance
    inp["lifecycle"][:3] = torch.tensor([0, 1, 2], dtype=torch.int8)[: inp["lifecycle"].shape[0]]  # every state
    return inp


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize(
    "shape", [(1, 7, 32), (17, 5, 20), (40, 9, 16), (3, 2, 6, 64)], ids=lambda s: "x".join(map(str, s))
)
@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"b{t.block_b}w{t.num_warps}s{t.seeds}")
def test_matches_the_oracle(tile, shape, dtype, device):
    inp = _inputs(shape, dtype, device)
    y_ref, t_ref = F.oracle(**inp)
    y, tele = by_blueprint.launch(**inp, tile=tile)
    tol = F.tolerances[dtype]
    assert _rel(y, y_ref) < tol and _rel(tele, t_ref) < tol
    if shape[0] > 1:  # the variance itself, seed by seed (one row has none)
        assert ((tele[:, 1].double() - t_ref[:, 1]).abs() / t_ref[:, 1].abs()).max().item() < tol
    s, c = shape[-2], shape[-1]
    dormant = inp["lifecycle"] == 0
    assert torch.equal(y.view(-1, s, c)[:, dormant], inp["x"].view(-1, s, c)[:, dormant])  # copied, never multiplied


def test_an_id_outside_the_registry_is_nan_and_the_others_are_not(device):
    shape = (20, 9, 32)
    inp = _inputs(shape, "bf16", device)
    inp["blueprint_id"][[1, 4]] = torch.tensor([99, -1], dtype=torch.int32)
    inp["lifecycle"][4] = 0  # a dormant seed is flagged too
    y, tele = by_blueprint.launch(**inp, tile=TILES[0])
    y3 = y.view(-1, 9, 32)
    assert torch.isnan(y3[:, [1, 4]]).all() and torch.isnan(tele[[1, 4]]).all()
    rest = [i for i in range(9) if i not in (1, 4)]
    y_ref, t_ref = F.oracle(**inp | {"blueprint_id": inp["blueprint_id"].clamp(0, 7)})
    assert _rel(y3[:, rest], y_ref.view(-1, 9, 32)[:, rest]) < F.tolerances["bf16"]
    assert _rel(tele[rest], t_ref[rest]) < F.tolerances["bf16"]


def test_every_seed_on_one_blueprint_or_dormant(device):
    """Most programs' groups are empty: they must write nothing and leave the others' seeds alone."""
    shape = (5, 11, 16)
    inp = _inputs(shape, "fp16", device)
    inp["blueprint_id"].fill_(3)
    inp["lifecycle"][::2] = 0
    y_ref, t_ref = F.oracle(**inp)
    y, tele = by_blueprint.launch(**inp, tile=TILES[2])
    assert _rel(y, y_ref) < F.tolerances["fp16"] and _rel(tele, t_ref) < F.tolerances["fp16"]


def test_a_tile_the_kernel_cannot_take_is_refused(device):
    inp = F.make_inputs((4, 3, 16), "bf16", device, seed=1)
    with pytest.raises(ValueError, match="power of two"):
        by_blueprint.launch(**inp, tile=by_blueprint.BlueprintTile(16, 2, 3))
