"""The wide-row kernels that only a GPU runs (rmsnorm's and add_rmsnorm's cooperative, pipelined and slotted
kernels: the programs of a row meet, which Triton's interpreter, one program after another, cannot do; the
interpreter tests run them only where one program can finish a row), compiled for sm_90 on
the CPU with the Triton installed here, at every layout their GPU dispatch picks over the families' default sweeps
and grids (on an H100 and on an H200). The interpreter tests cannot reach these kernels; the GPU
tests run them on the GPU machine's Triton. Here they are checked under this Triton for what their meeting relies
on, read from the PTX: the tickets are relaxed atomics, each program's arrival releases its partial sum, the waits
acquire, and the partial sums are read from L2 past L1 (the slotted kernels: relaxed atomics only, volatile
polls, no fence); and rmsnorm's pipelined and slotted 16-bit kernels convert fp16 a second time in inline PTX."""

from __future__ import annotations

import pytest

from tests.compile_child import child_json

PROBE = r"""
import json, re
from kprof.dtypes import torch_dtype
from kprof.kernels import discover
from kprof.kernels.add_rmsnorm import cooperative as add_cooperative
from kprof.kernels.add_rmsnorm import tuned as add_tuned
from kprof.kernels.rmsnorm import cooperative as rms_cooperative
from kprof.kernels.rmsnorm import tuned as rms_tuned
from kprof.specialization import compile_for, describe_call, memory_order

INLINE_ASM = re.compile(r"// begin inline asm(.*?)// end inline asm", re.S)
out, seen = [], set()


def record(family, dtype, shape, kernel_name, kernel, args, options):
    key = json.dumps(describe_call(kernel, args, options), sort_keys=True)
    if key in seen:
        return
    seen.add(key)
    ptx = compile_for(kernel, args, options).asm["ptx"]
    asm = " ".join(INLINE_ASM.findall(ptx))
    out.append({"family": family, "dtype": dtype, "shape": list(shape), "kernel": kernel_name,
                "chunk": options["CHUNK"], "warps": options["num_warps"],
                "order": memory_order(ptx), "asm_cvt_f16": asm.count("cvt.f32.f16"),
                "volatile_loads": len(re.findall(r"\bld\.volatile\.global\b", ptx))})


H100_H200 = ({}, {"fast_memory": True})
for family, tuned, gpus in (("rmsnorm", rms_tuned, H100_H200), ("add_rmsnorm", add_tuned, H100_H200)):
    fam = discover()[family]
    sweeps = [fam.sweep("gpu"), *fam.grid_parts().values()]
    for sweep, gpu in [(sweep, gpu) for sweep in sweeps for gpu in gpus]:
        for dtype in sweep.dtypes:
            for shape in sweep.shapes:
                rows = 1
                for d in shape[:-1]:
                    rows *= d
                found = tuned.offline_wide_row_call(rows, shape[-1], torch_dtype(dtype), **gpu)
                if found is not None:
                    record(family, dtype, shape, found[0].kernel, *found[1])
# every layout an H200's 16-bit wide rows may take once its registers are known (``fitted``), whichever this Triton's
# registers make the dispatch take at the grids' widths
tables = (
    ("rmsnorm", rms_cooperative, {d: rms_tuned._FAST_MEMORY_16BIT_LAYOUTS for d in ("bf16", "fp16")}),
    ("add_rmsnorm", add_cooperative, {"fp16": add_tuned._FAST_MEMORY_LAYOUTS["fp16"],
                                      "bf16": add_tuned._FAST_MEMORY_LAYOUTS["bf16 widest"]}),
)
for family, cooperative, by_dtype in tables:
    for dtype, layouts in by_dtype.items():
        for lay in layouts:
            call = cooperative.offline_call("slotted", 1024, 98304, torch_dtype(dtype), lay.chunk, 0, lay.warps)
            record(family, dtype, (1024, 98304), "slotted", *call)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def compiled() -> list[dict]:
    return child_json(["-c", PROBE], timeout=1200)


def test_every_wide_row_layout_of_the_dispatch_compiles(compiled):
    """Both kernels of both families, in each dtype their dispatch gives them (16-bit rows pipeline in rmsnorm,
    fp32 rows cooperate; add_rmsnorm: fp16 pipelines, bf16 pipelines at 512-8191 rows and cooperates otherwise; on an
    H200 both 16-bit dtypes cooperate at 8-16 MiB of rows too many to split, and every dtype's pipelined or
    cooperative rows of 16 MiB or more take the slotted kernel)."""
    kinds = {(c["family"], c["dtype"], c["kernel"]) for c in compiled}
    assert kinds == {
        ("rmsnorm", "bf16", "pipelined"),
        ("rmsnorm", "fp16", "pipelined"),
        ("rmsnorm", "bf16", "slotted"),
        ("rmsnorm", "fp16", "slotted"),
        ("rmsnorm", "fp32", "cooperative"),
        ("add_rmsnorm", "bf16", "pipelined"),
        ("add_rmsnorm", "bf16", "cooperative"),
        ("add_rmsnorm", "fp16", "pipelined"),
        ("add_rmsnorm", "bf16", "slotted"),
        ("add_rmsnorm", "fp16", "slotted"),
        ("add_rmsnorm", "fp16", "cooperative"),
        ("add_rmsnorm", "fp32", "cooperative"),
        ("rmsnorm", "fp32", "slotted"),
        ("add_rmsnorm", "fp32", "slotted"),
    }, sorted(kinds)


def test_the_h200_layout_of_add_rmsnorm_bf16_compiles(compiled):
    """add_rmsnorm's bf16 pipelined layout for an H200 (4096-element chunks, 4 warps) is among those compiled, beside
    the H100's (8192, 16 warps)."""
    layouts = {(c["chunk"], c["warps"]) for c in compiled if c["family"] == "add_rmsnorm" and c["dtype"] == "bf16"}
    assert {(4096, 4), (8192, 16)} <= layouts, sorted(layouts)


