"""Which Triton specialisation ran, and its compiler resources: recorded under the interpreter (CI) and on
the GPU (marked), compiled offline for sm_90 without a GPU, ptxas output parsed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kprof.errors import UnsupportedConfig
from kprof.kernels import discover
from kprof.specialization import Recording, Specialization, offline_resources, parse_ptxas_log, recording
from tests.compile_child import child_json
from tests.conftest import HAS_CUDA

PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_rmsnorm_one_row_kernel' for 'sm_90a'
ptxas info    : Function properties for _rmsnorm_one_row_kernel
    24 bytes stack frame, 16 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 16 bytes smem, 400 bytes cmem[0]
"""


def test_ptxas_log_is_read_for_registers_stack_and_spills():
    assert parse_ptxas_log(PTXAS_LOG) == {"registers": 255, "local_bytes": 24, "spill_bytes": 16}
    with pytest.raises(ValueError, match="registers"):
        parse_ptxas_log("ptxas info    : 0 bytes gmem\n")


def test_label_lists_constexprs_then_launch_options():
    s = Specialization("k", (("BLOCK_N", 4096), ("ROWS", 2)), num_warps=8, num_stages=3, autotuned=True)
    assert s.label() == "BLOCK_N=4096 ROWS=2 num_warps=8 num_stages=3 (autotuned)"
    assert s.config == {"BLOCK_N": 4096, "ROWS": 2, "num_warps": 8, "num_stages": 3}
    assert s.to_dict()["constexprs"] == {"BLOCK_N": 4096, "ROWS": 2}


def _call(family: str, provider: str, shape, dtype="bf16", **kw):
    fam = discover()[family]
    inputs = fam.make_inputs(shape, dtype, "cuda" if HAS_CUDA else "cpu", 3)
    with recording() as rec:
        fam.get_provider(provider).fn(**inputs, **kw)
    return rec


def test_records_the_specialisation_each_version_launches():
    rec = _call("rmsnorm", "triton_one_row", (3, 1000))
    assert [s.kernel for s in rec.launches] == ["_rmsnorm_one_row_kernel"]
    s = rec.launches[0]
    # one_row puts the whole row in one power-of-two block; the warps follow the classic rule for 1024
    assert dict(s.constexprs) == {"BLOCK_N": 1024}
    assert s.num_warps == 4 and s.grid == (3,)


def test_pinned_config_is_what_runs():
    fam = discover()["rmsnorm"]
    pinned = fam.get_provider("triton_one_row[BLOCK_N=2048,num_warps=2]")
    assert pinned.config == (("BLOCK_N", 2048), ("num_warps", 2))
    inputs = fam.make_inputs((2, 1000), "fp32", "cuda" if HAS_CUDA else "cpu", 1)
    with recording() as rec:
        out = pinned.fn(**inputs)
    assert rec.launches[0].config == {"BLOCK_N": 2048, "num_warps": 2, "num_stages": rec.launches[0].num_stages}
    ref = fam.oracle(**inputs)
    assert float((out.double() - ref).norm() / ref.norm()) < fam.tolerances["fp32"]


def test_a_config_the_version_cannot_take_is_unsupported_not_a_crash():
    fam = discover()["rmsnorm"]
    inputs = fam.make_inputs((2, 1000), "bf16", "cuda" if HAS_CUDA else "cpu", 1)
    with pytest.raises(UnsupportedConfig, match="smaller than the row"):
        fam.get_provider("triton_one_row[BLOCK_N=512]").fn(**inputs)
    with pytest.raises(UnsupportedConfig, match="power of two"):
        fam.get_provider("triton_one_row[BLOCK_N=1000]").fn(**inputs)
    sw = discover()["swiglu"]
    with pytest.raises(UnsupportedConfig, match="at least 16"):
        sw.get_provider("triton_tiled[BLOCK_K=8]").fn(
            **sw.make_inputs((4, 32, 48), "bf16", "cuda" if HAS_CUDA else "cpu", 1)
        )


