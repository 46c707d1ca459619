"""The matrix families' pinned decode tiles (``tiles.PinnedTiles``): how a shape finds its class, that each
table covers every class with a config its autotuner knows, that the wrappers launch the pinned config up
to the table's last row class and the autotuner's beyond, and every pinned tile against the float64
oracle at odd shapes."""

from __future__ import annotations

import itertools

import pytest
import torch

from kprof.kernels import discover
from kprof.kernels.lib import launching, tiles
from kprof.kernels.rmsnorm_linear import fused
from kprof.kernels.swiglu import tuned

TABLES = {
    "swiglu": (tuned.DECODE_TILES, tuned.autotuned_kernel),
    "rmsnorm_linear": (fused.DECODE_TILES, fused.autotuned),
}


def _key(config) -> tuple:
    return tuple(sorted(config.kwargs.items())), config.num_warps, config.num_stages


def test_a_shape_takes_the_next_row_class_up_and_the_nearest_columns():
    table = tiles.PinnedTiles(
        rows=(1, 16),
        cols=(100, 300),
        table={
            (1, 100): (16, 32, 32, 4, 2),
            (1, 300): (16, 64, 32, 4, 2),
            (16, 100): (32, 32, 64, 4, 3),
            (16, 300): (64, 64, 64, 8, 3),
        },
    )
    assert table.config(1, 120).kwargs["BLOCK_N"] == 32
    assert table.config(1, 260).kwargs["BLOCK_N"] == 64
    assert table.config(1, 200).kwargs["BLOCK_N"] == 32  # a tie takes the narrower class
    assert table.config(2, 100).kwargs["BLOCK_M"] == 32  # rows between classes take the next class up
    assert table.config(16, 5000).num_warps == 8  # past the widest class: the widest
    assert table.config(17, 100) is None  # past the last row class: not pinned


@pytest.mark.parametrize("family", sorted(TABLES))
def test_every_class_has_a_config_its_autotuner_knows(family):
    table, autotuner = TABLES[family]
    assert set(table.table) == set(itertools.product(table.rows, table.cols))
    known = {_key(c) for c in autotuner.configs}
    for m, n in table.table:
        assert _key(table.config(m, n)) in known, f"{family} ({m}, {n}) pins a config the autotuner does not time"


def _swiglu_launch(m: int, k: int, n: int, dtype: str, device: str, **kw) -> tuple[dict, torch.Tensor, torch.Tensor]:
    fam = discover()["swiglu"]
    inputs = fam.make_inputs((m, k, n), dtype, device, seed=torch.seed() % 2**31)
    y = torch.full((m, n), float("nan"), dtype=inputs["x"].dtype, device=device)
    meta, _ = tuned.launch_tuned(inputs["x"], inputs["w_gate"], inputs["w_up"], y, **kw)
    return meta, y, fam.oracle(**inputs)


def _product_launch(m: int, k: int, n: int, dtype: str, device: str, **kw) -> tuple[dict, torch.Tensor, torch.Tensor]:
    fam = discover()["rmsnorm_linear"]
    inputs = fam.make_inputs((m, k, n), dtype, device, seed=torch.seed() % 2**31)
    x, w, b = inputs["x"], inputs["w"], inputs["b"]
    y = torch.full((m, n), float("nan"), dtype=x.dtype, device=device)
    meta, _ = fused.launch_product(x, w, b, y, inputs["eps"], **{"norm": 0, **kw})
    return meta, y, x.double() @ w.double() + b.double()


LAUNCHES = {"swiglu": _swiglu_launch, "rmsnorm_linear": _product_launch}


def _check(y: torch.Tensor, ref: torch.Tensor, tol: float, what: str) -> None:
    assert not torch.isnan(y).any(), f"{what}: output not written everywhere"
    err = float((y.double() - ref).norm() / ref.norm())
    assert err <= tol, f"{what}: rel err {err:.2e} (tolerance {tol})"


def _autotuned(family: str, meta: dict) -> bool:
    """``meta`` is what the autotuner ran: under the interpreter (where it cannot time) its stand-in config,
    on a GPU one of its configs."""
    if launching.interpreting():
        return meta == {"swiglu": tuned.INTERPRETER_CONFIG, "rmsnorm_linear": fused.INTERPRETER_CONFIG}[family]
    return any(meta == c.kwargs for c in TABLES[family][1].configs)


@pytest.mark.parametrize("family", sorted(TABLES))
def test_the_wrappers_launch_the_pinned_tiles_up_to_the_last_row_class(family, device):
    table, _ = TABLES[family]
    tol = discover()[family].tolerances["bf16"]
    for m, n in ((3, 29), (table.rows[-1], 45)):
        meta, y, ref = LAUNCHES[family](m, 24, n, "bf16", device)
        assert meta == table.config(m, n).kwargs
        _check(y, ref, tol, f"{family} pinned at {m}x24x{n}")
    for m, dtype, kw in ((table.rows[-1] + 1, "bf16", {}), (3, "bf16", {"autotune": True}), (3, "fp32", {})):
        meta, y, ref = LAUNCHES[family](m, 24, 29, dtype, device, **kw)
        assert _autotuned(family, meta), f"{family} {m} rows {dtype} {kw}: ran {meta}, not an autotuned config"
        _check(y, ref, discover()[family].tolerances[dtype], f"{family} autotuned at {m}x24x29 {dtype}")


def test_fp32_is_not_pinned():
    """The tables were measured for 16-bit inputs; fp32 tiles need twice the shared memory (two of swiglu's
    pinned tiles do not fit an H100's in fp32)."""
    for table, _ in TABLES.values():
        assert table.config(1, 5504, 2) is not None
        assert table.config(1, 5504, 4) is None


def test_the_products_that_scale_rows_in_the_kernel_are_not_pinned(device):
    if not launching.interpreting():
        pytest.skip("which config the autotuner picks on a GPU is its own; the interpreter shows the path taken")
    meta, _, _ = _product_launch(3, 24, 29, "fp32", device, norm=1)
    assert meta == fused.INTERPRETER_CONFIG


def _pinned(family: str) -> list:
    table, _ = TABLES[family]
    seen: dict[tuple, object] = {}
    for m, n in table.table:
        seen.setdefault(_key(table.config(m, n)), table.config(m, n))
    return list(seen.values())


CASES = [(f, c) for f in sorted(TABLES) for c in _pinned(f)]


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])  # the dtypes the tiles are pinned for
@pytest.mark.parametrize(
    "family,config", CASES, ids=[f"{f}-{'x'.join(str(v) for v in list(c.kwargs.values())[:3])}" for f, c in CASES]
)
def test_every_pinned_tile_matches_the_oracle(family, config, dtype, device):
    """Odd sizes: edge tiles in every direction, K not a multiple of the tile's depth."""
    tol = discover()[family].tolerances[dtype]
    for m, k, n in ((5, 37, 45), (config.kwargs["BLOCK_M"] + 3, 70, config.kwargs["BLOCK_N"] + 9)):
        meta, y, ref = LAUNCHES[family](m, k, n, dtype, device, config=config)
        assert meta == config.kwargs
        _check(y, ref, tol, f"{family} {meta} at {m}x{k}x{n} {dtype}")
