"""Behaviour of the catalog's versions beyond matching the oracle: bad input raises ValueError saying
what is wrong, strided and batched inputs, out= buffers, the tuned configs, kasmina's lifecycle states."""

from __future__ import annotations

import itertools

import pytest
import torch

from kprof.kernels import discover
from kprof.kernels.lib.gated import FAST_MEMORY_MID_ROWS, FAST_MEMORY_ROWS
from tests.compile_child import child_json

F = discover()


def _triton(family):
    return [p.name for p in F[family].triton_providers()]


# ------------------------------------------------------------------------------------------ bad input
def _bad_inputs(device):
    f32, i32 = torch.float32, torch.int32
    x8 = torch.randn(4, 8, device=device)
    return {
        "add_rmsnorm": [
            (
                dict(x=torch.ones(4, 8, dtype=i32, device=device), residual=x8, weight=torch.randn(8, device=device)),
                "dtype",
            ),
            (
                dict(x=x8, residual=torch.randn(4, 7, device=device), weight=torch.randn(8, device=device)),
                "residual has shape",
            ),
            (dict(x=x8, residual=x8.half(), weight=torch.randn(8, device=device)), "differs"),
            (dict(x=x8, residual=x8, weight=torch.randn(9, device=device)), "weight has shape"),
            (
                dict(
                    x=torch.randn(0, 8, device=device),
                    residual=torch.randn(0, 8, device=device),
                    weight=torch.randn(8, device=device),
                ),
                "empty",
            ),
            (dict(x=x8, residual=x8, weight=torch.randn(8, device="meta")), "device"),
        ],
        "silu_mul": [
            (dict(x=torch.randn(4, 7, device=device)), "even"),
            (dict(x=torch.ones(4, 8, dtype=i32, device=device)), "dtype"),
            (dict(x=[1.0, 2.0]), "torch tensor"),
        ],
        "swiglu": [
            (
                dict(x=x8, w_gate=torch.randn(7, 5, device=device), w_up=torch.randn(7, 5, device=device)),
                "w_gate has shape",
            ),
            (
                dict(x=x8, w_gate=torch.randn(8, 5, device=device), w_up=torch.randn(8, 6, device=device)),
                "w_up has shape",
            ),
            (
                dict(
                    x=x8,
                    w_gate=torch.randn(8, 5, device=device, dtype=torch.float16),
                    w_up=torch.randn(8, 5, device=device),
                ),
                "differs",
            ),
        ],
        "rmsnorm_linear": [
            (dict(x=x8, g=torch.randn(7, device=device), w=torch.randn(8, 5, device=device)), "g has shape"),
            (dict(x=x8, g=torch.randn(8, device=device), w=torch.randn(7, 5, device=device)), "w has shape"),
            (
                dict(
                    x=x8,
                    g=torch.randn(8, device=device),
                    w=torch.randn(8, 5, device=device),
                    b=torch.randn(4, device=device),
                ),
                "b has shape",
            ),
        ],
        "kasmina": [
            (
                dict(
                    x=torch.randn(2, 3 * 16, device=device),
                    lifecycle=torch.zeros(3, dtype=f32, device=device),
                    blueprint_id=torch.zeros(3, dtype=i32, device=device),
                    alpha=torch.zeros(3, device=device),
                    weights=torch.randn(2, 16, 16, device=device),
                    bias=torch.randn(2, 16, device=device),
                ),
                "lifecycle must be",
            ),
            (
                dict(
                    x=torch.randn(2, 50, device=device),
                    lifecycle=torch.zeros(3, dtype=torch.int8, device=device),
                    blueprint_id=torch.zeros(3, dtype=i32, device=device),
                    alpha=torch.zeros(3, device=device),
                    weights=torch.randn(2, 16, 16, device=device),
                    bias=torch.randn(2, 16, device=device),
                ),
                "S\\*C",
            ),
            (
                dict(
                    x=torch.randn(2, 48, device=device),
                    lifecycle=torch.zeros(3, dtype=torch.int8, device=device),
                    blueprint_id=torch.zeros(2, dtype=i32, device=device),
                    alpha=torch.zeros(3, device=device),
                    weights=torch.randn(2, 16, 16, device=device),
                    bias=torch.randn(2, 16, device=device),
                ),
                "one entry per seed",
            ),
            (
                dict(
                    x=torch.randn(2, 48, device=device),
                    lifecycle=torch.zeros(3, dtype=torch.int8, device=device),
                    blueprint_id=torch.zeros(3, dtype=i32, device=device),
                    alpha=torch.zeros(3, device=device),
                    weights=torch.randn(2, 16, 15, device=device),
                    bias=torch.randn(2, 16, device=device),
                ),
                "NB, C, C",
            ),
        ],
    }


@pytest.mark.parametrize("family", ["add_rmsnorm", "silu_mul", "swiglu", "rmsnorm_linear", "kasmina"])
def test_bad_input_raises_value_error(family, device):
    for kwargs, pattern in _bad_inputs(device)[family]:
        for name in _triton(family):
            with pytest.raises(ValueError, match=pattern):
                F[family].providers[name].fn(**kwargs)