@pytest.mark.skipif(HAS_CUDA, reason="interpreter path")
def test_offline_compile_gives_sm90_resources_that_follow_the_config():
    """Compiled for sm_90 on the CPU (Triton's compiler and ptxas in a child process): more warps for the
    same block means fewer registers per thread; a bigger block per warp needs more."""
    fam = discover()["rmsnorm"]
    inputs = fam.make_inputs((4, 4096), "bf16", "cpu", 2)
    with recording() as rec:
        for cfg in ("BLOCK_N=4096,num_warps=2", "BLOCK_N=4096,num_warps=16", "BLOCK_N=8192,num_warps=2"):
            fam.get_provider(f"triton_one_row[{cfg}]").fn(**inputs)
    recs = offline_resources(rec).launches
    assert all(s.resources_from == "ptxas sm_90 (offline)" for s in recs), [s.resources_from for s in recs]
    few_warps, many_warps, big_block = recs
    assert many_warps.registers < few_warps.registers < big_block.registers
    assert all(s.shared_mem_bytes is not None and s.local_bytes is not None for s in recs)


def test_memory_instructions_are_counted_by_kind():
    from kprof.specialization import memory_instructions

    ptx = """
    cp.async.cg.shared.global [ %r1 + 0 ], [ %rd2 + 0 ], 0x10, %r3;
    @%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
    @%p10 ld.global.b16 { %rs23 }, [ %rd53 + 0 ];
    @%p2 ld.global.L1::evict_last.L2::cache_hint.v4.b32 { %r5, %r6, %r7, %r8 }, [ %rd9 + 0 ], %rd10;
    @%p3 ld.global.L1::evict_first.L2::cache_hint.b16 { %rs24 }, [ %rd54 + 0 ], %rd11;
    ld.global.nc.u16 %rs1, [%rd1];
    st.global.v2.b32 [%rd1], {%r1,%r2};
    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1}, {%r1}, {%r2}, {%f2};
    cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];
    cp.async.commit_group;
    """
    assert memory_instructions(ptx) == {
        "cp.async": 1,
        "tma": 1,
        "ld.global vector": 2,  # the second with cache hints
        "ld.global 16-bit": 3,
        "st.global vector": 1,
        "st.global 16-bit": 0,
        "mma.sync": 1,
        "wgmma": 0,
    }


def test_memory_order_is_counted_by_kind():
    """The forms Triton 3.6 and 3.9 print for the wide-row kernels' meeting (a returning relaxed atomic, a release
    reduction whose result is unused, an acquire load for an atomic add of 0), and other spellings PTX allows."""
    from kprof.specialization import memory_order

    ptx = """
    @%p1 atom.global.gpu.relaxed.add.u32 %r17, [ %rd10 + 0 ], %r18;
    @%p6 red.global.gpu.release.add.u32 [ %rd17 + 0 ], %r18;
    @%p8 atom.global.gpu.release.add.u32 %r41, [ %rd20 + 0 ], %r34;
    @%p1 ld.global.gpu.acquire.b32 %r155, [ %rd44 + 0 ];
    ld.acquire.gpu.global.b32 %r1, [%rd1];
    atom.acq_rel.gpu.global.add.u32 %r1, [%rd1], 1;
    atom.global.acquire.gpu.cas.b32 %r1, [%rd1], 0, 1;
    atom.global.add.u32 %r1, [%rd1], 1;
    redux.sync.add.s32 %r1, %r2, 0xffffffff;
    bar.red.popc.u32 %r4, 0, %p2;
    fence.acq_rel.gpu;
    membar.gl;
    @%p22 ld.global.cg.b32 { %r250 }, [ %rd52 + 0 ];
    ld.global.b32 %r3, [%rd3];
    """
    assert memory_order(ptx) == {
        "relaxed atomic": 1,
        "release atomic": 2,
        "acquire atomic": 1,
        "acq_rel atomic": 1,
        "atomic, no order": 1,  # redux.sync and bar.red are a warp's and a barrier's reductions, not atomics
        "acquire load": 2,
        "fence": 2,
        "ld.global.cg": 1,
    }


