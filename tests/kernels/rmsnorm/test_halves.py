"""rmsnorm's halves kernel: one program a row of 256 KB, half the row held in registers and half read twice (kept in
L1), which an H200's dispatch takes for many such rows. Checked against the float64 oracle (the interpreter here, at
small halves; compiled on a GPU), its rule, the spill check that guards it, and its spills compiled for sm_90 under
this Triton."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover
from kprof.kernels.rmsnorm import tuned
from kprof.kernels.rmsnorm.reference import rmsnorm_oracle
from tests.compile_child import child_json

FAM = discover()["rmsnorm"]
_seed = iter(range(10**6))


def halves(n: int) -> tuned.Config:
    return tuned.Config("halves", n // 2, 1, tuned._HALVES_WARPS)


def fresh_rows(rows: int, n: int, stride: int, dtype: str, device: str) -> dict:
    """Fresh inputs whose x is ``rows`` rows of ``n`` taken from rows ``stride`` apart."""
    inputs = FAM.make_inputs((rows, stride), dtype, device, seed=7000 + next(_seed) + torch.seed() % 1000)
    inputs["x"] = inputs["x"][:, :n]
    inputs["weight"] = inputs["weight"][:n].contiguous()
    return inputs


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("rows,n,stride", [(3, 2048, 2048), (5, 1024, 1032), (1, 4096, 4104), (2, 256, 256)])
def test_the_halves_kernel_matches_the_oracle(rows, n, stride, dtype, device):
    """The kernel at halves small enough for the interpreter, odd row counts, contiguous and strided rows (strides a
    multiple of 8, as the rule asks), into a poisoned output."""
    inputs = fresh_rows(rows, n, stride, dtype, device)
    x, w, eps = inputs["x"], inputs["weight"], inputs["eps"]
    y = torch.full(x.shape, float("nan"), dtype=x.dtype, device=x.device)
    tuned.launch_with_config(halves(n), x, w, y, eps)
    ref = rmsnorm_oracle(x, w, eps)
    assert not torch.isnan(y).any(), "elements left unwritten"
    err = float((y.double() - ref).norm() / ref.norm())
    assert err <= FAM.tolerances[dtype], err


def test_an_h200_takes_the_halves_kernel_for_many_rows_of_256_kb():
    """From ``_HALVES_MIN_ROWS`` rows of 256 KB (131072 16-bit or 65536 float32 elements) on an H200; fewer rows,
    other widths, an H100 and rows off 16 bytes keep what they had."""
    low = tuned._HALVES_MIN_ROWS
    for n, es in ((131072, 2), (65536, 4)):
        for rows in (low, 32768):
            assert tuned.choose_config(n, es, rows, fast_memory=True) == halves(n), (n, es, rows)
            assert tuned.choose_config(n, es, rows).kernel != "halves", (n, es, rows)
        assert tuned.choose_config(n, es, low - 1, fast_memory=True).kernel != "halves", (n, es)
        assert tuned.choose_config(n, es, low, fast_memory=True, whole_rows=False).kernel != "halves", (n, es)
    for n, es in ((131064, 2), (98304, 2), (131072, 4), (65536, 2), (32768, 4)):
        assert tuned.choose_config(n, es, low, fast_memory=True).kernel != "halves", (n, es)


@pytest.mark.parametrize("unspilled", [True, False])
def test_config_for_takes_the_halves_kernel_only_where_it_compiles_unspilled(monkeypatch, unspilled):
    """``config_for`` on an H200: the halves kernel where ``halves_unspilled`` says so, the config before it (the
    slotted kernel) where the kernel spills, the dtype is not given, or x's rows are off 16 bytes."""
    from kprof.kernels.lib import launching

    monkeypatch.setattr(launching, "fast_memory_at", lambda index: True)  # an H200's, without one
    monkeypatch.setattr(launching, "sm_count_at", lambda index: 132)
    monkeypatch.setattr(tuned, "halves_unspilled", lambda n, dtype: unspilled)
    monkeypatch.setattr(tuned, "fitted", lambda cfg, *args: cfg)  # the slotted layout's own check compiles; not here
    rows = 2048
    got = tuned.config_for(131072, 2, rows, 0, torch.bfloat16, 131072)
    before = tuned.config_for(131072, 2, rows, 0, torch.bfloat16, 131076)
    assert before.kernel == "slotted"
    assert got == (halves(131072) if unspilled else before)
    assert tuned.config_for(131072, 2, rows, 0, None, 131072).kernel != "halves"


PROBE = r"""
import json, warnings
import torch
from kprof.kernels.rmsnorm import tuned
from kprof.specialization import compile_resources

out = []
for dtype, n in ((torch.bfloat16, 131072), (torch.float16, 131072), (torch.float32, 65536)):
    x = torch.empty(1, n, dtype=dtype)
    args = (x, torch.empty(n, dtype=dtype), x, n, n, 1, n, 1e-6)
    options = {"HALF": n // 2, "I64": False, "ALIGN": 1, "num_warps": tuned._HALVES_WARPS}
    res = compile_resources(tuned.halves_kernel, args, options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unspilled = tuned.halves_unspilled(n, dtype)
    out.append({"dtype": str(dtype), "registers": res["registers"], "spill": res["spill_bytes"],
                "unspilled": unspilled})
print(json.dumps(out))
"""


def test_the_halves_check_reads_the_kernels_own_spills():
    """Compiled for sm_90 under this Triton: 64 registers a thread at most (1024 threads an SM), and
    ``halves_unspilled`` true exactly where at most ``_HALVES_MAX_SPILL`` bytes spill (float32 spills none under
    Triton 3.6 and 3.9; the 16-bit forms spill under 3.9 and the dispatch keeps the slotted kernel there)."""
    got = child_json(["-c", PROBE], timeout=900)
    for g in got:
        assert g["registers"] <= 64, g
        assert g["unspilled"] == (g["spill"] <= tuned._HALVES_MAX_SPILL), g
    assert next(g for g in got if g["dtype"] == "torch.float32")["unspilled"], got


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,n", [("bf16", 131072), ("fp16", 131072), ("fp32", 65536)])
def test_the_halves_kernel_through_the_dispatch_on_a_gpu(dtype, n):
    """1024 rows of 256 KB (on an H200 the dispatch takes the halves kernel there where it compiles unspilled):
    triton_tuned, the ops API and the kernel itself match the float64 oracle, three calls each."""
    from kprof.kernels import ops
    from kprof.kernels.lib import launching

    rows = tuned._HALVES_MIN_ROWS
    inputs = fresh_rows(rows, n, n, dtype, "cuda")
    x, w, eps = inputs["x"], inputs["weight"], inputs["eps"]
    if launching.fast_memory(x) and tuned.halves_unspilled(n, x.dtype):
        assert tuned.config_for(n, x.element_size(), rows, x.get_device(), x.dtype) == halves(n)
    ref = rmsnorm_oracle(x, w, eps)
    for _ in range(3):
        direct = torch.full_like(x, float("nan"))
        tuned.launch_with_config(halves(n), x, w, direct, eps)
        for y in (direct, FAM.providers["triton_tuned"].fn(x, w, eps), ops.rms_norm(x, w, eps)):
            err = float((y.double() - ref).norm() / ref.norm())
            assert err <= FAM.tolerances[dtype], err
