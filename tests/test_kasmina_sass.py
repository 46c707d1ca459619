"""``benchmarks/kasmina_sass.py``, on which the H200 table's register cap rests: compiled for sm_90 on the CPU, the
kernel's launch options carry ``maxnreg`` to ptxas (the interpreter ignores it), and the cap lets an SM hold more of
the capped tile's programs (``kprof.occupancy``)."""

from __future__ import annotations

from pathlib import Path

from tests.compile_child import child_json

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"

CAP_PROBE = """
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import kasmina_sass as ks
out = {}
for cap in (0, 128):
    k = ks.compile_kernel((63, 1000, 64), torch.bfloat16, 16, 2, 2, cap)
    out[cap] = [k.registers, k.stack, len(ks.loops(k.sass)), k.resident()]
print(json.dumps(out))
"""


TABLE_PROBE = """
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import kasmina_sass as ks
from kprof.kernels.kasmina import branch_free
out = []
for t in branch_free._FAST_MEMORY_TILES:
    if not t.maxnreg:
        continue
    lo = -(-t.channels[0] // t.channel_step) * t.channel_step
    for c in (lo, t.channels[1]):
        for dtype in ([torch.float32] if t.fp32 else [torch.bfloat16, torch.float16]):
            k = ks.compile_kernel((t.rows[0] + 3, 1000, c), dtype, t.block_b, t.num_warps, t.stats, t.maxnreg)
            out.append([c, str(dtype), t.maxnreg, k.registers])
print(json.dumps(out))
"""


def _probe(code: str) -> object:
    return child_json(["-c", code, str(BENCHMARKS)])


def test_a_register_cap_reaches_ptxas():
    """Uncapped, the 16 x 2 tile with per-element sums takes more than 128 registers a thread at 63x1000x64 bf16
    (the H200 table's capped row, its tiles masked: where every tile is full the kernel drops its masks and fits
    128 uncapped); with the launch's cap at 128 it takes at most 128, and the SM holds more of its programs."""
    out = _probe(CAP_PROBE)
    (regs, _, loops, resident), (capped, stack, capped_loops, capped_resident) = out["0"], out["128"]
    assert regs > 128 >= capped and loops >= 1 and capped_loops >= 1
    assert capped_resident > resident and stack >= 0


def test_every_capped_row_of_the_h200_table_compiles_within_its_cap():
    """ptxas fails a kernel it cannot fit in the cap (at 256 channels in 64-row tiles it asked for 154): each table row
    with a cap compiles at both ends of its channels, in each of its dtypes, within it."""
    out = _probe(TABLE_PROBE)
    assert out, "the table has no capped row"
    for c, dtype, cap, registers in out:
        assert 0 < registers <= cap, (c, dtype)


EVEN_PROBE = """
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import kasmina_sass as ks
out = {}
for shape, tile in (((512, 1000, 64), (16, 2)), ((512, 1000, 32), (32, 2))):
    for even in (False, True):
        k = ks.compile_kernel(shape, torch.bfloat16, *tile, 2, 0, even)
        row = ks.loops(k.sass)[0]
        out[f"{shape[2]} {int(even)}"] = [row["instructions"], row["FSEL"], k.registers, k.stack, k.resident()]
print(json.dumps(out))
"""


def test_where_every_tile_is_full_the_row_loop_drops_its_masks():
    """``EVEN`` (every tile full, C == BLOCK_C) makes the masks constants: the row loop compiles to fewer
    instructions and selects, in no more registers, and an SM holds at least as many programs."""
    out = _probe(EVEN_PROBE)
    for c in ("64", "32"):
        (ins, fsel, regs, stack, resident), (ins_e, fsel_e, regs_e, stack_e, resident_e) = out[f"{c} 0"], out[f"{c} 1"]
        assert ins_e < ins and fsel_e < fsel, c
        assert regs_e <= regs and stack_e <= stack and resident_e >= resident, c
