"""The floors ``benchmarks/kasmina_copy.py`` times beside the copy of x, on which the results say where kasmina's
90%-of-copy target is out of reach: every tile of every floor must copy x exactly (the blueprint terms times a
zero add nothing), and a floor that reads blueprints must read the ones its seeds' ids name."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover


@pytest.fixture
def kasmina_copy(monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "benchmarks"))
    import kasmina_copy

    return kasmina_copy


@pytest.mark.parametrize(("shape", "dtype"), [((3, 7, 24), "bf16"), ((1, 13, 64), "fp32"), ((37, 5, 100), "fp16")])
def test_every_floor_tile_copies_x_exactly(kasmina_copy, shape, dtype, device):
    inp = discover()["kasmina"].make_inputs(shape, dtype, device, seed=sum(shape))
    out = torch.empty_like(inp["x"])
    floors = kasmina_copy.floor_candidates(inp, out)
    assert {name.split()[0] for name in floors} == set(kasmina_copy.FLOORS.values())
    for name, fn in floors.items():
        out.fill_(float("nan"))
        fn()
        assert torch.equal(out, inp["x"]), name


def test_a_floor_reads_the_blueprints_its_ids_name(kasmina_copy, device):
    """A NaN in the blueprint a seed's id names makes that seed's columns NaN (NaN times zero): the loads happen,
    and at the address the id gives; the other seeds stay exact."""
    inp = discover()["kasmina"].make_inputs((4, 3, 16), "fp32", device, seed=9)
    inp["blueprint_id"] = torch.tensor([1, 5, 1], dtype=torch.int32, device=device)
    inp["weights"][5].fill_(float("nan"))
    out = torch.empty_like(inp["x"])
    for name, fn in kasmina_copy.floor_candidates(inp, out).items():
        fn()
        cols = out.view(4, 3, 16)
        if name.startswith("copy"):
            assert torch.equal(out, inp["x"]), name
        else:
            assert cols[:, 1].isnan().all(), name
            assert torch.equal(cols[:, [0, 2]], inp["x"].view(4, 3, 16)[:, [0, 2]]), name