@pytest.mark.skipif(HAS_CUDA, reason="interpreter path: a recording keeps the arguments of interpreted launches")
def test_offline_compile_reports_how_a_launch_loads_when_asked():
    """The child compile with ``"instructions": true``: rows of 4096 bf16 move as 16-byte vectors, rows of
    1001 (no alignment to promise) one element at a time."""
    import json

    fam = discover()["rmsnorm"]
    with recording() as rec:
        for shape in ((4, 4096), (4, 1001)):
            fam.get_provider("triton_one_row[BLOCK_N=4096,num_warps=4]").fn(**fam.make_inputs(shape, "bf16", "cpu", 2))
    payload = json.dumps({"arch": 90, "instructions": True, "calls": rec.calls})
    aligned, ragged = (a["instructions"] for a in child_json(["-m", "kprof.specialization"], stdin=payload))
    assert aligned["ld.global vector"] > 0 and aligned["ld.global 16-bit"] == 0, aligned
    assert ragged["ld.global 16-bit"] > 0 and ragged["ld.global vector"] == 0, ragged


@pytest.mark.skipif(HAS_CUDA, reason="interpreter path")
def test_offline_compile_failure_is_reported_per_launch():
    rec = Recording(
        launches=[Specialization("nope")],
        calls=[{"module": "kprof.kernels.rmsnorm.one_row", "name": "no_such_kernel", "args": [], "kwargs": {}}],
    )
    out = offline_resources(rec).launches[0]
    assert out.registers is None and out.resources_from.startswith("offline compile failed")


def test_recording_restores_triton_after_the_block():
    from triton.runtime.interpreter import InterpretedFunction

    before = InterpretedFunction.__dict__["run"]
    with recording():
        pass
    assert InterpretedFunction.__dict__["run"] is before


@pytest.mark.gpu
def test_gpu_records_driver_resources_and_the_autotuners_pick_only():
    rec = _call("rmsnorm", "triton_one_row", (64, 4096))
    s = rec.launches[0]
    assert s.resources_from == "driver" and s.registers > 0 and s.local_bytes == 0
    from kprof.kernels.swiglu import tuned

    inputs = discover()["swiglu"].make_inputs((96, 256, 384), "bf16", "cuda", 1)
    x, wg, wu = inputs["x"].reshape(96, 256), inputs["w_gate"].contiguous(), inputs["w_up"].contiguous()
    y = x.new_empty(96, 384)
    with recording() as rec:  # the autotuned tiled kernel (the provider pins tiles up to 128 rows, races above)
        tuned.launch_tuned(x, wg, wu, y, autotune=True)  # first call for this shape: autotuning happens here
    assert len(rec.launches) == 1 and rec.launches[0].autotuned
    assert {"BLOCK_M", "BLOCK_N", "BLOCK_K"} <= set(dict(rec.launches[0].constexprs))


@pytest.mark.gpu
def test_gpu_offline_compile_matches_the_driver(tmp_path):
    """The offline sm_90 compile reports what the loaded cubin has (same PTX, same ptxas)."""
    code = (
        "import torch, json\n"
        "from kprof.kernels.rmsnorm import one_row\n"
        "from kprof.specialization import compile_resources, recording\n"
        "x = torch.randn(64, 4096, device='cuda', dtype=torch.bfloat16); w = torch.randn(4096, device='cuda', "
        "dtype=torch.bfloat16)\n"
        "with recording() as rec: one_row.rmsnorm_one_row(x, w)\n"
        "s = rec.launches[0]\n"
        "y = torch.empty_like(x)\n"
        "off = compile_resources(one_row._rmsnorm_one_row_kernel, (x, w, y, 4096, 4096, 4096, 1e-6), dict(s.config))\n"
        "print(json.dumps({'driver': s.registers, 'offline': off['registers']}))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    import json

    regs = json.loads(res.stdout.strip().splitlines()[-1])
    assert abs(regs["driver"] - regs["offline"]) <= max(2, regs["driver"] // 10), regs
