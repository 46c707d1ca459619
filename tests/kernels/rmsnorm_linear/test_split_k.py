"""rmsnorm_linear's split-K kernel (norm inside the product, K split over programs, the last program of a column
tile adds the parts): against the float64 oracle at odd shapes, split counts and strides in every dtype; its
ticket counters left at zero; its place in the dispatch (``triton_tuned`` and the ops API's first and planned
calls); on a GPU, the same output on every call and beside a second stream."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl
from hypothesis import given, settings
from hypothesis import strategies as st

from kprof.kernels import discover, ops
from kprof.kernels.lib import launching, plans
from kprof.kernels.lib import split_k as lib_split_k
from kprof.kernels.rmsnorm_linear import op_plan, split_k, tuned
from kprof.kernels.rmsnorm_linear.fused import folded_weight, held_fold
from tests.compile_child import child_json
from tests.kernels.ops_paths import triton_ops
from tests.kernels.oracle_checks import assert_matches_oracle

FAM = discover()["rmsnorm_linear"]


def _check(out: torch.Tensor, inputs: dict, dtype: str, what: str) -> None:
    assert_matches_oracle(FAM, out, inputs, dtype, what)


def _counters_at_zero() -> bool:
    return all(int(c.abs().sum()) == 0 for c in launching._COUNTERS.values())


# (rows, K, N), none a multiple of a tile: a partial row tile, a K range that ends inside a step, ragged columns
SHAPES = [(1, 97, 45), (3, 130, 33), (17, 70, 50), (5, 257, 19)]


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("splits", [1, 3, 64])  # 64: more than K has steps, so the launch trims it
@pytest.mark.parametrize("pipelined", [False, True], ids=["x ahead", "x pipelined"])
def test_the_kernel_matches_the_oracle(shape, dtype, splits, pipelined, device):
    """Both x paths: loaded a step ahead with the squares summed in registers (a tile's rows past M wrapped), and
    loaded in the step with the squares from the diagonal of x @ x^T (rows past M masked)."""
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    m, k, n = shape
    y = torch.full((m, n), float("nan"), dtype=x.dtype, device=device)
    config = lib_split_k.config(16, 32, 32, splits, 4, 3, PIPELINED_X=pipelined)
    meta, _ = split_k.launch_split_k(x, g, w, b, y, eps, config)
    per_program = triton.cdiv(triton.cdiv(k, splits), 32) * 32  # whole steps of 32 columns of x
    assert meta["SPLIT_K"] == triton.cdiv(k, per_program) and meta["PIPELINED_X"] == pipelined
    _check(y, inputs, dtype, f"{shape} {dtype} split {splits} pipelined {pipelined}")
    assert _counters_at_zero()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_x_is_pipelined_up_to_sixteen_rows_in_its_classes_up_to_their_largest_k(dtype):
    for n, (bn, bk, stages, per_sm, largest_k) in split_k.PIPELINED_TILES[dtype].items():
        assert split_k.pipelined_x(1, largest_k, n, dtype) and split_k.pipelined_x(16, 2048, n, dtype)
        assert not split_k.pipelined_x(2, largest_k + 1, n, dtype) and not split_k.pipelined_x(17, 2048, n, dtype)
        assert not split_k.pipelined_x(4, 2048, n, torch.float32)
        x = torch.empty((8, 2048), dtype=dtype, device="meta")
        config = split_k.config_for(x, n)
        assert config.kwargs["PIPELINED_X"] and (config.kwargs["BLOCK_N"], config.kwargs["BLOCK_K"]) == (bn, bk)
        assert config.num_stages == stages and (config.kwargs["SPLIT_K"] == 1 or per_sm > 0)  # 0: unsplit
    assert not split_k.pipelined_x(4, 2048, 28672, dtype)  # x loaded ahead was level or faster there
    assert not split_k.config_for(torch.empty((1, 8192), dtype=dtype, device="meta"), 11008).kwargs["PIPELINED_X"]
    if dtype == torch.float16:
        assert split_k.precision_of(dtype, pipelined=True) == 3 and split_k.precision_of(dtype) != 3


def test_on_an_h200_x_is_pipelined_in_its_own_tiles_in_the_k_ranges_raced():
    """The H200's table (``_FAST_MEMORY_PIPELINED``) in each entry's K range, up to 16 rows; elsewhere, and off an
    H200, the H100's tables."""
    for dtype, classes in split_k._FAST_MEMORY_PIPELINED.items():
        for n, entries in classes.items():
            for least_k, largest_k, tiles in entries:
                for m in (1, 4, 16):
                    for k in (least_k, (least_k + largest_k) // 2, largest_k):
                        assert split_k.pipelined_tiles(m, k, n, dtype, fast_memory=True) == tiles
                        assert tuned.split_k_product(m, k, n, dtype, fast_memory=True)
                assert split_k.pipelined_tiles(17, largest_k, n, dtype, fast_memory=True) is None
            covered = [k for least_k, largest_k, _ in entries for k in (least_k, largest_k)]
            for k in (min(covered) - 64, max(covered) + 64):  # outside the K raced: what an H100 runs
                h100 = split_k.pipelined_tiles(4, k, n, dtype)
                assert split_k.pipelined_tiles(4, k, n, dtype, fast_memory=True) == h100
    bf16, fp16 = torch.bfloat16, torch.float16
    assert not tuned.split_k_product(16, 8192, 11008, bf16)  # two kernels on an H100 ...
    assert tuned.split_k_product(16, 8192, 11008, bf16, fast_memory=True)  # ... the pipelined kernel on an H200
    assert not split_k.pipelined_x(1, 8192, 28672, fp16) and split_k.pipelined_x(1, 8192, 28672, fp16, True)
    assert split_k.pipelined_tiles(1, 8192, 28672, bf16, fast_memory=True) is None  # the H100's tiles held there
    assert split_k.pipelined_tiles(1, 2048, 14336, fp16, True) == split_k.pipelined_tiles(1, 2048, 14336, fp16)
    two_ks = split_k._FAST_MEMORY_PIPELINED[fp16][28672]  # a K between two raced takes the nearer one's tiles
    assert split_k.pipelined_tiles(1, 3000, 28672, fp16, True) == two_ks[0][2] != two_ks[1][2]
    assert split_k.pipelined_tiles(1, 3500, 28672, fp16, True) == two_ks[1][2]


@pytest.mark.parametrize("n", [5504, 11008, 28672])
def test_on_an_h200_the_config_is_its_tiles_with_k_split_for_the_programs_asked(n, monkeypatch):
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    x = torch.empty((1, 8192), dtype=torch.float16, device="meta")
    (bn, bk, stages, per_sm), *_ = (
        t for lo, hi, t in split_k._FAST_MEMORY_PIPELINED[torch.float16][n] if lo <= 8192 <= hi
    )
    config = split_k.config_for(x, n)
    assert config.kwargs["PIPELINED_X"] and (config.kwargs["BLOCK_N"], config.kwargs["BLOCK_K"]) == (bn, bk)
    splits = lib_split_k.split_count(1, 8192, n, 16, bn, bk, per_sm * launching.sm_count(x)) if per_sm else 1
    assert config.num_stages == stages and config.kwargs["SPLIT_K"] == splits
    assert (splits > 1) == (per_sm > 0)


# every distinct (dtype, column class, tiles) of the H200's table
H200_TILES = sorted(
    {
        (dt, n, tiles)
        for dt, classes in split_k._FAST_MEMORY_PIPELINED.items()
        for n, e in classes.items()
        for *_, tiles in e
    },
    key=str,
)


@pytest.mark.parametrize(("torch_dtype", "n_class", "tiles"), H200_TILES, ids=lambda v: str(v).removeprefix("torch."))
@pytest.mark.parametrize("shape", [(3, 300, 70), (16, 130, 45), (1, 520, 260)], ids=lambda s: "x".join(map(str, s)))
def test_the_h200_tiles_match_the_oracle_through_the_op(shape, torch_dtype, n_class, tiles, device, monkeypatch):
    """The H200's configs (its tiles, x pipelined, K split where the table says) on odd shapes, through the
    provider and the ops API's first and planned calls, with the K range and the dimension floor scaled down
    (the interpreter takes minutes over a real decode weight)."""
    dtype = {torch.bfloat16: "bf16", torch.float16: "fp16"}[torch_dtype]
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    monkeypatch.setattr(split_k, "_FAST_MEMORY_PIPELINED", {torch_dtype: {n_class: ((16, 1 << 20, tiles),)}})
    monkeypatch.setattr(tuned, "SPLIT_K_MIN_DIM", 16)
    monkeypatch.setattr(tuned, "SPLIT_K_CLASS_WIDTH", 1e9)
    for module in (split_k, tuned):
        monkeypatch.setattr(module, "column_class", lambda n: n_class)
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    config = split_k.config_for(inputs["x"], shape[2])
    assert config.kwargs["PIPELINED_X"] and (config.kwargs["BLOCK_N"], config.kwargs["BLOCK_K"]) == tiles[:2]
    assert config.num_stages == tiles[2] and (config.kwargs["SPLIT_K"] > 1) == (tiles[3] > 0)
    outs = {"provider": FAM.providers["triton_tuned"].fn(**inputs)}
    with triton_ops():
        outs["ops first call"] = ops.rms_norm_linear(**inputs)
        outs["ops planned call"] = ops.rms_norm_linear(**inputs)
        ((_, plan),) = op_plan.PLANS.plans.items()
    assert type(plan) is op_plan.SplitKPlan
    for name, out in outs.items():
        _check(out, inputs, dtype, f"{name} {shape} H200 tiles of {n_class}")
    assert _counters_at_zero()


# x * g past fp16's range (|x g| > 65504), and rows whose products fall under fp16's smallest normal (2^-14): the
# guarded fp16 products must not overflow or lose those rows; ``xg`` below checks the inputs reach the case
GUARD_CASES = {"overflow": (300.0, 300.0), "tiny rows": (3e-3, 3e-3), "tiny g": (1.0, 1e-5)}


@pytest.mark.parametrize("case", GUARD_CASES)
@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize(
    "block_k, g_top, outlined",
    [
        (64, False, False),
        (256, True, False),
        (256, False, False),
        (64, False, True),
        (256, True, True),
        (256, False, True),
    ],
    ids=[
        "64-wide steps, the product checked",
        "256-wide, max g kept in the loop",
        "256-wide, the product checked",
        "64-wide, the product checked, the second loop outlined",
        "256-wide, max g kept, the second loop outlined",
        "256-wide, the product checked, max g and the second loop outlined",
    ],
)
def test_fp16_products_are_guarded_where_fp16_cannot_hold_x_times_g(case, splits, block_k, g_top, outlined, device):
    """fp16 with x pipelined rounds x * g to fp16 (PRECISION 3). Where that may not hold the products, the
    program computes its share again in TF32: the output stays finite and within fp16's tolerance of the
    float64 oracle. With G_TOP the check takes max|g| from the loop; without, it checks the product and a bound
    from the first step's g (``_fp16_missed_product``), in steps of either width; the share computed again inlined or
    as a call of its own (``OUTLINED``)."""
    x_scale, g_scale = GUARD_CASES[case]
    m, k, n = 5, 300, 70
    gen = torch.Generator().manual_seed(torch.seed() % 2**31)
    x = (torch.randn(m, k, generator=gen) * x_scale).half().to(device)
    g = ((torch.rand(k, generator=gen) * 4 + 0.5) * g_scale).half().to(device)
    w = (torch.randn(k, n, generator=gen) / k**0.5).half().to(device)
    b = torch.randn(n, generator=gen).half().to(device)
    xg = (x.double() * g.double()).abs()
    if case == "overflow":
        assert float(xg.max()) > 65504  # unguarded fp16 products would be inf here
    else:
        assert float((xg < 2.0**-14).double().mean()) > 0.5  # most products under fp16's smallest normal
    y = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    config = lib_split_k.config(16, 32, block_k, splits, 4, 3, PIPELINED_X=True, G_TOP=g_top, OUTLINED=outlined)
    meta, _ = split_k.launch_split_k(x, g, w, b, y, 1e-6, config)
    assert meta["PRECISION"] == 3 and meta["G_TOP"] == g_top and meta["OUTLINED"] == outlined
    assert bool(torch.isfinite(y).all())
    _check(y, {"x": x, "g": g, "w": w, "b": b, "eps": 1e-6}, "fp16", f"guarded fp16, {case}")
    assert _counters_at_zero()


OUTLINED_PROBE = """
import json, re, torch
from kprof.kernels.lib import split_k as lib_split_k
from kprof.kernels.rmsnorm_linear import split_k
from kprof.specialization import compile_for, ptxas_resources

fp16 = torch.float16
tiles = {t[:3] for t in split_k.PIPELINED_TILES[fp16].values()}
tiles |= {t[:3] for entries in split_k._FAST_MEMORY_PIPELINED[fp16].values() for *_, t in entries}
m, k, n = 4, 2048, 5504
x, g, w = torch.empty(m, k, dtype=fp16), torch.empty(k, dtype=fp16), torch.empty(k, n, dtype=fp16)
y, ws, counts = torch.empty(m, n, dtype=fp16), torch.empty(1 << 20), torch.zeros(4096, dtype=torch.int32)
out = []
for (bn, bk, stages), outlined in [(t, True) for t in sorted(tiles)] + [(sorted(tiles)[0], False)]:
    for splits in (1, 2):
        splits, k_per_split = lib_split_k.k_ranges(k, splits, bk)
        args = split_k.kernel_args(x, g, w, w, y, ws, ws, counts, splits, k_per_split, 1e-6)
        meta = dict(BLOCK_M=16, BLOCK_N=bn, BLOCK_K=bk, HAS_BIAS=True, PRECISION=3, ALIGNED=True, PIPELINED_X=True,
                    G_TOP=split_k.g_top_for(bk), OUTLINED=outlined, FOLDED=False, num_warps=4, num_stages=stages)
        ptx = compile_for(split_k.split_k_kernel, args, meta, 90).asm["ptx"]
        out.append({"tile": [bn, bk, stages], "splits": splits, "outlined": outlined,
                    "functions": len(re.findall(r"^\\.func", ptx, re.M)), "calls": len(re.findall(r"\\bcall", ptx)),
                    **ptxas_resources(ptx)})
print(json.dumps(out))
"""


def test_fp16_second_loop_compiles_as_a_call_of_its_own_at_every_fp16_tile():
    """Compiled for sm_90 on the CPU with the Triton installed here, at each fp16 tile of both tables (H100, H200),
    unsplit and split: with ``OUTLINED`` the TF32 loop (and, with the product's check, its max|g| read) is a function
    of its own that the kernel calls, not code between its loop and its epilogue; without, no call. No tile spills.
    The call passes scalars and returns nothing but a float: the Triton on the GPU machine (3.6) returns no tile
    from a ``noinline`` function, so the loop stores its tile and the kernel reads it back (the GPU tests run it)."""
    out = child_json(["-c", OUTLINED_PROBE])
    assert {tuple(c["tile"]) for c in out} >= {(64, 256, 4), (64, 64, 4)}  # the H200's fp16 entries at 5504
    for c in out:
        assert c["spill_bytes"] == 0 and c["registers"] <= 255, c
        if c["outlined"]:
            assert c["functions"] >= 1 and c["calls"] >= 1, c
        else:
            assert c["functions"] == 0 and c["calls"] == 0, c


@triton.jit
def _missed_probe(
    acc_ptr, ss_ptr, g_ptr, out_ptr, M, K, g_low, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OUTLINED: tl.constexpr
):
    rows = tl.arange(0, BLOCK_M)
    acc = tl.load(acc_ptr + rows[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    missed = split_k._fp16_missed_product(acc, tl.load(ss_ptr + rows), rows < M, g_low, g_ptr, 0, K, OUTLINED)
    tl.store(out_ptr, missed.to(tl.int32))


# what each case does to a finite product of 5 rows of rms 1 over K = 300, g of max|g| 1.5, g_low 1
PRODUCT_CHECKS = {
    "held": ({}, False),
    "an inf in the product (an overflow)": ({"acc": float("inf")}, True),
    "a NaN in the product": ({"acc": float("nan")}, True),
    "a row of rms 2^-9 (rms x max|g| under 2^-8)": ({"ss_row": 300 * 2.0**-18}, True),
    "the first step's g small, max|g| not": ({"g_low": 1e-4}, False),
    "g small everywhere": ({"g_low": 1e-4, "g": 1e-4}, True),
    "a tiny row past M": ({"ss_row": 1e-30, "row": 7}, False),
}


@pytest.mark.parametrize("outlined", [False, True], ids=["max g read inlined", "max g read by a call"])
@pytest.mark.parametrize("case", PRODUCT_CHECKS)
def test_the_product_check_finds_what_fp16_did_not_hold(case, outlined, device):
    """``_fp16_missed_product`` on products and sums of squares built for each case: an overflow found from the
    product, the rms check passed on the first step's bound or, where that fails, on max|g| read over the share."""
    change, missed = PRODUCT_CHECKS[case]
    m, k, bm, bn = 5, 300, 8, 16
    acc = torch.randn(bm, bn, dtype=torch.float32)
    if "acc" in change:
        acc[2, 5] = change["acc"]
    ss = torch.full((bm,), float(k))  # rms 1
    ss[change.get("row", 3)] = change.get("ss_row", float(k))
    g = torch.rand(k) + 0.5
    g[k // 2] = 1.5
    g = g * change.get("g", 1.0)
    out = torch.zeros(1, dtype=torch.int32, device=device)
    args = (acc.to(device), ss.to(device), g.half().to(device), out, m, k, change.get("g_low", 1.0))
    _missed_probe[(1,)](*args, BLOCK_M=bm, BLOCK_N=bn, OUTLINED=outlined)
    assert bool(out.item()) == missed, case


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_strided_inputs_and_no_bias(dtype, device):
    """x rows with a gap between them, W a transposed view (column stride not 1), no bias."""
    m, k, n = 6, 90, 40
    inputs = FAM.make_inputs((m, k, n), dtype, device, seed=torch.seed() % 2**31)
    inputs["b"] = None
    inputs["x"] = torch.cat([inputs["x"], inputs["x"][:, :7]], dim=1)[:, :k]
    inputs["w"] = inputs["w"].t().contiguous().t()
    assert inputs["x"].stride(0) == k + 7 and inputs["w"].stride(1) == k
    out = FAM.providers["triton_split_k"].fn(**inputs)
    _check(out, inputs, dtype, "strided")


@settings(max_examples=200, deadline=None)
@given(
    m=st.integers(1, 64),
    k=st.integers(1, 20000),
    n=st.integers(1, 30000),
    bn=st.sampled_from([32, 64, 128, 256]),
    bk=st.sampled_from([32, 64, 128, 256]),
    programs=st.integers(1, 2000),
)
def test_split_counts_cover_k_without_an_idle_program(m, k, n, bn, bk, programs):
    splits = lib_split_k.split_count(m, k, n, 16, bn, bk, programs)
    assert 1 <= splits <= triton.cdiv(k, bk)
    tiles = triton.cdiv(m, 16) * triton.cdiv(n, bn)
    assert tiles * splits >= min(programs, tiles * triton.cdiv(k, bk))
    used, per = lib_split_k.k_ranges(k, splits, bk)  # what the launch runs: every program has columns of x
    assert per % bk == 0 and used <= splits and (used - 1) * per < k <= used * per
    parts, total = lib_split_k.workspace_floats(used * m * n, tiles * used * 16)
    assert parts % 4 == 0 and parts >= used * m * n and total == parts + tiles * used * 16


def test_the_dispatch_takes_the_kernel_only_in_its_measured_classes():
    bf16, fp16 = torch.bfloat16, torch.float16
    for m in (1, 4, 16):
        assert tuned.split_k_product(m, 4096, 5504, bf16)
        assert tuned.split_k_product(m, 4096, 28672, fp16)
    assert tuned.split_k_product(16, 4096, 11008, bf16)  # with x pipelined, up to K 4096
    assert not tuned.split_k_product(16, 8192, 11008, bf16)  # two kernels measured faster there
    assert tuned.split_k_product(1, 4096, 11008, bf16)
    assert tuned.split_k_product(4, 4096, 5504, fp16)  # x pipelined, fp16 products guarded
    assert tuned.split_k_product(4, 4096, 11008, fp16)  # x pipelined, the product checked
    assert not tuned.split_k_product(4, 6144, 11008, fp16)  # TF32 steps: slower than the two kernels
    assert tuned.split_k_product(16, 4096, 14336, fp16) and not tuned.split_k_product(16, 8192, 14336, fp16)
    assert tuned.split_k_product(1, 8192, 11008, fp16) and not tuned.split_k_product(1, 8191, 11008, fp16)
    assert not tuned.split_k_product(17, 4096, 5504, bf16)  # more rows than raced
    assert not tuned.split_k_product(1, 4096, 5504, torch.float32)  # one row in fp32: cuBLAS measured faster
    assert all(tuned.split_k_product(m, 2048, n, torch.float32) for m in (2, 4, 16) for n in (5504, 28672))
    assert not tuned.split_k_product(8, 4096, 4096, bf16) and not tuned.split_k_product(8, 4096, 8192, bf16)
    assert tuned.split_k_product(8, 4096, 5000, bf16) and tuned.split_k_product(8, 4096, 6000, bf16)  # within 10%
    small = tuned.SPLIT_K_MIN_DIM - 1
    assert not tuned.split_k_product(1, small, 5504, bf16) and not tuned.split_k_product(1, 4096, small, bf16)


def _scaled_split_k_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The split-K tables' least K and the dimension floor scaled down to 16 (the interpreter takes minutes over a real
    decode weight), the column classes to 5504 for 43 columns and 11008 otherwise."""
    monkeypatch.setattr(tuned, "SPLIT_K_MIN_DIM", 16)
    monkeypatch.setattr(tuned, "SPLIT_K_CLASS_WIDTH", 1.0)
    scaled = {dt: {cls: 16 for cls in classes} for dt, classes in tuned.SPLIT_K_CLASSES.items()}
    monkeypatch.setattr(tuned, "SPLIT_K_CLASSES", scaled)
    for module in (split_k, tuned):
        monkeypatch.setattr(module, "column_class", lambda n: 5504 if n == 43 else 11008)


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("shape", [(3, 70, 43), (9, 45, 40), (17, 45, 40)], ids=["3x70x43", "9x45x40", "17x45x40"])
def test_the_op_runs_the_kernel_through_provider_and_plans(shape, dtype, device, monkeypatch):
    """With the table's least K and the dimension floor scaled down (the interpreter takes minutes over a real
    decode weight), the classes the tables name run the split-K kernel: the provider, the ops API's first call
    and its plan; more rows than they name the two-kernel routes."""
    _scaled_split_k_classes(monkeypatch)
    m, k, n = shape
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    taken = tuned.split_k_product(m, k, n, inputs["x"].dtype)
    assert taken == (m <= 16)  # every dtype's classes hold 5504 and 11008 columns up to 16 rows
    outs = {"provider": FAM.providers["triton_tuned"].fn(**inputs)}
    with triton_ops():
        outs["ops first call"] = ops.rms_norm_linear(**inputs)
        outs["ops planned call"] = ops.rms_norm_linear(**inputs)
        outs["ops planned call again"] = ops.rms_norm_linear(**inputs)
        ((_, plan),) = op_plan.PLANS.plans.items()
    assert (type(plan) is op_plan.SplitKPlan) == taken
    for name, out in outs.items():
        _check(out, inputs, dtype, f"{name} {shape}")
    assert _counters_at_zero()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("shape", [(1, 2048, 5504), (16, 4096, 11008), (7, 1000, 3000)], ids=str)
def test_gpu_same_output_every_call_and_beside_another_stream(shape, dtype):
    """The parts are added in slot order whoever finishes last: 20 calls give the same bits; a second stream's
    calls at the same time use counters of their own."""
    inputs = FAM.make_inputs(shape, dtype, "cuda", seed=torch.seed() % 2**31)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    config = split_k.config_for(x, w.shape[1])
    side = torch.cuda.Stream()
    outs, side_outs = [], []
    side.wait_stream(torch.cuda.current_stream())
    for _ in range(20):
        y = torch.empty((shape[0], shape[2]), dtype=x.dtype, device="cuda")
        split_k.launch_split_k(x, g, w, b, y, eps, config)
        outs.append(y)
        with torch.cuda.stream(side):
            ys = torch.empty_like(y)
            split_k.launch_split_k(x, g, w, b, ys, eps, config)
            side_outs.append(ys)
    torch.cuda.synchronize()
    _check(outs[0], inputs, dtype, f"gpu {shape} {dtype}")
    assert all(torch.equal(outs[0], y) for y in outs + side_outs)
    assert _counters_at_zero()


class _RecordingLauncher:
    """Stands in for Triton's C launcher: records the arguments a compiled launch would get."""

    prefix = ("function", "packed")

    def __init__(self):
        self.calls = []

    def __call__(self, g0, g1, g2, stream, function, packed, *args):
        assert (function, packed) == self.prefix
        self.calls.append(args)


@pytest.mark.parametrize("bias", [True, False])
def test_a_compiled_plan_gets_raw_addresses_of_its_workspace_and_counters(bias, device, monkeypatch):
    """Once compiled, the split-K plan hands the C launcher x, g, w, the bias (w where there is none), a new
    contiguous output, the partial tiles and the partial sums of squares of one fresh workspace (16-byte
    aligned, in that order) and this stream's counters, then the planned sizes."""
    if device != "cpu":
        pytest.skip("drives the plan with a stand-in launcher (the CPU interpreter builds it)")
    monkeypatch.setattr(plans, "_stream", lambda d: 0)
    monkeypatch.setattr(tuned, "split_k_product", lambda *shape_and_dtype: True)
    inputs = FAM.make_inputs((3, 70, 40), "bf16", device, seed=torch.seed() % 2**31)
    if not bias:
        inputs["b"] = None
    rec = _RecordingLauncher()
    with triton_ops():
        ops.rms_norm_linear(**inputs)
        ((_, plan),) = op_plan.PLANS.plans.items()
        assert type(plan) is op_plan.SplitKPlan
        plan.launch.entry = (rec, rec.prefix, 0)
        out = ops.rms_norm_linear(**inputs)
    ((xp, gp, wp, bp, yp, part_p, ss_p, count_p, *tail),) = rec.calls
    x, g, w, b = inputs["x"], inputs["g"], inputs["w"], inputs["b"]
    assert (xp, gp, wp, bp) == (x.data_ptr(), g.data_ptr(), w.data_ptr(), (w if b is None else b).data_ptr())
    assert yp == out.data_ptr()
    assert ss_p - part_p == 4 * plan.parts and part_p % 16 == 0 and ss_p % 16 == 0
    assert count_p == launching.ticket_counters(x, plan.tiles).data_ptr()
    assert tuple(tail) == plan.launch.tail and out.shape == (3, 40) and out.is_contiguous()
    assert all(type(a) is not torch.Tensor for a in rec.calls[0])


@pytest.mark.gpu
def test_gpu_graphs_captured_with_split_k_calls_have_counters_of_their_own():
    """Two CUDA graphs of the same split-K call replayed at once on two streams: each graph zeroes and uses its
    own counters (cached ones would be shared through PyTorch's default capture stream), so both outputs match."""
    inputs = FAM.make_inputs((1, 8192, 11008), "bf16", "cuda", seed=torch.seed() % 2**31)
    x, g, w, b = inputs["x"], inputs["g"], inputs["w"], inputs["b"]
    bn, bk, stages, _ = split_k.SPLIT_TILES[torch.bfloat16][11008]
    config = lib_split_k.config(16, bn, bk, 8, 4, stages)  # x loaded ahead, K split: what an H100 runs here
    graphs, outs = [], []
    for _ in range(2):
        y = torch.empty((1, 11008), dtype=x.dtype, device="cuda")
        split_k.launch_split_k(x, g, w, b, y, 1e-6, config)  # warm up outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            split_k.launch_split_k(x, g, w, b, y, 1e-6, config)
        graphs.append(graph)
        outs.append(y)
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for _ in range(10):
        for graph, stream, y in zip(graphs, streams, outs):
            y.fill_(float("nan"))
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                graph.replay()
        for stream in streams:
            torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    ref = FAM.oracle(**inputs)
    for y in outs:
        assert float((y.double() - ref).norm() / ref.norm()) <= FAM.tolerances["bf16"]


def test_ticket_counters_are_kept_per_device_and_stream_and_grow(monkeypatch):
    """One zeroed buffer per (device, stream), reused while big enough, replaced by a bigger zeroed one when a
    launch needs more counters than it has."""
    monkeypatch.setattr(launching, "_COUNTERS", {})
    t = torch.empty(1)
    first = launching.ticket_counters(t, 10)
    assert first.dtype == torch.int32 and first.numel() >= 10 and int(first.abs().sum()) == 0
    assert launching.ticket_counters(t, first.numel()) is first  # reused, no new memset
    bigger = launching.ticket_counters(t, first.numel() + 1)
    assert bigger is not first and bigger.numel() > first.numel() and int(bigger.abs().sum()) == 0
    assert launching.ticket_counters(t, 5) is bigger and len(launching._COUNTERS) == 1


# ------------------------------------------------------------------------------ g folded into W (prepared weights)
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("pipelined", [False, True], ids=["x ahead", "x pipelined"])
def test_the_folded_kernel_matches_the_oracle(shape, dtype, splits, pipelined, device):
    """On ``diag(g) W`` the kernel reads no g and multiplies x's own values: fp16 as bf16 does, with no check."""
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    y = torch.full((shape[0], shape[2]), float("nan"), dtype=x.dtype, device=device)
    config = lib_split_k.config(16, 32, 32, splits, 4, 3, PIPELINED_X=pipelined)
    meta, _ = split_k.launch_split_k(x, g, folded_weight(g, w), b, y, eps, config, folded=True)
    assert meta["FOLDED"] and meta["PRECISION"] == split_k.precision_of(x.dtype, pipelined, folded=True)
    assert meta["PRECISION"] in (0, 2)  # never fp16's checked products or TF32
    _check(y, inputs, dtype, f"folded {shape} {dtype} split {splits} pipelined {pipelined}")
    assert _counters_at_zero()


@pytest.mark.parametrize("splits", [1, 3])
def test_folded_fp16_needs_no_check_where_fp16_cannot_hold_x_times_g(splits, device):
    """Where |x g| passes 65504 the plain kernel must check and compute again; on the folded weight the tile is x
    itself, which fp16 holds, and g * w is within range: the output is finite and within fp16's tolerance."""
    m, k, n = 5, 300, 70
    gen = torch.Generator().manual_seed(torch.seed() % 2**31)
    x = (torch.randn(m, k, generator=gen) * 300).half().to(device)
    g = ((torch.rand(k, generator=gen) * 4 + 0.5) * 300).half().to(device)
    w = (torch.randn(k, n, generator=gen) / k**0.5).half().to(device)
    b = torch.randn(n, generator=gen).half().to(device)
    assert float((x.double() * g.double()).abs().max()) > 65504
    assert held_fold(g, w) is not None
    y = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    config = lib_split_k.config(16, 32, 64, splits, 4, 3, PIPELINED_X=True)
    meta, _ = split_k.launch_split_k(x, g, folded_weight(g, w), b, y, 1e-6, config, folded=True)
    assert meta["PRECISION"] == 0 and bool(torch.isfinite(y).all())
    _check(y, {"x": x, "g": g, "w": w, "b": b, "eps": 1e-6}, "fp16", "folded fp16 past x * g's range")


def test_a_fold_is_kept_only_where_fp16_holds_it_as_exactly_as_the_plain_op():
    gen = torch.Generator().manual_seed(torch.seed() % 2**31)
    k, n = 64, 24
    w = torch.randn(k, n, generator=gen) / k**0.5
    g = torch.rand(k, generator=gen) + 0.5

    def kept(g: torch.Tensor, w: torch.Tensor) -> bool:
        fold = held_fold(g, w)
        assert fold is None or torch.equal(fold, folded_weight(g, w))  # the staleness check rebuilds it so
        return fold is not None

    assert kept(g.half(), w.half()) and kept(g.bfloat16(), w.bfloat16()) and kept(g, w)
    assert not kept((g * 1e-5).half(), w.half())  # columns of diag(g) W far under fp16's smallest normal
    assert kept((g * 1e-5).bfloat16(), w.bfloat16())  # bf16 has fp32's range
    big = w.clone()
    big[3, 5] = -1000.0
    assert not kept((g.index_fill(0, torch.tensor([3]), 1.0) * 100).half(), big.half())  # -1000 x 100
    zero = w.clone()
    zero[:, 7] = 0.0
    assert kept(g.half(), zero.half())  # a column of zeros folds exactly


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("shape", [(3, 70, 43), (16, 45, 40), (17, 45, 40)], ids=["3x70x43", "16x45x40", "17x45x40"])
def test_the_prepared_objects_run_the_folded_kernel_where_the_op_runs_split_k(shape, dtype, device, monkeypatch):
    """ops.PreparedRMSNormLinear at the rows the plain op gives the split-K kernel runs it on its folded weight (a
    plan of its own, FOLDED) where that config pipelines x, its first and planned calls alike, and the plain op where
    it does not; more rows take the statistics-first kernels (the interpreter's route for any other rows). The
    provider runs the folded kernel at any rows."""
    _scaled_split_k_classes(monkeypatch)
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    taken = tuned.product_route(x, w) == "split_k"
    assert taken == (shape[0] <= 16)  # every dtype's classes hold 5504 and 11008 columns from 2 rows up to 16
    outs = {"provider": FAM.providers["triton_split_k_prepared"].fn(**inputs)}
    with triton_ops():
        prepared = ops.PreparedRMSNormLinear(g, w)
        assert prepared.folded
        outs["prepared first call"] = prepared(x, b, eps)
        outs["prepared planned call"] = prepared(x, b, eps)
        planned = list(op_plan.PREPARED_PLANS.plans.values())
    serves = taken and split_k.folded_serves(x, shape[2])
    assert serves == (taken and dtype != "fp32")  # fp32 loads x ahead in its tiles: the plain op there
    if serves:
        (plan,) = planned
        assert type(plan) is op_plan.SplitKPlan and plan.launch.tail[-1] is True  # FOLDED, the last constexpr
        assert torch.equal(outs["prepared first call"], outs["prepared planned call"])
    elif taken:
        assert planned == [op_plan.PLAIN]
    else:
        assert all(type(p) is not op_plan.SplitKPlan for p in planned)
    for name, out in outs.items():
        _check(out, inputs, dtype, f"{name} {shape}")
    assert _counters_at_zero()


def test_a_prepared_fp16_weight_that_would_not_fold_runs_the_plain_op(device):
    """g so small that diag(g) W sits under fp16's normals: no fold is kept, and calls give the plain op's output."""
    gen = torch.Generator().manual_seed(torch.seed() % 2**31)
    m, k, n = 3, 70, 43
    x = torch.randn(m, k, generator=gen).half().to(device)
    g = ((torch.rand(k, generator=gen) + 0.5) * 1e-5).half().to(device)
    w = (torch.randn(k, n, generator=gen) / k**0.5).half().to(device)
    b = torch.randn(n, generator=gen).half().to(device)
    with triton_ops():
        prepared = ops.PreparedRMSNormLinear(g, w)
        assert not prepared.folded and prepared.wf is None
        out = prepared(x, b, 1e-6)
        plain = ops.rms_norm_linear(x, g, w, b, 1e-6)
        assert not op_plan.PREPARED_PLANS.plans
    assert torch.equal(out, plain)
    _check(out, {"x": x, "g": g, "w": w, "b": b, "eps": 1e-6}, "fp16", "unfolded fp16, tiny g")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_gpu_prepared_objects_take_the_folded_kernel_at_decode_rows_and_the_plain_op_between(dtype):
    """On a GPU: 1 and 16 rows of x2048x5504 run the folded split-K plan, 20 rows the plain op (its plan, none of
    the prepared ones), 64 rows the route its race took (the plain op's plan, or the rstd kernel and pointer
    product's), 1024 rows the statistics-first kernels; every output within the oracle's tolerance."""
    g_w = FAM.make_inputs((1, 2048, 5504), dtype, "cuda", seed=torch.seed() % 2**31)
    g, w, b = g_w["g"], g_w["w"], g_w["b"]
    raced = "raced"
    cases = (
        (1, op_plan.SplitKPlan),
        (16, op_plan.SplitKPlan),
        (20, None),
        (64, raced),
        (1024, op_plan.PreparedTMAPlan),
    )
    with triton_ops():
        prepared = ops.PreparedRMSNormLinear(g, w)
        for rows, kind in cases:
            x = FAM.make_inputs((rows, 2048, 8), dtype, "cuda", seed=torch.seed() % 2**31)["x"]
            plans.reset()
            first, planned = prepared(x, b, 1e-6), prepared(x, b, 1e-6)
            if kind is raced:
                statistics = op_plan.mid_rows_statistics(x, g, w, prepared.wf, b, 1e-6)  # remembered: not raced again
                kind = op_plan.PreparedPointerPlan if statistics else type(op_plan.PLAIN)
            kinds = [type(p) for p in op_plan.PREPARED_PLANS.plans.values()]
            assert kinds == ([] if kind is None else [kind]), rows
            if kind is not op_plan.PreparedPointerPlan:  # (the race's own call of the plain op may leave its plan)
                assert bool(op_plan.PLANS.plans) == (kind in (None, str)), rows
            assert torch.equal(first, planned), rows
            _check(planned, {"x": x, "g": g, "w": w, "b": b, "eps": 1e-6}, dtype, f"prepared {rows} rows")
    assert _counters_at_zero()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_on_an_h200_the_folded_kernel_takes_its_own_tiles_at_5504_columns(dtype, monkeypatch):
    """The folded table comes first on an H200, at 1-16 rows of its column class and K range; elsewhere (the plain
    kernel, 17 rows, another class, fp32) the tables as before."""
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    (least_k, largest_k, (bn, bk, stages, per_sm)), *_ = split_k._FAST_MEMORY_FOLDED[5504]
    for m, k in ((1, least_k), (16, largest_k), (4, (least_k + largest_k) // 2)):
        x = torch.empty((m, k), dtype=dtype, device="meta")
        config = split_k.config_for(x, 5504, folded=True)
        assert (config.kwargs["BLOCK_N"], config.kwargs["BLOCK_K"], config.num_stages) == (bn, bk, stages)
        assert config.kwargs["PIPELINED_X"] and (config.kwargs["SPLIT_K"] == 1) == (per_sm == 0)
    x = torch.empty((4, 4096), dtype=dtype, device="meta")
    plain = split_k.config_for(x, 5504)
    assert (plain.kwargs["BLOCK_N"], plain.kwargs["BLOCK_K"]) == split_k.fast_memory_pipelined_tiles(4096, 5504, dtype)[
        :2
    ]
    assert split_k.fast_memory_folded_tiles(17, 4096, 5504) is None
    assert split_k.fast_memory_folded_tiles(4, 4096, 28672) is None
    fp32 = split_k.config_for(torch.empty((4, 4096), dtype=torch.float32, device="meta"), 5504, folded=True)
    assert not fp32.kwargs["PIPELINED_X"]  # fp32 keeps its own tiles, x loaded ahead


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_the_folded_h200_tiles_match_the_oracle_through_the_prepared_objects(dtype, device, monkeypatch):
    """The folded table's tiles on an odd shape through ops.PreparedRMSNormLinear's first and planned calls, with the
    K range and the dimension floor scaled down (the interpreter takes minutes over a real decode weight)."""
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    tiles = split_k._FAST_MEMORY_FOLDED[5504][0][2]
    monkeypatch.setattr(split_k, "_FAST_MEMORY_FOLDED", {5504: ((16, 1 << 20, tiles),)})
    _scaled_split_k_classes(monkeypatch)
    inputs = FAM.make_inputs((3, 520, 43), dtype, device, seed=torch.seed() % 2**31)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    assert split_k.config_for(x, 43, folded=True).kwargs["BLOCK_K"] == tiles[1]
    with triton_ops():
        prepared = ops.PreparedRMSNormLinear(g, w)
        first, planned = prepared(x, b, eps), prepared(x, b, eps)
        (plan,) = op_plan.PREPARED_PLANS.plans.values()
    assert type(plan) is op_plan.SplitKPlan and torch.equal(first, planned)
    _check(planned, inputs, dtype, f"folded H200 tiles {tiles}")
    assert _counters_at_zero()


def test_on_an_h200_prepared_objects_take_the_folded_kernel_between_the_column_classes(monkeypatch):
    """On an H200 the prepared objects take the kernel on their fold at 1-16 16-bit rows with K and N in the raced
    ranges (``split_k.FAST_MEMORY_FOLDED_BETWEEN``) where the plain op takes the norm then a product; 17 rows, K or N
    past the ranges, float32, ragged weights and an H100 do not."""
    (k_lo, k_hi), (n_lo, n_hi) = split_k.FAST_MEMORY_FOLDED_BETWEEN

    def between(m: int, k: int, n: int, dtype: torch.dtype = torch.bfloat16) -> bool:
        return split_k.folded_between_classes(torch.empty((m, k), dtype=dtype, device="meta"), n)

    assert not between(4, 4096, 6144)  # an H100
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    for dtype in (torch.bfloat16, torch.float16):
        for m, k, n in ((1, k_lo, n_lo), (16, k_hi, n_hi), (4, 4096, 6144), (1, 3584, 4608), (16, 5120, 7168)):
            assert between(m, k, n, dtype), (m, k, n, dtype)
            x = torch.empty((m, k), dtype=dtype)
            assert tuned.product_route(x, torch.empty((k, n), dtype=dtype)) != "split_k", (m, k, n)
    for m, k, n in (
        (17, 4096, 6144),
        (4, k_lo - 1, 6144),
        (4, k_hi + 1, 6144),
        (4, 4096, n_lo - 1),
        (4, 4096, n_hi + 1),
    ):
        assert not between(m, k, n), (m, k, n)
    assert not between(4, 4096, 6144, torch.float32)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_an_h200_prepared_object_runs_the_folded_kernel_between_the_classes(dtype, device, monkeypatch):
    """With the between-classes ranges scaled down to an interpreter's shape, an H200's prepared object runs the kernel
    on its fold where the plain op takes the norm then a product: its first call and its plan (FOLDED), both against
    the float64 oracle on fresh inputs."""
    _scaled_split_k_classes(monkeypatch)
    monkeypatch.setattr(tuned, "split_k_product", lambda *a, **k: False)  # the plain op: the norm then a product
    monkeypatch.setattr(launching, "fast_memory", lambda t: True)
    monkeypatch.setattr(split_k, "FAST_MEMORY_FOLDED_BETWEEN", ((16, 128), (16, 64)))
    monkeypatch.setattr(
        split_k, "_FAST_MEMORY_FOLDED", {5504: ((16, 128, (64, 64, 2, 0)),), 11008: ((16, 128, (64, 64, 2, 0)),)}
    )
    shape = (3, 70, 43)
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    assert tuned.product_route(x, w) != "split_k" and split_k.folded_between_classes(x, shape[2])
    with triton_ops():
        prepared = ops.PreparedRMSNormLinear(g, w)
        first = prepared(x, b, eps)
        planned = prepared(x, b, eps)
        (plan,) = op_plan.PREPARED_PLANS.plans.values()
    assert type(plan) is op_plan.SplitKPlan and plan.launch.tail[-1] is True  # FOLDED, the last constexpr
    assert torch.equal(first, planned)
    _check(planned, inputs, dtype, f"prepared between the classes {shape}")
    assert _counters_at_zero()
