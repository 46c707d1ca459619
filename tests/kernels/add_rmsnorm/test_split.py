"""add_rmsnorm over few wide rows split across programs (two launches), and triton_tuned's configuration
choice: against the float64 oracle in every dtype, odd widths with short and empty last chunks, strided
rows; the choice rule's properties; the tuned version and the ops API reaching the split path.

On a machine without a GPU the kernels run in Triton's interpreter. Inputs are fresh random data (never
zeros); outputs are poisoned with NaN first.
"""

from __future__ import annotations

import pytest
import torch
import triton

from kprof.kernels import discover, ops
from kprof.kernels.add_rmsnorm import op_plan, split, tuned
from kprof.kernels.add_rmsnorm.one_row import MAX_BLOCK_BYTES as ONE_ROW_MAX_BYTES
from kprof.kernels.lib import launching, plans, split_rows
from kprof.kernels.lib.launching import classic_num_warps
from kprof.kernels.rmsnorm.reference import rmsnorm_oracle
from tests.kernels.ops_paths import triton_ops

FAM = discover()["add_rmsnorm"]
DTYPES = ["fp32", "bf16", "fp16"]
ES = {"fp32": 4, "bf16": 2, "fp16": 2}
# y against the norm of the h returned: one rounding of y (h's own rounding is not in it). bf16: 2^-7, a rounding
# toward zero's worst case, because Triton's interpreter converts float32 to bf16 by truncation (round to nearest, as
# a GPU rounds, stays under 2^-8): over 150 random 3x77 bf16 rows, twice, truncation read up to 0.0041 and round to
# nearest up to 0.0020; one CI run read 0.00405 against the 4e-3 this was.
Y_OF_H_TOL = {"fp32": 1e-6, "bf16": 2**-7, "fp16": 5e-4}


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref).norm() / ref.norm())


def _strided_inputs(n_rows: int, n: int, dtype: str, device: str) -> dict:
    """x and residual as views with different row strides and offsets (rows n + 24 and n + 40 apart)."""
    seed = torch.seed() % 2**31
    a = FAM.make_inputs((n_rows, n + 24), dtype, device, seed=seed)
    b = FAM.make_inputs((n_rows, n + 40), dtype, device, seed=seed + 1)
    return {
        "x": a["x"][:, 8 : 8 + n],
        "residual": b["residual"][:, 40 : 40 + n],
        "weight": a["weight"][:n].contiguous(),
        "eps": a["eps"],
    }


def _check(y: torch.Tensor, h: torch.Tensor, inp: dict, dtype: str) -> None:
    """Both outputs fully written, within the family's tolerance of the oracle, and y the norm of the h
    returned (the sum of squares taken over h rounded to the input dtype)."""
    assert y.shape == h.shape == inp["x"].shape and y.dtype == h.dtype == inp["x"].dtype
    assert not y.isnan().any() and not h.isnan().any(), "output elements left unwritten (poison survived)"
    y_ref, h_ref = FAM.oracle(**inp)
    tol = FAM.tolerances[dtype]
    assert _rel(y, y_ref) <= tol and _rel(h, h_ref) <= tol, (_rel(y, y_ref), _rel(h, h_ref))
    assert _rel(y, rmsnorm_oracle(h, inp["weight"], inp["eps"])) <= Y_OF_H_TOL[dtype]


