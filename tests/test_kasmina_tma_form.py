"""The TMA form of kasmina's kernel that ``benchmarks/kasmina_copy.py --tma`` races (``benchmarks/kasmina_tma.py``,
not shipped) computes what the float64 oracle does, in the interpreter, so its race times a right answer."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover

TOLERANCE = {"bf16": 2e-2, "fp16": 4e-3}


@pytest.fixture
def kasmina_tma(monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "benchmarks"))
    import kasmina_tma

    return kasmina_tma


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize(("shape", "block_b"), [((48, 7, 16), 16), ((64, 5, 32), 32), ((32, 3, 128), 16)])
def test_the_tma_form_matches_the_oracle(kasmina_tma, device, shape, block_b, dtype):
    fam = discover()["kasmina"]
    inp = fam.make_inputs(shape, dtype, device, seed=sum(shape) + block_b)
    y_ref, t_ref = fam.oracle(**inp)
    y, t = kasmina_tma.launch(**inp, block_b=block_b, num_warps=4, stages=2)
    assert ((y.double() - y_ref).norm() / y_ref.norm()).item() < TOLERANCE[dtype]
    assert ((t.double() - t_ref).norm() / t_ref.norm()).item() < TOLERANCE[dtype]
    dormant = inp["lifecycle"] == 0
    c = shape[2]
    x3, y3 = inp["x"].view(shape[0], shape[1], c), y.view(shape[0], shape[1], c)
    assert torch.equal(y3[:, dormant], x3[:, dormant])  # a product by I in fp32: bit for bit x


def test_the_tma_form_refuses_a_partial_tile(kasmina_tma, device):
    inp = discover()["kasmina"].make_inputs((40, 3, 32), "bf16", device, seed=1)
    with pytest.raises(ValueError, match="multiple of the tile"):
        kasmina_tma.launch(**inp, block_b=16)
