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


# ---------------------------------------------------------------------------------------- the floor provider
def test_the_floor_provider_copies_x_and_is_run_never_checked(device):
    """``copy_through_ids`` is a floor: it returns x exactly (fresh random inputs at an odd shape), and the
    harness runs it without comparing it with the oracle (its output is not the layer's)."""
    import math

    from kprof.harness import check_correctness
    from kprof.registry import Case

    fam = discover()["kasmina"]
    prov = fam.providers["copy_through_ids"]
    assert prov.kind == "floor"
    shape = (5, 7, 40)
    inp = fam.make_inputs(shape, "bf16", device, seed=int(torch.randint(1 << 30, ())))
    assert torch.equal(prov.fn(**inp), inp["x"])
    corr = check_correctness(fam, prov, Case("kasmina", prov.name, shape, "bf16"), inp)
    assert corr.ok and math.isnan(corr.rel_err)


def test_the_floor_keeps_its_fastest_tile_even_with_races_off(monkeypatch, device):
    """A floor at a slower tile than its best would overstate what is out of reach: it keeps the fastest tile
    even where the default is within the 2% an op's race forgives, and races whatever ``KPROF_ROUTE_RACE`` says;
    the tile it keeps is the one it then launches, and y is still x."""
    import itertools

    from kprof.kernels.kasmina import floor
    from kprof.kernels.lib import routes

    fam = discover()["kasmina"]
    inp = fam.make_inputs((6, 9, 24), "fp32", device, seed=int(torch.randint(1 << 30, ())))
    options = floor.tiles(6, 24)
    assert len(options) > 1 and {t[0] for t in options} == {1, 4}  # rows up to the 8 a power of two above 6
    times = [10.0] * len(options)
    times[-1] = 9.95  # the last tile 0.5% faster than the default (the first)
    it = itertools.cycle(times)
    monkeypatch.setattr(routes, "_RACES", [])
    monkeypatch.setattr(routes, "can_time", lambda on: True)
    monkeypatch.setenv("KPROF_ROUTE_RACE", "0")
    monkeypatch.setattr(floor, "_tile_race", routes.RouteRace("floor test", lambda fn: next(it), 0.0))
    launched = []
    real = floor.launch_tile
    monkeypatch.setattr(floor, "launch_tile", lambda *a, **kw: launched.append(a[4]) or real(*a, **kw))
    y = fam.providers["copy_through_ids"].fn(**inp)
    assert torch.equal(y, inp["x"])
    [decision] = floor._tile_race.decisions()
    assert decision.chosen == floor._name(options[-1]) != decision.default
    assert launched[-1] == options[-1]