def _launch_and_check(cfg, n_rows: int, n: int, dtype: str, device: str) -> dict:
    """``cfg`` launched on ``n_rows`` strided rows of ``n`` fresh inputs into NaN-poisoned outputs, then
    :func:`_check`; returns the inputs."""
    inp = _strided_inputs(n_rows, n, dtype, device)
    y = torch.full(inp["x"].shape, float("nan"), dtype=inp["x"].dtype, device=device)
    h = torch.full_like(y, float("nan"))
    tuned.launch_with_config(cfg, inp["x"], inp["residual"], inp["weight"], y, h, inp["eps"])
    _check(y, h, inp, dtype)
    return inp


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n", [(3, 17001), (1, 18000), (2, 33000)])
def test_few_wide_rows_take_the_split_path(dtype, n_rows, n, device):
    """Rows wider than one block, few of them: triton_tuned splits each row over programs. 17001 in 16
    chunks of 1280: the 14th holds 361 elements, the last two none; strided x and residual rows."""
    cfg = tuned.choose_config(n, ES[dtype], n_rows)
    assert cfg.kernel == "split" and cfg.splits > 1, cfg
    inp = _strided_inputs(n_rows, n, dtype, device)
    out = (torch.full_like(inp["x"], float("nan")), torch.full_like(inp["x"], float("nan")))
    y, h = FAM.providers["triton_tuned"].fn(**inp, out=out)
    assert y.data_ptr() == out[0].data_ptr() and h.data_ptr() == out[1].data_ptr()
    _check(y, h, inp, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n, splits, block", [(5, 3001, 4, 256), (2, 3001, 8, 256), (3, 999, 2, 128)])
def test_split_kernels_on_small_odd_shapes(dtype, n_rows, n, splits, block, device):
    """The two launches with any split count and loop step: 3001 in 4 chunks of 768 (several loop steps, the
    last chunk short), in 8 chunks of 512 (the last two empty), 999 in 2 chunks of 512 (in 128 steps)."""
    inp = _strided_inputs(n_rows, n, dtype, device)
    y = torch.full(inp["x"].shape, float("nan"), dtype=inp["x"].dtype, device=device)
    h = torch.full_like(y, float("nan"))
    split.launch_split(inp["x"], inp["residual"], inp["weight"], y, h, inp["eps"], splits, block, 4)
    _check(y, h, inp, dtype)


def test_the_tuned_version_launches_the_split_kernels(device, monkeypatch):
    """triton_tuned's checked launch (the interpreter's path; on a GPU the version launches through the op's plan,
    whose split launches test_ops_api_takes_the_split_path checks) reaches launch_split with the chosen split for
    few wide rows, and not for many."""
    calls = []
    real = split.launch_split
    monkeypatch.setattr(split, "launch_split", lambda *a: calls.append(a[6:]) or real(*a))
    inp = FAM.make_inputs((2, 20000), "fp32", device, seed=torch.seed() % 2**31)
    _check(*tuned.add_rmsnorm_checked(**inp), inp, "fp32")
    cfg = tuned.choose_config(20000, 4, 2)
    assert calls == [(cfg.splits, cfg.block_n, cfg.num_warps)]
    assert tuned.choose_config(20000, 4, 200).kernel == "looped"  # 200 rows fill the GPU: one program per row


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_ops_api_takes_the_split_path(dtype, device):
    """ops.fused_add_rms_norm plans the two split launches for few wide rows; the planned call computes."""
    inp = _strided_inputs(2, 17001, dtype, device)
    with triton_ops():
        for _ in range(2):  # the second call goes through the plan
            y, h = ops.fused_add_rms_norm(**inp)
            _check(y, h, inp, dtype)
        ((launch, shape, strides),) = op_plan.PLANS.plans.values()
    assert isinstance(launch, split_rows.SplitLaunch)
    assert launch.first.launcher is split.sum_launcher and launch.second.launcher is split.apply_launcher
    assert launch.first.grid[:2] == (2, tuned.choose_config(17001, ES[dtype], 2).splits)
    assert shape == (2, 17001) and strides == (17001, 1)


class _RecordingLauncher:
    """Stands in for Triton's C launcher: records the arguments a compiled launch would get."""

    prefix = ("function", "packed")

    def __init__(self):
        self.calls = []

    def __call__(self, g0, g1, g2, stream, function, packed, *args):
        self.calls.append(((g0, g1, g2), args))


def test_planned_split_launches_get_raw_addresses(device, monkeypatch):
    """Compiled, the split plan hands both launches raw addresses: the first writes h and the partial sums,
    the second reads the same h and workspace and writes y (a workspace apart from every tensor)."""
    if device != "cpu":
        pytest.skip("drives the plans with a stand-in launcher (the CPU interpreter builds them)")
    rec = _RecordingLauncher()
    monkeypatch.setattr(plans, "_stream", lambda d: 0)
    inp = _strided_inputs(3, 17001, "fp32", device)
    x, r, w = inp["x"], inp["residual"], inp["weight"]
    with triton_ops():
        ops.fused_add_rms_norm(x, r, w)
        ((launch, _, _),) = op_plan.PLANS.plans.values()
        launch.first.entry = launch.second.entry = (rec, rec.prefix, 0)
        y, h = ops.fused_add_rms_norm(x, r, w)
    (grid1, first), (grid2, second) = rec.calls
    assert grid1 == grid2 == launch.first.grid
    assert first[:3] == (x.data_ptr(), r.data_ptr(), h.data_ptr()) and first[4:] == launch.first.tail
    assert second[:3] == (h.data_ptr(), w.data_ptr(), y.data_ptr()) and second[4:] == launch.second.tail
    assert first[3] == second[3] and first[3] not in (x.data_ptr(), r.data_ptr(), y.data_ptr(), h.data_ptr())
    assert launch.first.tail[:2] == (x.stride(0), r.stride(0))
    assert all(type(a) is not torch.Tensor for _, call in rec.calls for a in call)


def test_choice_rule_properties():
    """Over row counts, widths, dtypes and SM counts: a split only for rows wider than one block and too few
    to give each SM four programs, within rmsnorm's split limits; one program per row in one block only up
    to triton_one_row's limit, with its warps from 2048 columns; from 8192 rows the choice does not depend
    on the row count; every block covers its row or loops over it."""
    for es in (2, 4):
        for sms in (78, 132):
            for n in (1000, 2048, 3000, 4096, 6144, 7001, 8192, 12000, 16384, 17001, 65536, 131072):
                block_n = 1 << (n - 1).bit_length()
                for n_rows in (1, 7, 33, 64, 100, 512, 1000, 2048, 8192, 32768):
                    # the cooperative kernel's rule is tested in test_cooperative.py; this is the rule without it
                    cfg = tuned.choose_config(n, es, n_rows, sms, cooperative=False)
                    assert cfg.num_warps in (1, 2, 4, 8, 16, 32) and cfg.block_n & (cfg.block_n - 1) == 0
                    if cfg.kernel == "split":
                        assert block_n * es > ONE_ROW_MAX_BYTES and n_rows * 4 <= sms
                        assert cfg.splits == split_rows.choose_splits(n_rows, n, sms) > 1
                        assert n_rows * cfg.splits <= split_rows.WAVES * sms
                        assert (cfg.block_n, cfg.num_warps) == split_rows.loop_config(n, cfg.splits)
                    elif cfg.kernel == "rows":
                        assert cfg.block_n >= n and cfg.block_n * cfg.rows * es <= ONE_ROW_MAX_BYTES
                        if cfg.rows == 1 and block_n >= 2048:  # triton_one_row's own configuration
                            assert cfg.num_warps == classic_num_warps(block_n), (n, es, n_rows, cfg)
                    else:
                        assert cfg.kernel == "looped" and cfg.block_n <= block_n
                    if block_n * es > ONE_ROW_MAX_BYTES and n_rows * 4 > sms:
                        assert cfg.kernel == "looped"
                    if n_rows >= 8192:
                        assert cfg == tuned.choose_config(n, es, None, sms, cooperative=False)
                    if n_rows <= 64 and tuned.MAX_ONE_BLOCK_BYTES < block_n * es <= ONE_ROW_MAX_BYTES:
                        assert (cfg.kernel, cfg.rows, cfg.block_n) == ("rows", 1, block_n)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n", [(3, 3001), (1, 7001), (2, 2048), (70, 7001)])
def test_one_block_rows_of_the_small_row_rule(dtype, n_rows, n, device):
    """Few rows of 2048-16384 columns keep the whole row in one block (or, at 70 rows of 7001 bf16, the
    8 KB-chunk loop): correct on odd widths with strided rows."""
    inp = _strided_inputs(n_rows, n, dtype, device)
    _check(*FAM.providers["triton_tuned"].fn(**inp), inp, dtype)


def test_hundreds_of_16_bit_rows_of_4097_to_8192_columns_take_the_width_compiled_in():
    """512-1023 16-bit rows of 4097-8192 columns: the chunked kernel, 4096-column chunks, 16 warps, the width a
    constant; 511 or 1024 rows, fp32 and other widths keep what they had."""
    want = tuned.Config("looped", 4096, 1, 16, cols_const=True)
    for n, rows in ((4097, 512), (6144, 700), (8192, 1023)):
        assert tuned.choose_config(n, 2, rows) == want, (n, rows)
    for n, es, rows in ((6144, 2, 511), (6144, 2, 1024), (6144, 4, 512), (4096, 2, 512), (8193, 2, 512)):
        assert not tuned.choose_config(n, es, rows).cols_const, (n, es, rows)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_the_chunked_kernel_with_the_width_compiled_in(dtype, device):
    """The op and the ops API at 512 rows of an odd width (the rule's choice, strided rows), then one width-compiled
    config at two widths in a row (a binary compiled for one width must not serve another)."""
    inp = _strided_inputs(512, 5001, dtype, device)
    assert tuned.choose_config(5001, 2, 512).cols_const
    _check(*tuned.add_rmsnorm_tuned(**inp), inp, dtype)
    with triton_ops():
        for _ in range(2):  # the second call goes through the plan
            _check(*ops.fused_add_rms_norm(**inp), inp, dtype)
    cfg = tuned.Config("looped", 1024, 1, 4, cols_const=True)
    for n in (2500, 1100):
        _launch_and_check(cfg, 5, n, dtype, device)


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize(
    "chunk, warps, const", [(8192, 16, True), (1024, 4, False), (2048, 8, True), (1024, 4, True), (4096, 4, True)]
)
def test_the_chunked_kernel_with_inductors_cache_hints(dtype, chunk, warps, const, device):
    """The chunked kernel with evict_first on what it reads once and evict_last on the weight (``HINTS``), one chunk
    wider than the row and several, the width compiled in or not, at odd widths on fresh strided inputs."""
    cfg = tuned.Config("looped", chunk, 1, warps, cols_const=const, hints=True)
    for n_rows, n in ((3, 6001), (2, 1531)):
        _launch_and_check(cfg, n_rows, n, dtype, device)


def test_an_h200_takes_its_mid_width_rules_at_their_edges_and_nothing_outside_them(monkeypatch):
    """On an H200, 16-bit rows of 2049-8192 columns take their width class's bands (the next band width up: 2049-3072
    columns 3072's, 3073-4096 4096's, ..., 7169-8192 8192's) at each band's first and last row count and at the class's
    first and last width, in both 16-bit dtypes; but 5121-6143 columns at 256-511 rows take triton_one_row's kernel with
    4 warps. An H100 does not. A row fewer or more, 2048 or 8193 columns, float32 and an H100 take what they would
    without the rules."""
    rows_w4, rows_w8, rows_w16 = (tuned.Config("rows", b, 1, w) for b, w in ((4096, 4), (8192, 8), (8192, 16)))
    chunk_w4 = tuned.Config("looped", 8192, 1, 4, cols_const=True)
    hinted = {w: tuned.Config("looped", 8192, 1, w, cols_const=True, hints=True) for w in (4, 8)}
    one_row_w4 = tuned.Config("one_row", 8192, 1, 4)
    one_row_4096 = tuned.Config("one_row", 4096, 1, 8)
    chunk_4096 = tuned.Config("looped", 4096, 1, 4, cols_const=True, hints=True)
    chunk_1024 = tuned.Config("looped", 1024, 1, 4, cols_const=True, hints=True)
    bands = [
        (3072, 768, 1024, rows_w4),
        (3072, 1025, 1663, chunk_4096),
        (3072, 1664, 2112, chunk_1024),
        (3072, 2113, 4096, one_row_4096),
        (4096, 768, 1024, rows_w4),
        (4096, 1025, 1407, chunk_4096),
        (4096, 2112, 4096, one_row_4096),
        (5120, 256, 1024, chunk_w4),
        (5120, 2048, 4096, chunk_w4),
        (6144, 256, 511, rows_w8),
        (6144, 512, 768, hinted[8]),
        (6144, 769, 1024, hinted[4]),
        (6144, 2048, 8192, one_row_w4),
        (7168, 256, 511, rows_w8),
        (7168, 640, 1024, hinted[4]),
        (7168, 2048, 8192, one_row_w4),
        (8192, 256, 384, rows_w16),
        (8192, 640, 1023, hinted[4]),
        (8192, 1024, 8192, one_row_w4),
    ]
    first_width = {3072: 2049, 4096: 3073, 5120: 4097, 6144: 5121, 7168: 6145, 8192: 7169}
    for width, first, last, band in bands:
        for n in (first_width[width], width - 1, width):
            want = one_row_w4 if (width, first) == (6144, 256) and n < 6144 else band
            for n_rows in (first, last):
                for fp16 in (False, True):
                    assert tuned.choose_config(n, 2, n_rows, fp16=fp16, fast_memory=True) == want, (n, n_rows, fp16)
                    assert tuned.choose_config(n, 2, n_rows, fp16=fp16) != want, (n, n_rows, fp16)
    outside = [
        (3072, 2, 767),
        (3072, 2, 4097),
        (4096, 2, 1408),
        (4096, 2, 2111),
        (4096, 2, 4097),
        (5120, 2, 255),
        (5120, 2, 1025),
        (5120, 2, 2047),
        (5120, 2, 4097),
        (6144, 2, 1025),
        (6144, 2, 2047),
        (7168, 2, 512),
        (7168, 2, 639),
        (7168, 2, 1025),
        (7168, 2, 8193),
        (8192, 2, 385),
        (8192, 2, 639),
    ]
    outside += [(2048, 2, 900), (2048, 2, 3000), (8193, 2, 700), (8193, 2, 1500), (3073, 2, 1500), (6145, 2, 600)]
    outside += [(2049, 2, 767), (4097, 2, 1025), (7169, 2, 385)]
    outside += [(6144, 4, 600), (7168, 4, 300), (5120, 4, 300), (8192, 4, 2048), (3072, 4, 1300), (4096, 4, 3000)]
    with_rules = [tuned.choose_config(n, es, rows, fast_memory=True) for n, es, rows in outside]
    monkeypatch.setattr(tuned, "_FAST_MEMORY_MID_WIDTHS", {})  # the rules off
    monkeypatch.setattr(tuned, "_FAST_MEMORY_BETWEEN_BANDS", {})
    assert with_rules == [tuned.choose_config(n, es, rows, fast_memory=True) for n, es, rows in outside]


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("n_rows, n", [(1000, 2560), (1536, 2560), (1700, 2049), (1000, 4608), (700, 5376)])
def test_the_h200_band_configs_between_the_band_widths_match_the_oracle(dtype, n_rows, n, device):
    """The configs an H200's bands give widths between the band widths (chunks part-filled with the width compiled in,
    the row kernel's block part-masked), chosen at ``n_rows`` rows, on 3 strided rows of fresh inputs."""
    cfg = tuned.choose_config(n, 2, n_rows, fp16=dtype == "fp16", fast_memory=True)
    assert cfg in [cfg for _, cfg in tuned._mid_width_bands(n)], cfg
    _launch_and_check(cfg, 3, n, dtype, device)


def test_an_h200_takes_the_one_row_kernel_at_65_to_255_16_bit_rows_of_5121_to_8192():
    """On an H200, 65-255 16-bit rows of 5121-8192 columns take triton_one_row's kernel with its warps (16, a block of
    8192), in both 16-bit dtypes, where the H100 takes its table's; fewer or more rows, narrower or wider rows keep
    theirs."""
    want = tuned.Config("one_row", 8192, 1, 16)
    for n, rows in ((5121, 65), (6144, 160), (7168, 128), (8192, 255), (7001, 100)):
        for fp16 in (False, True):
            assert tuned.choose_config(n, 2, rows, fp16=fp16, fast_memory=True) == want, (n, rows, fp16)
            assert tuned.choose_config(n, 2, rows, fp16=fp16) != want, (n, rows, fp16)
    for n, rows in ((5120, 128), (8193, 128), (6144, 256)):
        for fp16 in (False, True):
            assert tuned.choose_config(n, 2, rows, fp16=fp16, fast_memory=True) != want, (n, rows, fp16)
    assert tuned.choose_config(6144, 2, 64, fp16=True, fast_memory=True) == tuned.choose_config(6144, 2, 64, fp16=True)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize(
    "n_rows, n",
    [(300, 6144), (600, 6144), (700, 7168), (300, 5120), (900, 3072), (1100, 8192), (1300, 3072), (2200, 4096)],
)  # fmt: skip
def test_the_ops_take_an_h200s_mid_width_rules_from_their_plan(dtype, n_rows, n, device, monkeypatch):
    """The ops API on an H200 (``launching.fast_memory`` forced) at strided rows that its width rules take:
    the plan holds the rule's launch; both calls (checked path, then the plan) against the float64 oracle on fresh
    inputs."""
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    inp = _strided_inputs(n_rows, n, dtype, device)
    want = tuned.choose_config(n, 2, n_rows, fp16=dtype == "fp16", fast_memory=True)
    with triton_ops():
        for _ in range(2):
            _check(*ops.fused_add_rms_norm(**inp), inp, dtype)
        keys = [launch.key for launch, *_ in op_plan.PLANS.plans.values()]
    assert any(want in key for key in keys), keys


def test_an_h200_takes_the_one_row_kernel_at_many_16_bit_rows_where_it_won_there():
    """On an H200 (fast memory): from 8192 rows at 2048-3072 and 4097-7168 columns, from 2048 rows at 4097-16384,
    16-bit rows that no width band takes get triton_one_row's kernel with its warps; other rows and widths and an H100
    keep theirs (float32 has rules of its own)."""
    taken = ((2048, 8192), (3072, 32768), (4097, 8192), (7168, 10**5), (4097, 4097), (16384, 8191), (11008, 4096))
    for n, rows in taken:
        for fp16 in (False, True):
            want = tuned.Config("one_row", triton.next_power_of_2(n), 1, classic_num_warps(triton.next_power_of_2(n)))
            assert tuned.choose_config(n, 2, rows, fp16=fp16, fast_memory=True) == want, (n, rows)
            assert tuned.choose_config(n, 2, rows, fp16=fp16).kernel != "one_row", (n, rows)
    for n, es, rows in (
        (2048, 2, 8191),  # packed rows won at 2048 rows
        (4096, 2, 32768),
        (8192, 2, 8193),  # past the 8192-column rows' band (``_FAST_MEMORY_MID_WIDTHS``)
        (16384, 2, 8192),
        (3073, 2, 8192),
        (4096, 2, 2048),
        (16385, 2, 2048),
        (6144, 2, 2047),
    ):
        assert tuned.choose_config(n, es, rows, fast_memory=True) == tuned.choose_config(n, es, rows), (n, es, rows)


def test_an_h200_takes_the_one_row_kernel_at_16_to_64_bf16_rows_of_4097_to_8192():
    """On an H200, 16-64 bf16 rows of 4097-8192 columns take triton_one_row's kernel with its warps (no cache hints)
    where the H100 takes the rows kernel's launch; fp16, fewer or more rows, narrower or wider rows keep theirs."""
    for n, rows in ((4097, 16), (6144, 64), (8192, 33), (7001, 64)):
        want = tuned.Config("one_row", 8192, 1, 16)
        assert tuned.choose_config(n, 2, rows, fast_memory=True) == want, (n, rows)
        assert tuned.choose_config(n, 2, rows) == tuned.Config("rows", 8192, 1, 16), (n, rows)
        assert tuned.choose_config(n, 2, rows, fp16=True, fast_memory=True) == tuned.choose_config(
            n, 2, rows, fp16=True
        )
    for n, rows in ((6144, 15), (4097, 65), (4096, 64), (8193, 64), (8192, 8)):
        assert tuned.choose_config(n, 2, rows, fast_memory=True) == tuned.choose_config(n, 2, rows), (n, rows)


@pytest.mark.parametrize("n", [4097, 7001])
def test_the_h200_few_bf16_rows_config_matches_the_oracle(n, device):
    """The H200's few-rows bf16 config on 3 rows of fresh inputs, strided, at odd widths."""
    cfg = tuned.choose_config(n, 2, 64, fast_memory=True)
    assert cfg.kernel == "one_row", cfg
    _launch_and_check(cfg, 3, n, "bf16", device)


def test_an_h200_takes_its_own_configs_for_fp32_rows_of_4096_to_16384_columns():
    """On an H200, float32 rows of 4096 and 8192 columns: from 8192 rows the chunked kernel with the whole row a chunk
    (4 warps at 4096, 16 at 8192), from 2048 rows triton_one_row's kernel (4 and 8 warps); the other widths of
    4097-16384 columns triton_one_row's kernel from 2048 rows, 16 warps up to a block of 8192, 32 above. Narrower and
    wider rows, fewer rows, 16-bit rows and an H100 keep theirs."""
    for n, rows, want in (
        (4096, 8192, tuned.Config("looped", 4096, 1, 4)),
        (4096, 10**6, tuned.Config("looped", 4096, 1, 4)),
        (8192, 16384, tuned.Config("looped", 8192, 1, 16)),
        (4096, 2048, tuned.Config("one_row", 4096, 1, 4)),
        (4096, 4096, tuned.Config("one_row", 4096, 1, 4)),
        (8192, 8191, tuned.Config("one_row", 8192, 1, 8)),
        (6144, 16384, tuned.Config("one_row", 8192, 1, 16)),
        (4097, 2048, tuned.Config("one_row", 8192, 1, 16)),
        (8191, 10**6, tuned.Config("one_row", 8192, 1, 16)),
        (8193, 2048, tuned.Config("one_row", 16384, 1, 32)),
        (16384, 32768, tuned.Config("one_row", 16384, 1, 32)),
    ):
        assert tuned.choose_config(n, 4, rows, fast_memory=True) == want, (n, rows)
        assert tuned.choose_config(n, 4, rows) != want, (n, rows)
    same = ((4096, 4, 2047), (8192, 4, 512), (6144, 4, 2047), (16384, 4, 512), (16385, 4, 2048), (3072, 4, 16384))
    for n, es, rows in same + ((6144, 2, 1536), (4096, 4, None)):
        assert tuned.choose_config(n, es, rows, fast_memory=True) == tuned.choose_config(n, es, rows), (n, es, rows)


@pytest.mark.parametrize("n", [4096, 6143, 8192, 12289])
@pytest.mark.parametrize("rows", [2048, 16384])
def test_the_h200_fp32_configs_match_the_oracle(n, rows, device):
    """Each of the H200's float32 configs (chosen at ``rows`` rows) on 3 rows of fresh inputs, strided, odd widths
    among them (a half-empty block)."""
    cfg = tuned.choose_config(n, 4, rows, fast_memory=True)
    _launch_and_check(cfg, 3, n, "fp32", device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n", [(3, 3001), (2, 7001), (2, 5512)])
def test_the_one_row_config_on_odd_widths(dtype, n_rows, n, device, monkeypatch):
    """The one_row config through the tuned version's launch, and through the ops API's plan with the H200's rule
    in force: correct on odd widths with strided rows (5512: a multiple of 8, the kernel told so), the plan launching
    triton_one_row's kernel."""
    cfg = tuned.Config("one_row", triton.next_power_of_2(n), 1, 4)
    inp = _launch_and_check(cfg, n_rows, n, dtype, device)
    monkeypatch.setattr(tuned, "choose_config", lambda *a, **k: cfg)
    with triton_ops():
        for _ in range(2):  # the second call goes through the plan
            _check(*ops.fused_add_rms_norm(**inp), inp, dtype)
        ((launch, _, _),) = op_plan.PLANS.plans.values()
    assert launch.launcher is tuned.one_row_launcher and launch.grid[0] == n_rows
    assert launch.tail[-1] == launching.vector_align(ES[dtype], n, inp["x"].stride(0), inp["residual"].stride(0))


def test_an_h200_takes_the_rows_kernel_at_512_to_1023_16_bit_rows_of_4097_to_8192():
    """On an H200, 512-1023 16-bit rows of 4097-8192 columns that no band takes (6145-8192 columns at 512-639 rows):
    the rows kernel, one row a program, the row in one block, 8 warps in bf16 and 4 in fp16 (where the H100 takes the
    chunked kernel with the width compiled in). Other rows and widths, float32 and an H100 keep theirs."""
    for n, rows in ((6145, 512), (7168, 639), (7169, 512), (8192, 639), (7001, 600)):
        for fp16, warps in ((False, 8), (True, 4)):
            want = tuned.Config("rows", 8192, 1, warps)
            assert tuned.choose_config(n, 2, rows, fp16=fp16, fast_memory=True) == want, (n, rows, fp16)
            assert tuned.choose_config(n, 2, rows, fp16=fp16) != want, (n, rows, fp16)
    for n, es, rows in ((4096, 2, 512), (8193, 2, 512), (6144, 2, 1025), (6144, 4, 512)):
        assert tuned.choose_config(n, es, rows, fast_memory=True) == tuned.choose_config(n, es, rows), (n, es, rows)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("n", [6145, 7001, 8192])
def test_the_h200_mid_row_configs_match_the_oracle(dtype, n, device):
    """The H200's 512-row configs on 3 rows of fresh inputs, strided, at odd widths (a block nearly half masked)."""
    cfg = tuned.choose_config(n, 2, 512, fp16=dtype == "fp16", fast_memory=True)
    assert cfg.kernel == "rows", cfg
    _launch_and_check(cfg, 3, n, dtype, device)