@pytest.mark.parametrize("family", ["add_rmsnorm", "silu_mul", "gelu_mul", "swiglu", "rmsnorm_linear", "kasmina"])
def test_cpu_tensor_without_interpreter_is_a_clear_error(family, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    shape = F[family].sweep("interpreter").shapes[1]
    inputs = F[family].make_inputs(shape, "fp32", "cpu", seed=0)
    for name in _triton(family):
        with pytest.raises(ValueError, match="CUDA tensor"):
            F[family].providers[name].fn(**inputs)


# ----------------------------------------------------------------------------------- layouts and out=
@pytest.mark.parametrize("provider", _triton("add_rmsnorm"))
def test_add_rmsnorm_strided_rows_and_out(provider, device):
    fam = F["add_rmsnorm"]
    big = fam.make_inputs((5, 700), "fp32", device, seed=11)
    x, r = big["x"][:, 13 : 13 + 411], big["residual"][:, 100 : 100 + 411]  # rows 700 apart
    w = big["weight"][:411].contiguous()
    y_ref, h_ref = fam.oracle(x, r, w, 1e-6)
    out = (torch.full_like(x, float("nan")).contiguous(), torch.full_like(x, float("nan")).contiguous())
    y, h = fam.providers[provider].fn(x, r, w, 1e-6, out=out)
    assert y.data_ptr() == out[0].data_ptr() and h.data_ptr() == out[1].data_ptr()
    assert torch.allclose(y.double(), y_ref, rtol=1e-5, atol=1e-5) and torch.allclose(h.double(), h_ref, atol=1e-5)
    with pytest.raises(ValueError, match="pair"):
        fam.providers[provider].fn(x, r, w, 1e-6, out=out[0])


@pytest.mark.parametrize("family", ["silu_mul", "gelu_mul"])
def test_gated_strided_rows_and_batches(family, device):
    fam = F[family]
    buf = fam.make_inputs((3, 4, 300), "fp32", device, seed=12)["x"]
    x = buf[..., :200]  # gate | up taken from a wider buffer: row stride 300
    ref = fam.oracle(x)
    for name in _triton(family):
        y = fam.providers[name].fn(x)
        assert y.shape == (3, 4, 100)
        assert torch.allclose(y.double(), ref, rtol=1e-5, atol=1e-6), name


def test_swiglu_and_rmsnorm_linear_take_transposed_weights_and_no_bias(device):
    sw = F["swiglu"]
    inp = sw.make_inputs((5, 48, 40), "fp32", device, seed=13)
    wg_t = inp["w_gate"].t().contiguous().t()  # same values, stored [ff, d]
    ref = sw.oracle(**inp)
    for name in _triton("swiglu"):
        y = sw.providers[name].fn(inp["x"], wg_t, inp["w_up"])
        assert torch.allclose(y.double(), ref, rtol=1e-4, atol=1e-5), name
    rl = F["rmsnorm_linear"]
    inp = rl.make_inputs((9, 40, 24), "fp32", device, seed=14)
    inp["b"] = None
    ref = rl.oracle(**inp)
    # a version whose own supports() refuses fp32 (the 16-bit TMA decode one) is skipped there by the harness too
    taken = [n for n in _triton("rmsnorm_linear") if rl.providers[n].unsupported_reason((9, 40, 24), "fp32") is None]
    assert "triton_tuned" in taken
    for name in taken:
        y = rl.providers[name].fn(**inp)
        assert torch.allclose(y.double(), ref, rtol=1e-4, atol=1e-5), name


def test_folded_weight_is_computed_from_the_weights_given(device):
    """Nothing derived from a weight is cached: each call folds what it is given, even after an update that
    bypasses the version counter (``.data``) or a freed weight's address being reused."""
    from kprof.kernels.rmsnorm_linear.fused import folded_weight

    g, w = torch.randn(8, device=device), torch.randn(8, 4, device=device)
    first = folded_weight(g, w)
    assert torch.allclose(first, g[:, None] * w)
    g.data.mul_(2.0)
    assert torch.allclose(folded_weight(g, w), g[:, None] * w)
    assert not torch.allclose(first, g[:, None] * w)


# -------------------------------------------------------------------------------------- tuned configs
@pytest.mark.parametrize("n", [1, 7, 1000, 1024, 4096, 5120, 8192, 16384, 65536])
@pytest.mark.parametrize("n_rows", [1, 64, 16384])
def test_add_rmsnorm_config_is_launchable(n, n_rows):
    from kprof.kernels.add_rmsnorm.one_row import MAX_BLOCK_BYTES
    from kprof.kernels.add_rmsnorm.tuned import MAX_ONE_BLOCK_BYTES, choose_config

    for es in (2, 4):
        cfg = choose_config(n, es, n_rows)
        assert cfg.num_warps in (1, 2, 4, 8, 16, 32) and cfg.block_n & (cfg.block_n - 1) == 0
        if cfg.kernel == "rows":  # many rows: registers up to 4 KB rows; few: one_row's one block, up to 32 KB
            limit = MAX_ONE_BLOCK_BYTES if n_rows >= 16384 else MAX_BLOCK_BYTES
            assert cfg.block_n >= n and cfg.block_n * es <= limit
        elif cfg.kernel == "cooperative":  # many rows of 128 KB or more: 32 elements a thread, chunks cover the row
            assert n * es >= 128 * 1024 and cfg.block_n == 32 * 32 * cfg.num_warps
            assert cfg.splits * cfg.block_n >= n > (cfg.splits - 1) * cfg.block_n
            assert choose_config(n, es, n_rows, cooperative=False).kernel != "cooperative"
        else:
            assert cfg.block_n * es <= 16 * 1024


@pytest.mark.parametrize("h", [1, 333, 4096, 11008, 40000])
@pytest.mark.parametrize("n_rows", [1, 64, 16384])
def test_gated_config_covers_rows_and_fills_the_gpu(h, n_rows):
    from kprof.kernels.lib.gated import choose_config

    cfg = choose_config(h, 2, n_rows)
    assert cfg.block_h & (cfg.block_h - 1) == 0 and cfg.rows == 1
    assert cfg.num_warps * 32 <= max(32, cfg.block_h)
    if n_rows == 1 and h >= 4096:  # one token: columns are split so several SMs work
        assert cfg.block_h <= 2048
    assert cfg.flat == (n_rows == 16384)  # many rows: flat blocks of outputs across row ends


@pytest.mark.parametrize("family", ["silu_mul", "gelu_mul"])
@pytest.mark.parametrize("n_rows, h, pad", [(37, 333, 0), (5, 1000, 24), (3, 2048, 0)])
def test_gated_flat_blocks_cross_row_ends(family, n_rows, h, pad, device):
    """The flat launch of triton_tuned (chosen for many rows) on few rows, so CI reaches it: blocks of 2048
    outputs span several rows and end inside one; ``pad`` gives x rows a stride wider than 2H."""
    import importlib

    from kprof.kernels.lib import gated

    fam = F[family]
    kernels = importlib.import_module(f"kprof.kernels.{family}.kernels").KERNELS
    x = fam.make_inputs((n_rows, 2 * h + pad), "bf16", device, seed=n_rows + h)["x"][:, : 2 * h]
    y = torch.full((n_rows, h), float("nan"), dtype=x.dtype, device=device)
    gated.launch_tile(kernels, gated.Config(gated.FLAT_BLOCK, 1, gated.FLAT_WARPS, False, flat=True), x, y)
    ref = fam.oracle(x=x)
    assert not y.isnan().any()
    assert ((y.double() - ref).abs() / ref.abs().clamp_min(1e-2)).max().item() < 2e-2


def test_an_h200_takes_its_row_classes_at_their_edges_and_nothing_outside_them():
    """On an H200, 16-bit rows of each class of ``FAST_MEMORY_ROWS`` take the first class covering them, at every
    corner of the class; outside the bands (fewer or more rows, narrower or wider H), float32 and an H100 keep the
    H100's choice."""
    from kprof.kernels.lib.gated import FAST_MEMORY_FEW_ROWS, FAST_MEMORY_ROWS, choose_config

    for i, rule in enumerate(FAST_MEMORY_ROWS):
        own = 0  # corners where this class is the first to cover them: none would make it dead
        for n_rows, h in itertools.product(rule.rows, (rule.h[0], rule.h[0] + 7 & ~7, rule.h[1])):
            first = next((r for r in FAST_MEMORY_ROWS if r.covers(h, n_rows)), None)
            h100 = choose_config(h, 2, n_rows)
            assert choose_config(h, 2, n_rows, fast_memory=True) == (first.config(h) if first else h100), (i, n_rows, h)
            assert first is None or first.config(h) != h100, (i, n_rows, h)  # a class that changes nothing is dead
            assert choose_config(h, 4, n_rows, fast_memory=True) == choose_config(h, 4, n_rows), (i, n_rows, h)
            own += first is rule
        assert own, f"class {i} is behind the classes before it at all its corners"
    outside = [(768, 8192), (1100, 6144)]  # between the mid-row classes, and past them
    for band in (FAST_MEMORY_FEW_ROWS, FAST_MEMORY_MID_ROWS):
        low, high = min(r.rows[0] for r in band), max(r.rows[1] for r in band)
        narrow, wide = min(r.h[0] for r in band), max(r.h[1] for r in band)
        middle = (low + high) // 2
        outside += [(high + 1, 4096), (middle, narrow - 1024), (middle, wide + 1024)] + [(low - 1, 4096)] * (low > 1)
    for n_rows, h in outside:
        assert choose_config(h, 2, n_rows, fast_memory=True) == choose_config(h, 2, n_rows), (n_rows, h)
    # the whole-row classes take the row in one power-of-two block, and only rows of 16-byte vectors
    whole = choose_config(6152, 2, 512, fast_memory=True)
    assert (whole.block_h, whole.num_warps, whole.cols_const) == (8192, 16, True)
    assert choose_config(6151, 2, 512, fast_memory=True) == choose_config(6151, 2, 512)
    # the one at H 7169-8192 through the one-row kernel
    assert choose_config(8192, 2, 512, fast_memory=True).one_row
    # the column-tile classes only where H fills their tiles
    assert choose_config(5120, 2, 896, fast_memory=True).block_h == 1024
    assert choose_config(5632, 2, 896, fast_memory=True) == choose_config(5632, 2, 896)
    assert choose_config(5120, 2, 8, fast_memory=True).block_h == 1024
    assert choose_config(5632, 2, 8, fast_memory=True) == choose_config(5632, 2, 8)


# each class at its fewest rows and an H it takes: for the whole-row classes one inside the range that is not a power of
# two (the row's block part masked; a multiple of 8, they take no other), for the column-tile ones the widest multiple
# of their tile
ROW_CLASS_POINTS = [
    (i, r.rows[0], r.h[1] // r.block_h * r.block_h if r.block_h else (r.h[0] + r.h[1]) // 16 * 8)
    for i, r in enumerate(FAST_MEMORY_ROWS)
]


@pytest.mark.parametrize("family", ["silu_mul", "gelu_mul"])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("rule, n_rows, h", ROW_CLASS_POINTS)
def test_the_h200_row_class_launches_match_the_oracle(family, dtype, rule, n_rows, h, device):
    """Each H200 row class's launch (chosen for ``n_rows`` rows) at an H of its range, on 3 rows of fresh inputs
    strided 16 bytes past 2H (the launch does not depend on the row count)."""
    import importlib

    from kprof.kernels.lib import gated

    fam = F[family]
    kernels = importlib.import_module(f"kprof.kernels.{family}.kernels").KERNELS
    cfg = gated.choose_config(h, 2, n_rows, fast_memory=True)
    assert cfg == FAST_MEMORY_ROWS[rule].config(h)
    x = fam.make_inputs((3, 2 * h + 8), dtype, device, seed=torch.seed() % 2**31)["x"][:, : 2 * h]
    y = torch.full((3, h), float("nan"), dtype=x.dtype, device=device)
    gated.launch_tile(kernels, cfg, x, y)
    ref = fam.oracle(x=x)
    assert not y.isnan().any()
    assert ((y.double() - ref).norm() / ref.norm()).item() < fam.tolerances[dtype]


@pytest.mark.parametrize("family", ["silu_mul", "gelu_mul"])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize(("n_rows", "h"), [(5, 3072), (384, 7176), (30, 12288)])
def test_the_gated_ops_launch_an_h200_row_class_from_their_plan(family, dtype, n_rows, h, device, monkeypatch):
    """The ops on an H200 (``launching.fast_memory`` forced, 132 SMs), on rows strided 16 bytes past 2H: the first call
    makes a plan holding the class's launch (a few rows' H-compiled column tiles; the whole row through the one-row
    kernel; the one-wave tiles at 30 rows of H 12288), the second launches from it; both against the float64 oracle on
    fresh inputs."""
    from kprof.kernels import ops
    from kprof.kernels.lib import gated, launching
    from tests.kernels.ops_paths import triton_ops

    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    monkeypatch.setattr(launching, "sm_count", lambda t: 132)
    fam = F[family]
    op = {"silu_mul": ops.silu_and_mul, "gelu_mul": ops.gelu_tanh_and_mul}[family]
    if gated.one_wave(h, n_rows, 132):
        want = gated.FAST_MEMORY_ONE_WAVE.config(h)
    else:
        want = next(r for r in gated.FAST_MEMORY_ROWS if r.covers(h, n_rows)).config(h)
    x = fam.make_inputs((n_rows, 2 * h + 8), dtype, device, seed=torch.seed() % 2**31)["x"][:, : 2 * h]
    ref = fam.oracle(x=x)
    with triton_ops():
        outs = [op(x), op(x)]
        (plan,) = gated.PLANS.plans.values()
    assert plan[0].key[1] == want
    for y in outs:
        assert ((y.double() - ref).norm() / ref.norm()).item() < fam.tolerances[dtype]


def test_an_h200_takes_the_one_wave_tiles_where_they_fill_one_wave_and_the_class_after_them_would_not():
    """On an H200, 16-bit rows of H 12288-16384 (a multiple of 4096) take 4096-column tiles of 16 warps, H compiled in,
    from the rows where the few-rows class's 2048-column tiles would need more than one program an SM to the rows where
    the 4096-column ones still need at most one; a row fewer or more, other widths, float32 and an H100 keep theirs."""
    from kprof.kernels.lib.gated import FAST_MEMORY_ONE_WAVE, FAST_MEMORY_ROWS, choose_config

    wave = FAST_MEMORY_ONE_WAVE.config(16384)
    assert (wave.block_h, wave.num_warps, wave.cols_const, wave.one_row) == (4096, 16, True, False)
    for h, sms, first, last in ((16384, 132, 17, 33), (12288, 132, 23, 44), (16384, 114, 17, 28), (12288, 100, 17, 33)):
        for n_rows in range(first - 1, last + 2):
            got = choose_config(h, 2, n_rows, sms, fast_memory=True)
            class_after = next((r for r in FAST_MEMORY_ROWS if r.covers(h, n_rows)), None)
            taken = first <= n_rows <= last
            assert got == (FAST_MEMORY_ONE_WAVE.config(h) if taken else class_after.config(h)), (h, sms, n_rows)
            assert choose_config(h, 2, n_rows, sms) != FAST_MEMORY_ONE_WAVE.config(h), (h, n_rows)
            assert choose_config(h, 4, n_rows, sms, fast_memory=True) == choose_config(h, 4, n_rows, sms)
    for h in (14336, 10240, 8192, 20480):  # not a multiple of 4096, or outside 12288-16384
        assert choose_config(h, 2, 32, fast_memory=True) != FAST_MEMORY_ONE_WAVE.config(h), h


# ------------------------------------------------------------------------------------------ kasmina
@pytest.mark.parametrize("provider", ["torch_loop", "torch_vectorised", "triton_branch_free", "triton_telemetry"])
def test_kasmina_lifecycle_states(provider, device):
    """Dormant seeds pass x through bit for bit; active seeds give the blueprint; grafting seeds blend."""
    fam = F["kasmina"]
    n_seeds, c = 6, 16
    inp = fam.make_inputs((20, n_seeds, c), "fp32", device, seed=15)
    inp["lifecycle"] = torch.tensor([0, 1, 2, 0, 1, 2], dtype=torch.int8, device=device)
    y, tele = fam.providers[provider].fn(**inp)
    xs, ys = inp["x"].view(20, n_seeds, c), y.view(20, n_seeds, c)
    ids = inp["blueprint_id"].long()
    for s in range(n_seeds):
        bp = xs[:, s].double() @ inp["weights"][ids[s]].double() + inp["bias"][ids[s]].double()
        state = int(inp["lifecycle"][s])
        if state == 0:
            assert torch.equal(ys[:, s], xs[:, s])
        expect = {
            0: xs[:, s].double(),
            1: bp,
            2: (1 - inp["alpha"][s].double()) * xs[:, s].double() + inp["alpha"][s].double() * bp,
        }[state]
        assert torch.allclose(ys[:, s].double(), expect, rtol=1e-5, atol=1e-5), (provider, s)
        assert torch.allclose(tele[s, 0].double(), ys[:, s].double().mean(), atol=1e-5)
        assert torch.allclose(tele[s, 1].double(), ys[:, s].double().var(unbiased=False), rtol=1e-4)


def test_kasmina_telemetry_over_many_row_blocks(device):
    """Chan's merge across row blocks: 300 rows walk several tiles per seed."""
    fam = F["kasmina"]
    inp = fam.make_inputs((300, 4, 32), "fp32", device, seed=16)
    inp["x"] = inp["x"] + 50.0  # a large mean: a naive E[y^2] - E[y]^2 would lose the variance
    _, tele = fam.providers["triton_telemetry"].fn(**inp)
    _, ref = fam.oracle(**inp)
    assert torch.allclose(tele.double(), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    "shape, dtype, precision, tile",
    [
        ((37, 5, 20), "bf16", None, (16, 2, 32)),  # up to 64 channels, under 256 rows
        ((257, 3, 48), "fp16", None, (64, 2, 64)),  # up to 64 channels from 256 rows
        ((259, 3, 100), "bf16", None, (32, 2, 128)),  # 65-128 channels from 256 rows
        ((33, 2, 130), "fp16", None, (32, 8, 256)),  # more than 128 channels
        ((3, 4, 24), "fp32", 2, (16, 4, 32)),  # fp32 up to 16 rows, its GPU products (tf32x3)
        ((41, 3, 40), "fp32", 2, (32, 2, 64)),  # fp32 beyond, up to 64 channels
        ((41, 3, 40), "fp32", 1, (32, 2, 64)),  # IEEE products
        ((67, 3, 30), "fp32", 2, (16, 2, 32)),  # fp32 from 64 rows (by state), up to 32 channels
        ((67, 3, 40), "fp32", 2, (16, 4, 64)),  # fp32 from 64 rows (by state), 33-64 channels, under 256 rows
        ((257, 2, 40), "fp32", 2, (32, 2, 64)),  # fp32 33-64 channels from 256 rows
        ((41, 3, 72), "fp32", 2, (16, 8, 128)),  # fp32, 65-128 channels, under 256 rows
        ((257, 2, 72), "fp32", 2, (32, 4, 32)),  # fp32, 65-128 channels from 256 rows: 32 blueprint rows a step
        ((35, 2, 130), "fp32", 2, (32, 8, 32)),  # fp32 beyond 128 channels: 32 blueprint rows a step
    ],
)
def test_kasmina_telemetry_kernel_at_each_tile_class(shape, dtype, precision, tile, device):
    """Every (rows, channels, dtype) class of ``branch_free.tile_for`` with telemetry, and both fp32 product
    precisions, against the float64 oracle at odd sizes (rows past a tile, channels past a power of two)."""
    from kprof.kernels.kasmina import branch_free

    fam = F["kasmina"]
    inp = fam.make_inputs(shape, dtype, device, seed=sum(shape))
    inp["x"] = inp["x"] + 3.0  # a mean away from zero: the variance's merge is exercised
    *_, c = shape
    n_rows = shape[0]
    assert branch_free.tile_for(n_rows, c, inp["x"].dtype, True) == tile  # the class this case stands for
    y, tele = branch_free.launch(**inp, telemetry=True, precision=precision)
    y_ref, t_ref = fam.oracle(**inp)
    tol = fam.tolerances[dtype]
    assert ((y.double() - y_ref).norm() / y_ref.norm()).item() < tol
    assert ((tele.double() - t_ref).norm() / t_ref.norm()).item() < tol


@pytest.mark.parametrize("shape, dtype", [((70, 3, 20), "bf16"), ((53, 2, 72), "fp32"), ((41, 5, 16), "fp16")])
def test_kasmina_rows_split_over_programs_give_one_programs_telemetry(shape, dtype, device):
    """A seed's rows split over 1-4 programs: y the same bit for bit, the telemetry the oracle's, whichever program
    merges; calls repeat bit for bit and leave the ticket counters at zero."""
    from kprof.kernels.kasmina import branch_free
    from kprof.kernels.lib import launching

    fam = F["kasmina"]
    inp = fam.make_inputs(shape, dtype, device, seed=sum(shape) + 1)
    inp["x"] = inp["x"] + 5.0
    y_ref, t_ref = fam.oracle(**inp)
    y1, _ = branch_free.launch(**inp, telemetry=True, row_programs=1, block_b=16)
    for r in (2, 3, 4):
        y, tele = branch_free.launch(**inp, telemetry=True, row_programs=r, block_b=16)
        assert torch.equal(y, y1)
        assert ((tele.double() - t_ref).norm() / t_ref.norm()).item() < fam.tolerances[dtype]
        again = [branch_free.launch(**inp, telemetry=True, row_programs=r, block_b=16)[1] for _ in range(3)]
        assert all(torch.equal(t, tele) for t in again)
    assert not launching.ticket_counters(inp["x"], shape[1]).any()


@pytest.mark.parametrize(
    "shape, dtype, config",
    [
        ((257, 6, 40), "fp32", {}),  # the rule's own class: fp32, up to 64 channels, from 256 rows
        ((300, 5, 64), "fp32", {"row_programs": 3, "block_b": 32}),  # rows split over programs
        ((37, 5, 20), "bf16", {"by_state": True}),  # forced where the rule does not take it
        ((41, 3, 130), "fp16", {"by_state": True}),  # a blueprint wider than 128 channels
        ((35, 2, 130), "fp32", {"by_state": True, "precision": 2}),  # stepped in 32 rows (K_CHUNK), tf32x3
    ],
)
def test_kasmina_by_state_branch(shape, dtype, config, device):
    """The kernel's BY_STATE branch (dormant seeds copied, the blend folded into the blueprint) against the float64
    oracle, every state present; dormant seeds come out bit for bit x."""
    from kprof.kernels.kasmina import branch_free

    fam = F["kasmina"]
    inp = fam.make_inputs(shape, dtype, device, seed=sum(shape) + 3)
    inp["x"] = inp["x"] + 3.0  # a mean away from zero: the variance's merge is exercised
    n_seeds, c = shape[-2], shape[-1]
    inp["lifecycle"] = torch.arange(n_seeds, dtype=torch.int8, device=device) % 3
    cfg = branch_free.config_for(inp["x"], n_seeds, c, True, by_state=config.get("by_state"))
    assert cfg.by_state  # the branch this case stands for runs
    y, tele = branch_free.launch(**inp, telemetry=True, **config)
    y_ref, t_ref = fam.oracle(**inp)
    tol = fam.tolerances[dtype]
    assert ((y.double() - y_ref).norm() / y_ref.norm()).item() < tol
    assert ((tele.double() - t_ref).norm() / t_ref.norm()).item() < tol
    ys, xs = y.view(-1, n_seeds, c), inp["x"].view(-1, n_seeds, c)
    assert all(torch.equal(ys[:, s], xs[:, s]) for s in range(0, n_seeds, 3))


def test_kasmina_branches_by_state_only_in_fp32_from_64_rows_up_to_64_channels():
    from kprof.kernels.kasmina.branch_free import by_state_for

    bf16, fp32 = torch.bfloat16, torch.float32
    assert by_state_for(512, 64, fp32, True)
    assert by_state_for(64, 32, fp32, True)
    assert not by_state_for(63, 64, fp32, True)  # not raced under 64 rows
    assert not by_state_for(512, 65, fp32, True)
    assert not by_state_for(512, 64, bf16, True)  # slower at every default point in bf16 and fp16
    assert not by_state_for(512, 64, fp32, False)


def test_kasmina_splits_rows_only_where_seeds_are_fewer_than_sms():
    from kprof.kernels.kasmina.branch_free import row_programs_for

    bf16, fp32 = torch.bfloat16, torch.float32
    assert row_programs_for(512, 1000, 64, bf16, 64, 132) == 1  # seeds fill the GPU
    assert row_programs_for(512, 100, 32, bf16, 64, 132) == 4
    assert row_programs_for(64, 100, 64, bf16, 16, 132) == 4
    assert row_programs_for(64, 100, 64, fp32, 32, 132) == 2  # no more programs than row tiles
    assert row_programs_for(8, 100, 64, bf16, 16, 132) == 1
    assert row_programs_for(64, 100, 128, fp32, 16, 132) == 1  # fp32's 16-row tiles of 65-128 channels


@pytest.mark.gpu
def test_kasmina_triton_forward_makes_no_host_device_copies():
    """The seed's rule: no CPU<->GPU transfer during a forward pass (the loop reference makes two per seed)."""
    from torch.profiler import ProfilerActivity, profile

    fam = F["kasmina"]
    inp = fam.make_inputs((64, 100, 64), "bf16", "cuda", seed=17)
    counts = {}
    for name in ("triton_telemetry", "triton_branch_free", "torch_loop"):
        fam.providers[name].fn(**inp)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fam.providers[name].fn(**inp)
            torch.cuda.synchronize()
        counts[name] = sum(1 for e in prof.events() if "Memcpy DtoH" in e.name or "Memcpy HtoD" in e.name)
    assert counts["triton_telemetry"] == 0 and counts["triton_branch_free"] == 0
    assert counts["torch_loop"] >= 100  # the profiler does see copies when there are some


ALIGNMENT_PROBE = """
import json, re, torch
from kprof.kernels.rmsnorm_linear.fused import _rmsnorm_linear_kernel
from kprof.kernels.rmsnorm_linear.split_k import split_k_kernel as norm_split_k
from kprof.kernels.swiglu.split_k import _swiglu_split_k_kernel
from kprof.kernels.swiglu.tiled import _swiglu_tiled_kernel
from kprof.specialization import compile_for

def loads(kernel, args, **kw):
    ptx = compile_for(kernel, args, kw, 90).asm["ptx"]
    return sorted(set(re.findall(r"(?:ld\\.global|cp\\.async)\\.[\\w.]*", ptx)))

x, r = torch.empty(64, dtype=torch.bfloat16), torch.empty(64, dtype=torch.float32)
c = torch.zeros(64, dtype=torch.int32)
tile = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, IEEE=False, num_warps=8, num_stages=4)
decode = dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, num_warps=4, num_stages=3)
norm_decode = dict(HAS_BIAS=False, PRECISION=0, G_TOP=False, OUTLINED=False, FOLDED=False, **decode)
M, K, N = 1000, 1000, 3000
out = {}
for aligned in (False, True):
    out[f"swiglu/{aligned}"] = loads(_swiglu_tiled_kernel, (x, x, x, x, M, N, K, K, 1, N, 1), ALIGNED=aligned, **tile)
    out[f"rmsnorm_linear/{aligned}"] = loads(_rmsnorm_linear_kernel, (x, x, x, r, x, M, N, K, K, 1, N, 1, 1e-6),
                                             NORM=2, HAS_BIAS=False, ALIGNED=aligned, PDL=False, **tile)
    out[f"swiglu split-K/{aligned}"] = loads(_swiglu_split_k_kernel, (x, x, x, x, r, c, 8, N, K, 2, 512, K, 1, N, 1),
                                             IEEE=False, ALIGNED=aligned, MASK_ROWS=False, **decode)
    out[f"rmsnorm_linear split-K/{aligned}"] = loads(
        norm_split_k, (x, x, x, x, x, r, r, c, 8, N, K, 2, 512, K, 1, N, 1, 1e-6),
        ALIGNED=aligned, PIPELINED_X=False, **norm_decode)
    out[f"rmsnorm_linear split-K, x pipelined/{aligned}"] = loads(
        norm_split_k, (x, x, x, x, x, r, r, c, 8, N, K, 2, 512, K, 1, N, 1, 1e-6),
        ALIGNED=aligned, PIPELINED_X=True, **norm_decode)
    out[f"swiglu split-K, rows masked/{aligned}"] = loads(
        _swiglu_split_k_kernel, (x, x, x, x, r, c, 8, N, K, 2, 512, K, 1, N, 1),
        IEEE=False, ALIGNED=aligned, MASK_ROWS=True, **decode)
print(json.dumps(out))
"""


def test_alignment_promises_turn_scalar_tile_loads_into_async_copies():
    """K = 1000, N = 3000 (multiples of 8, not of 16): compiled for sm_90 on the CPU, the products load
    their bf16 weight tiles element by element unless the kernel is told the rows are 16-byte aligned; with
    ALIGNED the tiles move as cp.async copies (why 1000x1000x3000 ran 5-10x behind cuBLAS on the H100).
    Run with the GPU machine's Triton too: there (3.6) a promise written ``[8, 1]`` for the [rows, 1] row
    offsets left every load scalar, where the newer Triton CI installs vectorised it."""
    out = child_json(["-c", ALIGNMENT_PROBE])
    pipelined = ("rmsnorm_linear split-K, x pipelined", "swiglu split-K, rows masked")
    for fam in ("swiglu", "rmsnorm_linear", "swiglu split-K", "rmsnorm_linear split-K", *pipelined):
        assert "ld.global.b16" in out[f"{fam}/False"] and not any("cp.async" in s for s in out[f"{fam}/False"])
        assert any(s.startswith("cp.async.cg.shared.global") for s in out[f"{fam}/True"]), (fam, out[f"{fam}/True"])
    for fam in ("swiglu", "rmsnorm_linear", "swiglu split-K", "swiglu split-K, rows masked"):
        assert "ld.global.b16" not in out[f"{fam}/True"], (fam, out[f"{fam}/True"])
    # rmsnorm_linear's split-K kernel loads its x tiles into registers (a step ahead): 16-byte vectors; its
    # slice of g is one element a thread in the compiler's layout, so a b16 load remains there (with x
    # pipelined too, where x moves as cp.async copies)
    assert "ld.global.v4.b32" in out["rmsnorm_linear split-K/True"]


PDL_PROBE = """
import json, torch
from kprof.kernels.rmsnorm_linear.fused import _rmsnorm_linear_kernel
from kprof.kernels.rmsnorm_linear.rstd_epilogue import _row_rstd_kernel
from kprof.specialization import compile_for

x, r = torch.empty(64, dtype=torch.bfloat16), torch.empty(64, dtype=torch.float32)
tile = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, IEEE=False, ALIGNED=False, num_warps=4, num_stages=3)
out = {}
for pdl in (False, True):
    ptx = compile_for(_row_rstd_kernel, (x, r, 1000, 4096, 4096, 1, 1e-6), dict(ROWS=4, BLOCK_K=1024, PDL=pdl,
                                                                            num_warps=4)).asm["ptx"]
    out[f"rstd/{pdl}"] = [op for op in ("griddepcontrol.launch_dependents", "griddepcontrol.wait") if op in ptx]
    ptx = compile_for(_rmsnorm_linear_kernel, (x, x, x, r, x, 1000, 4096, 4096, 4096, 1, 4096, 1, 1e-6),
                      dict(NORM=2, HAS_BIAS=True, PDL=pdl, launch_pdl=pdl, **tile)).asm["ptx"]
    out[f"product/{pdl}"] = [op for op in ("griddepcontrol.launch_dependents", "griddepcontrol.wait") if op in ptx]
print(json.dumps(out))
"""


def test_programmatic_dependent_launch_compiles_to_griddepcontrol():
    """rmsnorm_linear's rstd kernel and its product, compiled for sm_90 on the CPU with the Triton CI
    installs: with PDL the rstd kernel lets its dependent start (launch_dependents) and the product waits for
    it (wait) before reading rstd; without PDL neither instruction is there."""
    out = child_json(["-c", PDL_PROBE])
    assert out == {
        "rstd/False": [],
        "product/False": [],
        "rstd/True": ["griddepcontrol.launch_dependents"],
        "product/True": ["griddepcontrol.wait"],
    }


def test_pdl_only_on_a_hopper_gpu_outside_the_interpreter(monkeypatch):
    import warnings
    from types import SimpleNamespace

    from kprof.kernels.lib.launching import pdl_launch, pdl_ready, prefer_shared_memory, set_carveout

    assert not pdl_ready(torch.empty(2))  # a CPU tensor: no launch attributes
    assert pdl_launch(False) == {} and pdl_launch(True) == {"launch_pdl": True}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prefer_shared_memory(SimpleNamespace(function=None))  # the interpreter's kernels have no function
    assert set_carveout(SimpleNamespace(function=None), 0) == "not called (no kernel function)"  # nothing set
    if torch.cuda.is_available():
        monkeypatch.setenv("TRITON_INTERPRET", "0")
        monkeypatch.setenv("KPROF_PDL", "0")
        assert not pdl_ready(torch.empty(2, device="cuda"))
        monkeypatch.setenv("KPROF_PDL", "1")
        assert pdl_ready(torch.empty(2, device="cuda")) == (torch.cuda.get_device_capability()[0] >= 9)


def test_alignment_promise_only_where_the_compiler_cannot_see_it():
    from kprof.kernels.lib.tiles import aligned8

    assert aligned8(1000, 3000, 1000, 3000)  # multiples of 8, not all of 16: promise
    assert not aligned8(2048, 5504, 2048, 5504)  # all multiples of 16: Triton knows more already
    assert not aligned8(1001, 3000, 1001, 3000)  # not aligned at all: no promise


@pytest.mark.parametrize("rows,programs", [(1, None), (4, None), (1, 3), (4, 1)])
def test_rstd_kernel_every_rows_per_program(rows, programs, device):
    """The row-statistics kernel of rmsnorm_linear/triton_rstd_epilogue with one and with several rows per
    program (large M uses 4), one block per program or fewer programs looping over the blocks: 7 rows
    leave the last block partly masked, 1500 columns the last chunk."""
    import triton

    from kprof.kernels.rmsnorm_linear.rstd_epilogue import _row_rstd_kernel

    x = torch.randn(7, 1500, device=device, dtype=torch.bfloat16) * 3 + 0.5
    r = torch.full((7,), float("nan"), device=device)
    _row_rstd_kernel[(programs or triton.cdiv(7, rows),)](
        x, r, 7, 1500, x.stride(0), x.stride(1), 1e-6, ROWS=rows, BLOCK_K=1024, PDL=False, num_warps=4
    )
    ref = torch.rsqrt(x.double().pow(2).mean(dim=1) + 1e-6)
    assert torch.allclose(r.double().cpu(), ref.cpu(), rtol=1e-5)


@pytest.mark.parametrize("tma", ["tail", "whole", False])
@pytest.mark.parametrize("m, k, n", [(37, 72, 40), (5, 64, 48), (37, 72, 96)])
def test_rstd_epilogue_product_both_ways(tma, m, k, n, device):
    """triton_rstd_epilogue's two products, each on odd sizes (last tiles partly outside): the persistent
    TMA kernel (descriptor loads pad with zeros, the store clips), with the last partial wave's tiles in parts
    or whole (under the interpreter with 4 programs: 37x72x40 makes 6 tiles, the last two in halves; 37x72x96
    makes 9, the last in quarters; 5x64x48 makes 2, no partial wave), and the pointer kernel it falls back to,
    checked against the float64 oracle with rows at different scales and a bias."""
    from kprof.kernels.lib.launching import tma_ready
    from kprof.kernels.rmsnorm_linear import rstd_epilogue as re

    fam = F["rmsnorm_linear"]
    inputs = fam.make_inputs((m, k, n), "bf16", device, seed=m + k + n)
    x, g, w, b = inputs["x"], inputs["g"], inputs["w"], inputs["b"]
    wf = re.folded_weight(g, w)
    rstd = torch.rsqrt(x.float().pow(2).mean(dim=1) + inputs["eps"])
    y = torch.full((m, n), float("nan"), dtype=x.dtype, device=device)
    assert tma_ready(x, wf, y)
    if tma:
        re.tma_product(x, wf, b, y, rstd, tail=tma == "tail")
    else:
        re.launch_product(x, wf, b, y, inputs["eps"], norm=2, rstd=rstd)
    ref = fam.oracle(**inputs)
    assert not y.isnan().any()
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("m, k, n", [(112, 296, 32), (37, 296, 160), (37, 520, 128)])
@pytest.mark.parametrize("bias", [True, False])
def test_rstd_epilogue_product_shares_its_last_wave_along_k(m, k, n, dtype, bias, device):
    """The TMA product with its last wave shared out along K (stream-K), under the interpreter with 4 programs and
    16x32x32 tiles: 112x296x32 makes 7 tiles and 37x296x160 15, a last wave of 3 (too many for halves), whose 3 x 10
    steps of K the 4 programs take in runs of 7-8, so every tile meets 2 programs' parts; 37x520x128 (12 tiles) has
    no partial wave and keeps whole tiles. Rows at different scales, with and without bias, against the float64
    oracle; the ticket counters are back at zero after the call."""
    from kprof.kernels.lib import launching
    from kprof.kernels.lib.tiles import persistent_sms, stream_k_parts
    from kprof.kernels.rmsnorm_linear import rstd_epilogue as re

    fam = F["rmsnorm_linear"]
    inputs = fam.make_inputs((m, k, n), dtype, device, seed=m + k + n)
    x, g, w = inputs["x"], inputs["g"], inputs["w"]
    b = inputs["b"] if bias else None
    wf = re.folded_weight(g, w)
    rstd = torch.rsqrt(x.float().pow(2).mean(dim=1) + inputs["eps"])
    y = torch.full((m, n), float("nan"), dtype=x.dtype, device=device)
    plan = re.tma_plan(m, k, n, persistent_sms(x), stream_k=True)
    bm, bn, bk = plan.tiles
    tiles = -(-m // bm) * -(-n // bn)
    assert plan.parts == stream_k_parts(tiles, plan.programs, -(-k // bk), re.STREAM_K_MIN_STEPS)
    assert (plan.parts > 0) == (tiles % plan.programs > plan.programs // 2) or not launching.interpreting()
    re.tma_product(x, wf, b, y, rstd, stream_k=True)
    ref = fam.oracle(**{**inputs, "b": b})
    assert not y.isnan().any()
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2
    assert (launching.ticket_counters(x, 16)[:16] == 0).all()


def test_stream_k_parts_bounds_the_programs_a_tile_meets():
    """``stream_k_parts``: no sharing without a partial wave, where the wave is cut in halves or quarters, or where
    runs would be too short; otherwise at least the number of programs whose runs (p * total // programs on) touch
    one tile, counted here for every tile of a few launches."""
    from kprof.kernels.lib.tiles import stream_k_parts

    assert stream_k_parts(264, 132, 32, 4) == 0  # two whole waves
    assert stream_k_parts(688, 132, 32, 4) == 0  # a last wave of 28: quarters
    assert stream_k_parts(352, 132, 4, 4) == 0  # runs of 2 steps
    for tiles, programs, steps in ((352, 132, 32), (7, 4, 10), (896, 132, 32), (1408, 132, 128), (15, 4, 17)):
        parts = stream_k_parts(tiles, programs, steps, 4)
        last = tiles % programs
        total = last * steps
        assert parts >= 2
        for t in range(last):
            owners = {
                p
                for p in range(programs)
                if p * total // programs < (t + 1) * steps and (p + 1) * total // programs > t * steps
            }
            assert len(owners) <= parts, (tiles, programs, steps, t, owners)


@pytest.mark.parametrize("m, k, n", [(2048, 8192, 5504), (8192, 8192, 5504), (2048, 8192, 28672), (2048, 2048, 5504)])
def test_the_stream_k_product_is_launched_with_its_register_cap(monkeypatch, m, k, n):
    """On a GPU (not the interpreter) every launch plan that shares its last wave along K, at any row count, caps the
    product's registers (``maxnreg``) so that it fits beside the rstd kernel's programs (a GPU test below checks the
    fit); plans with whole tiles launch uncapped."""
    from kprof.kernels.lib import launching
    from kprof.kernels.rmsnorm_linear import rstd_epilogue as re

    monkeypatch.setattr(launching, "interpreting", lambda: False)
    plan = re.tma_plan(m, k, n, 132)
    meta = re.tma_meta(plan, True, True)
    if plan.parts:
        assert meta["maxnreg"] == re.STREAM_K_MAX_REGISTERS and meta["STREAM_K"]
    else:
        assert "maxnreg" not in meta and not meta["STREAM_K"]
    assert bool(plan.parts) == ((m, k, n) != (2048, 2048, 5504))  # K 2048 saves too few steps to share
    whole = re.tma_meta(re.tma_plan(m, k, n, 132, stream_k=False), True, True)
    assert "maxnreg" not in whole


def test_tma_ready_refuses_what_a_descriptor_cannot_address(device):
    from kprof.kernels.lib.launching import tma_ready

    ok = torch.randn(8, 64, device=device, dtype=torch.bfloat16)
    assert tma_ready(ok, ok.t().contiguous())
    assert not tma_ready(ok.float())  # 32-bit: stays on the pointer kernel
    assert not tma_ready(torch.randn(8, 60, device=device, dtype=torch.bfloat16)[:, 1:])  # unaligned base
    assert not tma_ready(torch.randn(8, 60, device=device, dtype=torch.bfloat16).t())  # column-major


@pytest.mark.gpu
def test_swiglu_tail_in_parts_on_the_gpu():
    """On a GPU with the real tiles: 2048x256x5504 makes 688 tiles, which leave 688 mod SMs for a last wave
    (28 on an H100), done as quarter tiles, and 1000x256x3000 makes 192, which leave 60, done as halves;
    the result matches the float64 oracle, with and without the parts."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kprof.kernels.lib.launching import sm_count, tma_ready
    from kprof.kernels.lib.tiles import tail_split
    from kprof.kernels.swiglu import tuned

    fam = F["swiglu"]
    for (m, k, n), tiles, split in (((2048, 256, 5504), 688, 4), ((1000, 256, 3000), 192, 2)):
        inputs = fam.make_inputs((m, k, n), "bf16", "cuda", seed=11)
        x = inputs["x"]
        programs = sm_count(x)
        if tail_split(tiles, programs) != split or not tma_ready(x):
            pytest.skip(f"other tail parts with {programs} SMs (or no TMA)")
        w_int = tuned.interleaved_weights(inputs["w_gate"], inputs["w_up"])
        ref = fam.oracle(**inputs)
        for tail in (True, False):
            y = torch.full((m, n), float("nan"), dtype=x.dtype, device="cuda")
            tuned.launch_interleaved(x, w_int, y, persistent=True, tail=tail)
            assert not y.isnan().any()
            assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2


@pytest.mark.gpu
def test_rmsnorm_linear_tail_in_parts_on_the_gpu(monkeypatch):
    """On a GPU with the real tiles (128x256): 2048x256x11008 makes 688 tiles, which leave 688 mod SMs for a
    last wave (28 on an H100), done as quarter tiles, and 2048x256x2816 makes 176, which leave 44, done as
    halves; 2048x512x5504 makes 352, a last wave of 88, shared out along K where asked (stream-K, here with no
    least saving: the shipped rule keeps whole tiles at 8 K steps); the product matches the float64 oracle, with
    and without the parts, three calls in a row, after the rstd kernel (PDL where the GPU has it)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kprof.kernels.lib.launching import pdl_ready, sm_count, tma_ready
    from kprof.kernels.lib.tiles import persistent_sms, tail_split
    from kprof.kernels.rmsnorm_linear import rstd_epilogue as re

    fam = F["rmsnorm_linear"]
    for (m, k, n), tiles, split in (
        ((2048, 256, 11008), 688, 4),
        ((2048, 256, 2816), 176, 2),
        ((2048, 512, 5504), 352, 0),
    ):
        inputs = fam.make_inputs((m, k, n), "bf16", "cuda", seed=13)
        x, g, w, b = inputs["x"], inputs["g"], inputs["w"], inputs["b"]
        if tail_split(tiles, sm_count(x)) != split or not tma_ready(x):
            pytest.skip(f"other tail parts with {sm_count(x)} SMs (or no TMA)")
        wf = re.folded_weight(g, w)
        ref = fam.oracle(**inputs)
        for tail, stream_k in ((True, False), (False, False), (True, True)):
            monkeypatch.setattr(re, "STREAM_K_MIN_SAVED_STEPS", 0 if stream_k else re.STREAM_K_MIN_SAVED_STEPS)
            plan = re.tma_plan(m, k, n, persistent_sms(x), tail, stream_k)
            assert bool(plan.parts) == (stream_k and not split)  # the case runs what it names
            rstd = torch.empty(m, dtype=torch.float32, device="cuda")
            y = torch.full((m, n), float("nan"), dtype=x.dtype, device="cuda")
            pdl = pdl_ready(x)
            for _ in range(3):  # the shared tiles' counters must be back at zero for the next call
                re.launch_row_rstd(x, rstd, inputs["eps"], pdl=pdl)
                re.tma_product(x, wf, b, y, rstd, pdl=pdl, tail=tail, stream_k=stream_k)
                assert not y.isnan().any()
                assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2
                y.fill_(float("nan"))


@pytest.mark.gpu
def test_rmsnorm_linear_stream_k_fits_beside_the_rstd_kernel():
    """At 8192x8192x5504 with a bias the shipped rule shares the last wave along K (1408 tiles: 88 left on 132
    SMs). The op's two kernels as it launches them, three calls in a row, with and without the bias and with whole
    tiles: the product matches the float64 oracle, and one product program fits on an SM beside the rstd kernel's
    programs an SM (``overlapped_rstd_grid``), by registers and shared memory. Where it does not, the product cannot
    start while the rstd kernel runs and the two run one after the other (uncapped, the stream-K product with a bias
    took 208 registers a thread on Triton 3.6)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kprof.kernels.lib.launching import pdl_ready, sm_count, tma_ready
    from kprof.kernels.lib.tiles import persistent_sms
    from kprof.kernels.rmsnorm_linear import rstd_epilogue as re
    from kprof.occupancy import BlockShape, blocks_beside, limits_for

    m, k, n = 8192, 8192, 5504
    fam = F["rmsnorm_linear"]
    inputs = fam.make_inputs((m, k, n), "bf16", "cuda", seed=17)
    x, g, w, b = inputs["x"], inputs["g"], inputs["w"], inputs["b"]
    sms = persistent_sms(x)
    if not tma_ready(x) or not re.tma_plan(m, k, n, sms).parts:
        pytest.skip(f"no stream-K here ({sms} SMs, or no TMA)")
    pdl = pdl_ready(x)
    programs, meta = re.row_rstd_launch(m, k, sm_count(x) if pdl else 0, pdl)
    wf = re.folded_weight(g, w)
    ref = fam.oracle(**inputs)
    props = torch.cuda.get_device_properties(x.device)
    limits = limits_for(props.major, props.minor)

    def shape(kernel) -> BlockShape:
        return BlockShape(kernel.metadata.num_warps * 32, kernel.n_regs, kernel.metadata.shared)

    y = torch.full((m, n), float("nan"), dtype=x.dtype, device="cuda")
    for stream_k, bias in ((True, b), (True, None), (False, b)):  # the shipped rule, then what the grid never runs
        ref_y = ref if bias is not None else ref - b.double()
        for _ in range(3):
            rstd = torch.empty(m, dtype=torch.float32, device="cuda")
            product = re.tma_launcher(x, wf, bias, y, rstd, pdl=pdl, stream_k=stream_k)
            args = (x, rstd, m, k, x.stride(0), x.stride(1), float(inputs["eps"]))
            rstd_kernel = re.row_rstd_kernel[(programs,)](*args, **meta)
            product_kernel = product()
            assert ((y.double() - ref_y).norm() / ref_y.norm()).item() < 1e-2
            y.fill_(float("nan"))
        per_sm = -(-programs // sm_count(x))
        beside = blocks_beside((shape(product_kernel),), shape(rstd_kernel), limits)
        assert beside >= per_sm, (
            f"{beside} of the rstd kernel's {per_sm} programs an SM fit beside the product (stream-K {stream_k}, "
            f"bias {bias is not None}: {product_kernel.n_regs} registers a thread, "
            f"{product_kernel.metadata.shared} B shared)"
        )


@pytest.mark.gpu
@pytest.mark.parametrize("m, k, n", [(2048, 512, 1024), (1000, 1000, 3000), (40, 512, 256)])
def test_rmsnorm_linear_with_pdl_reads_this_calls_rstd(m, k, n, monkeypatch):
    """On a Hopper GPU triton_rstd_epilogue's product starts while the rstd kernel runs (PDL) and must wait
    for it before its epilogue. Calls back to back with rows of new scales each time: a product that read
    rstd too early would scale by the previous call's values (the allocator hands back the same buffer).
    TMA product (2048 and 1000 rows) and pointer product (40 rows); with PDL off (KPROF_PDL=0) as well."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kprof.kernels.lib import launching as _common

    fam = F["rmsnorm_linear"]
    fn = fam.providers["triton_rstd_epilogue"].fn
    for pdl in ("1", "0"):
        monkeypatch.setenv("KPROF_PDL", pdl)
        cases = [fam.make_inputs((m, k, n), "bf16", "cuda", seed=s) for s in range(6)]
        outs = [fn(**inputs) for inputs in cases]  # queued back to back, no synchronisation between
        for inputs, y in zip(cases, outs):
            ref = fam.oracle(**inputs)
            assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2, f"KPROF_PDL={pdl}"
        if pdl == "1" and _common.pdl_ready(cases[0]["x"]):
            assert _common._CARVED, "the rstd kernel's shared-memory carveout was not set"


def test_overlapped_rstd_grid_rule():
    """With PDL the rstd kernel runs one 4-warp program per SM up to 2048 rows (one row per block below
    1024 rows, else 4), two 8-warp programs per SM with 2-row blocks beyond; the kernel loops over blocks."""
    from kprof.kernels.rmsnorm_linear.rstd_epilogue import overlapped_rstd_grid

    assert overlapped_rstd_grid(8, 132) == (1, 132, 4)
    assert overlapped_rstd_grid(1000, 132) == (1, 132, 4)
    assert overlapped_rstd_grid(2048, 132) == (4, 132, 4)
    assert overlapped_rstd_grid(2049, 132) == (2, 264, 8)
    assert overlapped_rstd_grid(8192, 114) == (2, 228, 8)


def test_rmsnorm_linear_tma_tiles_rule():
    """The TMA product's tiles: halves with 4 stages, except from LONG_K_MIN_K with over LONG_K_MIN_WAVES waves
    of tiles (counted in TMA_CONFIG's tiles), where the whole-tile config runs."""
    from kprof.kernels.rmsnorm_linear import rstd_epilogue as re

    assert re.tma_tiles(2048, 11008, 2048, 132) == (re.TMA_CONFIG, re.TMA_SUBTILE)
    assert re.tma_tiles(8192, 28672, 4096, 132) == (re.TMA_CONFIG, re.TMA_SUBTILE)  # 54 waves, K under the bound
    assert re.tma_tiles(8192, 5504, re.LONG_K_MIN_K, 132) == (re.TMA_CONFIG, re.TMA_SUBTILE)  # 10.7 waves
    assert re.tma_tiles(8192, 28672, re.LONG_K_MIN_K, 132) == (re.LONG_K_CONFIG, re.LONG_K_SUBTILE)
    bm, bn = re.TMA_CONFIG[:2]
    at_bound = re.LONG_K_MIN_WAVES * 132  # tiles
    assert re.tma_tiles(bm * at_bound // 4, bn * 4, re.LONG_K_MIN_K, 132) == (re.TMA_CONFIG, re.TMA_SUBTILE)
    assert re.tma_tiles(bm * at_bound // 4 + bm, bn * 4, re.LONG_K_MIN_K, 132)[0] == re.LONG_K_CONFIG
    # halves need the tile width to split in two 16-byte-aligned column blocks
    assert not re.TMA_SUBTILE or re.TMA_CONFIG[1] % 16 == 0


def test_swiglu_tail_split_rule():
    """The last, partial wave of a persistent launch: quarters where it holds at most a quarter of the
    programs, halves where at most half, else whole tiles."""
    from kprof.kernels.lib.tiles import tail_split

    assert tail_split(688, 132) == 4  # 2048x2048x5504 on an H100: 28 tiles left
    assert tail_split(192, 132) == 2  # 1000x1000x3000: 60 left
    assert tail_split(200, 132) == 0  # 68 left: halves would be 136 parts
    assert tail_split(264, 132) == 0  # no partial wave
    assert tail_split(9, 0) == 0  # one program per tile


def test_swiglu_persistent_rule():
    """The interleaved kernel is persistent at every K under PLAIN_MIN_K and up to PLAIN_MIN_WAVES waves there;
    one tile per program only past both (counted in 128x128 output tiles on 132 SMs)."""
    from kprof.kernels.swiglu.tuned import PLAIN_MIN_K, PLAIN_MIN_WAVES, persistent_launch

    assert persistent_launch(2048, 11008, 2048, 132)  # 10.4 waves, the first rule's one-tile-per-program case
    assert persistent_launch(8192, 28672, 4096, 132)  # 108.6 waves, K under PLAIN_MIN_K
    assert persistent_launch(8192, 5504, PLAIN_MIN_K, 132)  # 20.8 waves
    assert not persistent_launch(8192, 11008, PLAIN_MIN_K, 132)  # 41.7 waves
    assert not persistent_launch(8192, 28672, 2 * PLAIN_MIN_K, 132)
    # the boundary: exactly PLAIN_MIN_WAVES waves stays persistent, one tile more does not
    tiles = PLAIN_MIN_WAVES * 132
    assert persistent_launch(128 * tiles // 8, 128 * 8, PLAIN_MIN_K, 132)
    assert not persistent_launch(128 * tiles // 8 + 128, 128 * 8, PLAIN_MIN_K, 132)
    assert persistent_launch(1000, 1000, PLAIN_MIN_K, 132)  # few waves: persistent whatever K


@pytest.mark.parametrize("mode", ["tile", "persistent", "persistent_tail", "lower", "lower_persistent"])
@pytest.mark.parametrize("m, k, n", [(37, 72, 40), (20, 40, 48), (5, 24, 56), (20, 64, 32)])
def test_swiglu_interleaved_kernel_on_odd_sizes(m, k, n, mode, device):
    """swiglu/triton_tuned's interleaved-weight TMA kernel, one tile per program, persistent (fewer programs
    than tiles, each walking several) and persistent with the last wave's tiles done in parts (under the
    interpreter with 4 programs: 37x72x40 makes 9 tiles, the last one in quarters; 20x40x48 makes 6, the
    last two in halves), and with a second block of rows under each tile (``lower``: 16 + 16 rows, so at 5 and
    20 rows the lower block lies wholly or partly outside): edge tiles partly outside (loads pad with zeros, the
    store clips), gate and up split from one product, checked against the float64 oracle; the interleaved copy is
    made from the weights as they are on each call."""
    from kprof.kernels.swiglu import tuned

    fam = F["swiglu"]
    inputs = fam.make_inputs((m, k, n), "bf16", device, seed=m * k + n)
    x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
    w_int = tuned.interleaved_weights(wg, wu)
    assert torch.equal(w_int[:, 0::2], wg) and torch.equal(w_int[:, 1::2], wu)
    y = torch.full((m, n), float("nan"), dtype=x.dtype, device=device)
    config = tuned.TMA_INTERPRETER_CONFIG + (16,) if mode.startswith("lower") else None
    persistent = mode not in ("tile", "lower")
    tuned.launch_interleaved(x, w_int, y, persistent=persistent, tail=mode == "persistent_tail", config=config)
    ref = fam.oracle(**inputs)
    assert not y.isnan().any()
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2
    wu.data.mul_(2)  # not cached: the next copy is made from the weights as they are now
    assert torch.equal(tuned.interleaved_weights(wg, wu)[:, 1::2], wu)


@pytest.mark.parametrize(
    "m, n, expected",
    [
        (2048, 768, (128, 64)),  # 96 tiles of 128x128 (0.73 of a wave); 132 of 192x64
        (1000, 768, (128, 64)),  # 72 of 192x64
        (2112, 768, (128, 64)),  # 132 of 192x64: the last count that fits
        (2113, 768, None),  # 144 of 192x64; 102 of 128x128 fit in one wave
        (4096, 768, (128, 128)),  # 192 of 128x128 (1.45 waves); 132 of 192x128
        (2048, 1536, (128, 128)),
        (1536, 1536, (128, 128)),  # 144 of 128x128 (a wave and 12); 96 of 192x128
        (4224, 768, (128, 128)),  # 132 of 192x128
        (4225, 768, None),  # 138 of 192x128
        (1024, 2048, None),  # 128 tiles of 128x128 fill one wave; 192 of 192x64
        (2048, 5504, None),  # many waves
    ],
)
def test_swiglu_one_wave_tiles_where_128_rows_do_not_fill_a_wave(m, n, expected, monkeypatch):
    """The interleaved kernel's plan on a GPU of 132 SMs takes tiles of 128 + 64 rows, one a program, where they fit
    in one wave: 64 output columns wide wherever those fit, else 128 where 128x128 tiles spill past one wave; else the
    persistent 128x128 tiles. Told the tiles or the persistence (an experiment), it keeps them."""
    from kprof.kernels.swiglu import tuned

    monkeypatch.setattr(tuned.launching, "interpreting", lambda: False)
    config = tuned.one_wave_config(m, n, 132)
    assert (config[:2] if config else None) == expected
    plan = tuned.interleaved_plan(m, 2048, n, 132)
    if expected:
        assert plan.lower == 64 and plan.programs == 0 and plan.split == 0 and not plan.subtile
        assert plan.tiles[:2] == expected and plan.grid(m, n) <= 132
    else:
        assert plan.lower == 0 and plan.tiles == tuned.PERSISTENT_CONFIG[:3] and plan.programs
    told = tuned.interleaved_plan(m, 2048, n, 132, persistent=True)
    assert told.lower == 0 and told.tiles == tuned.PERSISTENT_CONFIG[:3]


@pytest.mark.parametrize(
    "m, k, n, pairs",
    [
        (1000, 2048, 768, True),  # 72 tiles of 192x64: 55% of 132 SMs
        (2200, 2048, 768, True),  # 108 of 128x128: 82%
        (1536, 4096, 1536, True),  # 96 of 192x128: 73%
        (1900, 2048, 768, False),  # 120 of 192x64: 91%
        (2048, 2048, 768, False),  # 132 of 192x64
        (2048, 7168, 2048, False),  # 256 of 128x128: two waves
        (8192, 4096, 11008, False),
    ],
)
def test_swiglu_pairs_where_the_kernel_leaves_a_wave_underfilled(m, k, n, pairs, monkeypatch):
    """On a GPU (132 SMs), the interleaved weights take cuBLAS's one product then the pairs pass where the kernel's
    tiles make one wave under 90% full, and the kernel where they fill it or make more waves."""
    from kprof.kernels.swiglu import tuned

    monkeypatch.setattr(tuned.launching, "interpreting", lambda: False)
    assert tuned.underfilled_wave(m, k, n, 132) is pairs


# ------------------------------------------------------------------------- swiglu's decode tiles
def test_swiglu_decode_tiles_are_tried_only_for_few_rows():
    from kprof.kernels.swiglu import tuned

    every = tuned.CONFIGS + tuned.DECODE_CONFIGS
    few = tuned.prune_configs(every, {"M": tuned.DECODE_MAX_ROWS})
    many = tuned.prune_configs(every, {"M": tuned.DECODE_MAX_ROWS + 1})
    assert few == every
    assert many == tuned.CONFIGS and not any(tuned._is_decode_config(c) for c in many)
    assert all(tuned._is_decode_config(c) for c in tuned.DECODE_CONFIGS)


@pytest.mark.parametrize("index", range(3))
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_swiglu_decode_tiles_match_the_oracle(index, dtype, device):
    """Each decode tile, as the autotuner would launch it, at decode sizes none of its tiles divide."""
    from kprof.harness import check_correctness
    from kprof.kernels.swiglu import tuned
    from kprof.registry import Case

    cfg = tuned.DECODE_CONFIGS[index]
    pinned = ",".join(f"{k}={v}" for k, v in {**cfg.kwargs, "num_warps": cfg.num_warps}.items())
    fam = F["swiglu"]
    prov = fam.get_provider(f"triton_tiled[{pinned}]")
    for m, k, n in ((1, 263, 77), (3, 131, 45)):
        ins = fam.make_inputs((m, k, n), dtype, device, seed=m * 1000 + k)
        c = check_correctness(fam, prov, Case("swiglu", prov.name, (m, k, n), dtype), ins)
        assert c.ok, (cfg, m, k, n, c.note)
