"""rmsnorm's whole-row kernel: one program a 16-bit row of 64-128 KB, the row held in x's dtype by 32 warps, which an
H200's dispatch takes for many such rows. Checked against the float64 oracle (the interpreter here, compiled on a GPU),
its rule, and its registers compiled for sm_90 under this Triton (it must fit 1024 threads' 64 registers unspilled)."""

from __future__ import annotations

import pytest
import torch

from kprof.kernels import discover
from kprof.kernels.rmsnorm import tuned
from kprof.kernels.rmsnorm.reference import rmsnorm_oracle
from tests.compile_child import child_json

FAM = discover()["rmsnorm"]
WHOLE = tuned.Config("whole", tuned._WHOLE_ROW_BLOCK, 1, tuned._WHOLE_ROW_WARPS)
_seed = iter(range(10**6))


def fresh_rows(rows: int, n: int, stride: int, dtype: str, device: str) -> dict:
    """Fresh inputs whose x is ``rows`` rows of ``n`` taken from rows ``stride`` apart."""
    inputs = FAM.make_inputs((rows, stride), dtype, device, seed=4000 + next(_seed) + torch.seed() % 1000)
    inputs["x"] = inputs["x"][:, :n]
    inputs["weight"] = inputs["weight"][:n].contiguous()
    return inputs


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("rows,n,stride", [(3, 65536, 65536), (2, 32776, 32776), (2, 40008, 40016), (1, 65528, 65536)])
def test_the_whole_row_kernel_matches_the_oracle(rows, n, stride, dtype, device):
    """The kernel at odd widths from just over half its block to all of it, contiguous and strided rows, into a
    poisoned output."""
    inputs = fresh_rows(rows, n, stride, dtype, device)
    x, w, eps = inputs["x"], inputs["weight"], inputs["eps"]
    y = torch.full(x.shape, float("nan"), dtype=x.dtype, device=x.device)
    tuned.launch_with_config(WHOLE, x, w, y, eps)
    ref = rmsnorm_oracle(x, w, eps)
    assert not torch.isnan(y).any(), "elements left unwritten"
    err = float((y.double() - ref).norm() / ref.norm())
    assert err <= FAM.tolerances[dtype], err


def test_an_h200_takes_the_whole_row_kernel_for_many_16bit_rows_of_128_kb():
    """From ``_WHOLE_ROW_MIN_ROWS`` rows of 65536 16-bit elements on an H200. Fewer rows, other widths (the masked
    kernel was not faster there), float32, an H100 and x's rows off 16 bytes (``whole_rows`` False, from
    ``config_for``'s row stride) keep what they had."""
    low = tuned._WHOLE_ROW_MIN_ROWS
    for rows in (low, 32768):
        assert tuned.choose_config(65536, 2, rows, fast_memory=True) == WHOLE, rows
        assert tuned.choose_config(65536, 2, rows).kernel != "whole", rows
    for n, es, rows in [(65536, 2, low - 1), (32768, 2, low), (65544, 2, low), (40960, 2, low), (65536, 4, low)]:
        assert tuned.choose_config(n, es, rows, fast_memory=True).kernel != "whole", (n, es, rows)
    assert tuned.choose_config(65536, 2, low, fast_memory=True, whole_rows=False).kernel != "whole"


def test_config_for_keeps_rows_off_16_bytes_from_the_whole_row_kernel(monkeypatch):
    """A row stride that is not a multiple of 8 elements: the kernel before, on an H200 too."""
    from kprof.kernels.lib import launching

    monkeypatch.setattr(launching, "fast_memory_at", lambda index: True)  # an H200's, without one
    monkeypatch.setattr(launching, "sm_count_at", lambda index: 132)
    rows = tuned._WHOLE_ROW_MIN_ROWS
    assert tuned.config_for(65536, 2, rows, 0, None, 65536) == WHOLE
    assert tuned.config_for(65536, 2, rows, 0, None, 65540).kernel != "whole"


PROBE = r"""
import json, sys
import torch
from kprof.kernels.lib.launching import vector_align
from kprof.kernels.rmsnorm import tuned
from kprof.specialization import compile_resources

out = []
for dtype in (torch.bfloat16, torch.float16):
    for n in (32776, 40960, 65528, 65536):
        x = torch.empty(4, n, dtype=dtype)
        args = (x, torch.empty(n, dtype=dtype), torch.empty_like(x), n, n, 4, n, 1e-6)
        options = {"BLOCK_N": tuned._WHOLE_ROW_BLOCK, "I64": False, "ALIGN": vector_align(2, n, n),
                   "EVEN": n == tuned._WHOLE_ROW_BLOCK, "num_warps": tuned._WHOLE_ROW_WARPS}
        res = compile_resources(tuned.whole_row_kernel, args, options)
        out.append({"dtype": str(dtype), "n": n, "registers": res["registers"], "spill": res["spill_bytes"]})
print(json.dumps(out))
"""


def test_the_whole_row_kernel_fits_its_threads_registers():
    """Compiled for sm_90 under this Triton, unmasked at the rule's width and masked at others: at most 64 registers a
    thread (1024 threads an SM), and at most 8 bytes spilled (fp16 unmasked, under Triton 3.6 and 3.9; ran at 97.6% of
    a copy at 8192x65536 on an H200 with 2 bytes spilled)."""
    for got in child_json(["-c", PROBE], timeout=900):
        assert got["registers"] <= 64 and got["spill"] <= 8, got


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_the_whole_row_kernel_through_the_dispatch_on_a_gpu(dtype):
    """2048x65536 (on an H200 the dispatch takes the whole-row kernel there) and the kernel itself masked at
    1024x40960: triton_tuned, the ops API and the kernel match the float64 oracle, three calls each."""
    from kprof.kernels import ops
    from kprof.kernels.lib import launching

    for rows, n in ((2048, 65536), (1024, 40960)):
        inputs = fresh_rows(rows, n, n, dtype, "cuda")
        x, w, eps = inputs["x"], inputs["weight"], inputs["eps"]
        if launching.fast_memory(x) and n == tuned._WHOLE_ROW_BLOCK:
            assert tuned.config_for(n, 2, rows, x.get_device(), x.dtype) == WHOLE
        ref = rmsnorm_oracle(x, w, eps)
        for _ in range(3):
            direct = torch.full_like(x, float("nan"))
            tuned.launch_with_config(WHOLE, x, w, direct, eps)
            for y in (direct, FAM.providers["triton_tuned"].fn(x, w, eps), ops.rms_norm(x, w, eps)):
                err = float((y.double() - ref).norm() / ref.norm())
                assert err <= FAM.tolerances[dtype], err