def test_the_meeting_orders_memory_as_it_relies_on(compiled):
    """Per kernel: tickets as relaxed atomics and none stronger (a ticket publishes nothing), arrivals that
    release (an atomic or a reduction), waits that acquire (a load or an atomic), no atomic without an order,
    and the row's partial sums loaded .cg (from L2)."""
    for c in compiled:
        order, where = c["order"], (c["family"], c["dtype"], c["shape"], c["kernel"])
        if c["kernel"] == "slotted":
            continue  # its own test below
        assert order["relaxed atomic"] >= 1, (where, order)  # the tickets (two take sites in a pipelined kernel)
        assert order["release atomic"] >= 1, (where, order)  # the arrivals
        assert order["acquire load"] + order["acquire atomic"] >= 1, (where, order)  # the waits
        assert order["acq_rel atomic"] == 0 and order["atomic, no order"] == 0, (where, order)
        assert order["ld.global.cg"] >= 1, (where, order)
        if c["kernel"] == "pipelined":
            assert order["relaxed atomic"] >= 2, (where, order)  # the first ticket and each one after


def test_the_slotted_meeting_has_no_fence_and_polls_with_volatile_loads(compiled):
    """Both families' slotted kernels (an H200's layouts, add_rmsnorm's bf16 in two: 4096-element chunks on 4 warps,
    and 8192 on 16 for rows of 131072 columns from 1024 rows; and the layouts 16-bit rows take where the raced one's
    registers leave fewer of its programs an SM: rmsnorm's 16384 on 16, add_rmsnorm fp16's 4096 on 4): every atomic
    relaxed (the tickets at two take sites, the slots' exchanges), no release, acquire or fence anywhere, and the
    row's slots polled with volatile loads."""
    slotted = [c for c in compiled if c["kernel"] == "slotted"]
    layouts = {(c["family"], c["dtype"], c["chunk"], c["warps"]) for c in slotted}
    assert layouts == {
        ("rmsnorm", "bf16", 8192, 8),
        ("rmsnorm", "fp16", 8192, 8),
        ("rmsnorm", "bf16", 16384, 16),
        ("rmsnorm", "fp16", 16384, 16),
        ("add_rmsnorm", "bf16", 4096, 4),
        ("add_rmsnorm", "bf16", 8192, 16),
        ("add_rmsnorm", "fp16", 8192, 8),
        ("add_rmsnorm", "fp16", 4096, 4),
        ("rmsnorm", "fp32", 4096, 4),
        ("add_rmsnorm", "fp32", 4096, 8),
    }, sorted(layouts)
    for c in slotted:
        order, where = c["order"], (c["family"], c["dtype"], c["shape"])
        assert order["relaxed atomic"] >= 3, (where, order)
        others = ("release atomic", "acquire atomic", "acq_rel atomic", "atomic, no order", "acquire load", "fence")
        assert all(order[k] == 0 for k in others), (where, order)
        assert c["volatile_loads"] >= 1, (where, c)


def test_rmsnorm_pipelined_fp16_converts_again_in_inline_ptx(compiled):
    """rmsnorm's pipelined and slotted kernels convert fp16 a second time with ``cvt.f32.f16`` in inline PTX (a
    conversion the compiler cannot merge with the first); no other wide-row kernel does."""
    for c in compiled:
        asm = c["family"] == "rmsnorm" and c["kernel"] in ("pipelined", "slotted") and c["dtype"] == "fp16"
        assert (c["asm_cvt_f16"] > 0) == asm, (c["family"], c["dtype"], c["kernel"], c["asm_cvt_f16"])
