"""The kernels told what their row width and strides are multiples of (``launching.vector_align`` and
``known_multiple``): the rule itself, every kernel that takes ``ALIGN`` (rmsnorm's, add_rmsnorm's, the gated
families' tile and flat kernels) against the float64 oracle at widths and strides of each alignment, and the sm_90
PTX that shows why it is there (16-byte loads at a width of 2056, and at H = 1000).
"""

from __future__ import annotations

import json

import pytest
import torch
import triton
from hypothesis import given, settings
from hypothesis import strategies as st

from kprof.kernels import discover
from kprof.kernels.lib.launching import vector_align
from kprof.specialization import recording
from tests.compile_child import child_json

RMS = discover()["rmsnorm"]
ADD = discover()["add_rmsnorm"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.lists(st.integers(0, 1 << 20), min_size=1, max_size=4))
def test_vector_align_is_the_largest_vector_every_int_allows(element_size, ints):
    align = vector_align(element_size, *ints)
    if all(v % 16 == 0 for v in ints):
        assert align == 1  # Triton's specialization says so already: the binary stays the one it was
        return
    cap = max(1, 16 // element_size)
    assert align & (align - 1) == 0 and 1 <= align <= cap
    assert all(v % align == 0 for v in ints)
    assert align == cap or any(v % (2 * align) for v in ints), "a larger vector was allowed"


def test_vector_align_at_the_widths_that_need_it():
    assert vector_align(2, 2056, 2056) == 8  # 2048 + 8: 16-byte vectors of bf16
    assert vector_align(2, 2056, 2064) == 8
    assert vector_align(2, 1002, 1002) == 2
    assert vector_align(4, 2056, 2056) == 4  # 16 bytes of fp32
    assert vector_align(2, 3001, 3001) == 1
    assert vector_align(2, 4096, 8192) == 1


def _strided(fam, n_rows: int, n: int, pad: int, dtype: str, device):
    """Inputs whose rows are ``n + pad`` elements apart (pad keeps the stride's alignment that of ``n``)."""
    inp = fam.make_inputs((n_rows, n + pad), dtype, device, seed=torch.seed() % 2**31)
    return inp, {k: v[:, :n] if v.dim() == 2 else v[:n].contiguous() for k, v in inp.items() if torch.is_tensor(v)}


# (rows, width, row-stride padding): widths that are multiples of 8, 4, 2 and 1 but not 16; for the rows kernel's tail
# form, widths just past a power of two at the same alignments (2056 = 2048 + 8, 1028 = 1024 + 4, ...).
_SHAPES = [(3, 2056, 8), (2, 1004, 4), (5, 1002, 6), (2, 1001, 3)]
_TAIL_SHAPES = [(3, 2056, 8), (2, 1028, 4), (5, 1026, 6), (2, 1025, 3)]
_RMS_CONFIGS = {
    "rows": dict(kernel="rows", block_n=0, rows=2, num_warps=4),
    "rows-tail": dict(kernel="rows", block_n=-1, rows=1, num_warps=4, tail=-1),
    "two-pass": dict(kernel="two_pass", block_n=512, rows=2, num_warps=4),
    "two-pass-const": dict(kernel="two_pass", block_n=256, rows=1, num_warps=4, cols_const=True),
    "looped": dict(kernel="looped", block_n=256, rows=1, num_warps=4),
}


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize(
    "name, n_rows, n, pad",
    [(name, *shape) for name in _RMS_CONFIGS for shape in (_TAIL_SHAPES if name == "rows-tail" else _SHAPES)],
)
def test_rmsnorm_kernels_at_every_alignment(name, n_rows, n, pad, dtype, device):
    from kprof.kernels.rmsnorm.tuned import Config, head_and_tail, launch_with_config

    cfg = _RMS_CONFIGS[name]
    if cfg["block_n"] == 0:
        cfg = dict(cfg, block_n=triton.next_power_of_2(n))
    if cfg.get("tail") == -1:
        head, tail = head_and_tail(n)
        assert tail and head + tail < 2 * head, n
        cfg = dict(cfg, block_n=head, tail=tail)
    inp, x = _strided(RMS, n_rows, n, pad, dtype, device)
    es = x["x"].element_size()
    assert vector_align(es, n, x["x"].stride(0), n) == min(16 // es, n & -n, (n + pad) & -(n + pad))
    y = torch.full((n_rows, n), float("nan"), dtype=x["x"].dtype, device=device)
    launch_with_config(Config(**cfg), x["x"], x["weight"], y, inp["eps"])
    ref = RMS.oracle(x=x["x"], weight=x["weight"], eps=inp["eps"])
    assert not y.isnan().any(), "output left unwritten"
    assert ((y.double() - ref).norm() / ref.norm()).item() < RMS.tolerances[dtype]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("n_rows, n, pad", _SHAPES)
@pytest.mark.parametrize(
    "kernel, block_n, cols_const", [("rows", 0, False), ("looped", 256, False), ("looped", 512, True)]
)
def test_add_rmsnorm_kernels_at_every_alignment(kernel, block_n, cols_const, n_rows, n, pad, dtype, device):
    from kprof.kernels.add_rmsnorm.tuned import Config, launch_with_config

    inp, x = _strided(ADD, n_rows, n, pad, dtype, device)
    y, h = (torch.full((n_rows, n), float("nan"), dtype=x["x"].dtype, device=device) for _ in range(2))
    cfg = Config(kernel, block_n or triton.next_power_of_2(n), 1, 4, cols_const=cols_const)
    launch_with_config(cfg, x["x"], x["residual"], x["weight"], y, h, inp["eps"])
    ref_y, ref_h = ADD.oracle(x=x["x"], residual=x["residual"], weight=x["weight"], eps=inp["eps"])
    for got, ref in ((y, ref_y), (h, ref_h)):
        assert not got.isnan().any(), "output left unwritten"
        assert ((got.double() - ref).norm() / ref.norm()).item() < ADD.tolerances[dtype]


@pytest.mark.parametrize("family", ["silu_mul", "gelu_mul"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("n_rows, h, pad", _SHAPES)
@pytest.mark.parametrize("flat", [False, True], ids=["tile", "flat"])
def test_gated_kernels_at_every_alignment(family, flat, n_rows, h, pad, dtype, device):
    """The tile and flat kernels (the flat one across row ends) with x's rows 2 (H + pad) apart."""
    import importlib

    from kprof.kernels.lib import gated

    fam = discover()[family]
    kernels = importlib.import_module(f"kprof.kernels.{family}.kernels").KERNELS
    inp = fam.make_inputs((n_rows, 2 * (h + pad)), dtype, device, seed=torch.seed() % 2**31)
    x = inp["x"][:, : 2 * h]
    assert vector_align(x.element_size(), h, x.stride(0)) == min(
        16 // x.element_size(), h & -h, (2 * (h + pad)) & -(2 * (h + pad))
    )
    y = torch.full((n_rows, h), float("nan"), dtype=x.dtype, device=device)
    cfg = gated.Config(256, 1, 4, False, flat=True) if flat else gated.Config(512, 2, 4, True)
    gated.launch_tile(kernels, cfg, x, y)
    ref = fam.oracle(x=x)
    assert not y.isnan().any(), "output left unwritten"
    assert ((y.double() - ref).norm() / ref.norm()).item() < fam.tolerances[dtype]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a recording keeps the arguments of interpreted launches")
def test_a_width_of_2056_loads_and_stores_16_bytes_at_a_time_once_aligned():
    """Compiled for sm_90 (``python -m kprof.specialization``, as ``kprof profile`` does offline): at 2056 bf16
    columns (a multiple of 8, not of 16) the kernels load and store 2 bytes at a time unless told the alignment,
    and 16 bytes at a time once told, as at 2048. The tail block of 8 columns stays 2-byte (one element a thread)."""
    from kprof.kernels.rmsnorm.tuned import Config, launch_with_config

    inp = RMS.make_inputs((3, 2056), "bf16", "cpu", 2)
    x, w, y = inp["x"], inp["weight"], torch.empty_like(inp["x"])
    cfgs = [
        Config("rows", block_n=4096, rows=1, num_warps=8),
        Config("two_pass", block_n=2048, rows=1, num_warps=8, cols_const=True),
        Config("rows", block_n=2048, rows=1, num_warps=8, tail=8),
    ]
    with recording() as rec:
        for cfg in cfgs:
            for align in (False, True):
                launch_with_config(cfg, x, w, y, inp["eps"], align=align)
    found = _offline_instructions(rec)
    (rows, rows_al), (two, two_al), (tail, tail_al) = zip(found[::2], found[1::2], strict=True)
    for before, after in ((rows, rows_al), (two, two_al)):
        assert before["st.global vector"] == 0, before
        _assert_scalar_then_vector(before, after)
    assert tail["st.global vector"] == 0 and tail_al["st.global vector"] > 0, (tail, tail_al)
    assert tail_al["ld.global 16-bit"] < tail["ld.global 16-bit"], (tail, tail_al)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a recording keeps the arguments of interpreted launches")
def test_gated_kernels_at_h_1000_load_16_bytes_at_a_time_once_aligned():
    """silu_mul's tile and flat kernels at H = 1000 bf16 (the up half 2000 bytes into a row, 16-byte aligned only if
    the compiler is told H is a multiple of 8): 2-byte loads and stores without ALIGN, none with it."""
    from kprof.kernels.lib import gated
    from kprof.kernels.silu_mul.kernels import KERNELS

    x = discover()["silu_mul"].make_inputs((3, 2000), "bf16", "cpu", 2)["x"]
    y = torch.empty((3, 1000), dtype=x.dtype)
    with recording() as rec:
        for cfg in (gated.Config(1024, 1, 4, False), gated.Config(2048, 1, 8, False, flat=True)):
            for align in (False, True):
                gated.launch_tile(KERNELS, cfg, x, y, align=align)
    found = _offline_instructions(rec)
    for before, after in zip(found[::2], found[1::2], strict=True):
        assert before["ld.global 16-bit"] > 0, before
        _assert_scalar_then_vector(before, after)


def _offline_instructions(rec) -> list[dict]:
    """The memory instructions of each recorded launch compiled for sm_90 in a child process (the interpreter off),
    as ``kprof profile`` compiles offline."""
    payload = json.dumps({"arch": 90, "instructions": True, "calls": rec.calls})
    return [a["instructions"] for a in child_json(["-m", "kprof.specialization"], stdin=payload)]


def _assert_scalar_then_vector(before: dict, after: dict) -> None:
    """2-byte stores without ALIGN; with it, vector loads and stores and no 2-byte ones."""
    assert before["st.global 16-bit"] > 0, before
    assert after["ld.global 16-bit"] == after["st.global 16-bit"] == 0, after
    assert after["ld.global vector"] > 0 and after["st.global vector"] > 0, after
