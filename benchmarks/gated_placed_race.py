"""silu_mul's and gelu_mul's launch configs raced at several places in memory (``rmsnorm_placed_race.py``'s method):
the op's config, column tiles of one row with 1024-16384 columns and 4-16 warps (H at run time or compiled in),
flat blocks of 1024-4096 outputs, and the one-row kernel with 4-32 warps (where its block holds the row), beside the ``triton_tuned``, ``triton_one_row`` (a whole row through the one-row kernel,
where its block holds the row), ``torch_compile`` and ``liger`` providers.

    python benchmarks/gated_placed_race.py --out DIR [--shapes 512x12288,2048x8192] [--dtypes bf16,fp16]
        [--families silu_mul,gelu_mul] [--placements 3] [--rounds 3] [--rep-ms 4] [--budget-s 400] [--bodies]

``--bodies`` (silu_mul): the op's launch and Liger's (one whole-row tile, 16 warps, H compiled in), each with silu_mul's
kernel body and two others (``BODIES``).

Shapes are rows x 2H. Each candidate runs once at each place into a NaN-filled output and is checked against the
float64 oracle (a wrong result is reported and not timed). Prints per point the fastest candidates by their mean over
places and their worst place, and the configs Inductor's autotuner kept; writes DIR/placed_race.csv and
DIR/placed_summary.csv (a ``family`` column added to the shape: ``silu_mul 512x12288``).
"""

from __future__ import annotations

import itertools
import random

import torch
import triton
import triton.language as tl
from bench_common import rel_err
from rmsnorm_placed_race import peer_calls, placed_args, places, points, race_point

from kprof.kernels import discover
from kprof.kernels.gelu_mul.kernels import KERNELS as GELU_MUL
from kprof.kernels.gelu_mul.kernels import gelu_tanh
from kprof.kernels.lib import gated, launching
from kprof.kernels.lib.gated import known_row, tile_gate_up
from kprof.kernels.silu_mul.kernels import KERNELS as SILU_MUL
from kprof.kernels.silu_mul.kernels import silu

SHAPES = "512x12288,512x14336,2048x6144,2048x8192"
KERNELS = {"silu_mul": SILU_MUL, "gelu_mul": GELU_MUL}
PEERS = ("triton_tuned", "triton_one_row", "torch_compile", "liger")


# --bodies: silu_mul's tile kernel with two other bodies, to see whether its arithmetic is what Liger's kernel is ahead
# by (Liger rounds silu to the input's dtype and multiplies in it; kprof multiplies in fp32 and rounds once).
@triton.jit
def _tile_div_kernel(x_ptr, y_ptr, x_row_stride, n_rows, H, BLOCK_H: tl.constexpr, ROWS: tl.constexpr,
                     HINTS: tl.constexpr, I64: tl.constexpr, ALIGN: tl.constexpr = 1, COLS: tl.constexpr = 0):  # fmt: skip
    """silu as g / (1 + exp(-g)): one division, no multiply by the sigmoid (the same rounding or better)."""
    g, u, y_offs, mask = tile_gate_up(x_ptr, x_row_stride, n_rows, H, BLOCK_H, ROWS, HINTS, I64, ALIGN, COLS)
    tl.store(y_ptr + y_offs, (g / (1.0 + tl.exp(-g)) * u).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _tile_narrow_kernel(x_ptr, y_ptr, x_row_stride, n_rows, H, BLOCK_H: tl.constexpr, ROWS: tl.constexpr,
                        HINTS: tl.constexpr, I64: tl.constexpr, ALIGN: tl.constexpr = 1, COLS: tl.constexpr = 0):  # fmt: skip
    """Liger's arithmetic: silu rounded to the output's dtype, the product in that dtype (two roundings)."""
    g, u, y_offs, mask = tile_gate_up(x_ptr, x_row_stride, n_rows, H, BLOCK_H, ROWS, HINTS, I64, ALIGN, COLS)
    dt = y_ptr.dtype.element_ty
    tl.store(y_ptr + y_offs, (g * tl.sigmoid(g)).to(dt) * u.to(dt), mask=mask)


BODIES = {
    "div": gated.GatedKernels(SILU_MUL.one_row, _tile_div_kernel, SILU_MUL.flat),
    "narrow": gated.GatedKernels(SILU_MUL.one_row, _tile_narrow_kernel, SILU_MUL.flat),
}


# --rows-1d: the tile kernels with one row a program as a 1-D block (no row mask, no 2-D offsets), and no mask at all
# where H is compiled in and a multiple of the block, beside the shipped tile kernels (each tile candidate twice).
@triton.jit
def _row_block(x_ptr, x_row_stride, H, BLOCK_H: tl.constexpr, I64: tl.constexpr, ALIGN: tl.constexpr):
    """Program (i, j) takes row i's columns [j*BLOCK_H, (j+1)*BLOCK_H) as one 1-D block: gate pointers, output
    offsets and the column mask (``H`` already the compiled-in width where there is one)."""
    H, x_row_stride = known_row(H, x_row_stride, ALIGN)
    row = tl.program_id(0)
    if I64:
        row = row.to(tl.int64)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    return x_ptr + row * x_row_stride + cols, row * H + cols, cols < H


@triton.jit
def _row_gated(x_ptr, y_ptr, x_row_stride, n_rows, H, BLOCK_H: tl.constexpr, ROWS: tl.constexpr, HINTS: tl.constexpr,
               I64: tl.constexpr, ALIGN: tl.constexpr, COLS: tl.constexpr, ACT: tl.constexpr):  # fmt: skip
    """The tile kernel's launch with ``ACT`` as its activation; ROWS = 1 through :func:`_row_block`."""
    if ROWS == 1:
        if COLS:
            H = COLS
        g_ptrs, y_offs, mask = _row_block(x_ptr, x_row_stride, H, BLOCK_H, I64, ALIGN)
        if COLS % BLOCK_H == 0 and COLS > 0:  # every column of every block is in the row: no mask
            g = tl.load(g_ptrs).to(tl.float32)
            u = tl.load(g_ptrs + H).to(tl.float32)
            tl.store(y_ptr + y_offs, (ACT(g) * u).to(y_ptr.dtype.element_ty))
        else:
            g, u = gated.load_gate_up(g_ptrs, H, mask, HINTS)
            tl.store(y_ptr + y_offs, (ACT(g) * u).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        g, u, y_offs, mask = tile_gate_up(x_ptr, x_row_stride, n_rows, H, BLOCK_H, ROWS, HINTS, I64, ALIGN, COLS)
        tl.store(y_ptr + y_offs, (ACT(g) * u).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _row_silu_kernel(x_ptr, y_ptr, x_row_stride, n_rows, H, BLOCK_H: tl.constexpr, ROWS: tl.constexpr,
                     HINTS: tl.constexpr, I64: tl.constexpr, ALIGN: tl.constexpr = 1, COLS: tl.constexpr = 0):  # fmt: skip
    _row_gated(x_ptr, y_ptr, x_row_stride, n_rows, H, BLOCK_H, ROWS, HINTS, I64, ALIGN, COLS, silu)


@triton.jit
def _row_gelu_kernel(x_ptr, y_ptr, x_row_stride, n_rows, H, BLOCK_H: tl.constexpr, ROWS: tl.constexpr,
                     HINTS: tl.constexpr, I64: tl.constexpr, ALIGN: tl.constexpr = 1, COLS: tl.constexpr = 0):  # fmt: skip
    _row_gated(x_ptr, y_ptr, x_row_stride, n_rows, H, BLOCK_H, ROWS, HINTS, I64, ALIGN, COLS, gelu_tanh)


ROWS_1D = {
    "silu_mul": gated.GatedKernels(SILU_MUL.one_row, _row_silu_kernel, SILU_MUL.flat),
    "gelu_mul": gated.GatedKernels(GELU_MUL.one_row, _row_gelu_kernel, GELU_MUL.flat),
}


def candidates(h: int, element_size: int, op: gated.Config) -> dict[str, gated.Config]:
    """The op's config, one row's column tiles (at least 4 elements a thread, no wider than a 32 KB block), flat
    blocks of outputs, and the whole row through the one-row kernel (where its block holds the row)."""
    out = {"op": op}
    widest = _widest_block(h, element_size)
    for block, warps, const in itertools.product([1024, 2048, 4096, 8192, 16384], [4, 8, 16], [False, True]):
        if block <= widest and warps * 32 * 4 <= block:
            out[f"tile c{block} w{warps}{' const' if const else ''}"] = gated.Config(
                block, 1, warps, False, cols_const=const
            )
    for block, warps in itertools.product([1024, 2048, 4096], [4, 8]):
        out[f"flat {block} w{warps}"] = gated.Config(block, 1, warps, False, flat=True)
    whole = triton.next_power_of_2(h)
    if whole <= widest:
        for warps in (4, 8, 16, 32):
            if warps * 32 * 4 <= whole:
                out[f"one_row w{warps}"] = gated.Config(whole, 1, warps, False, one_row=True)
    return out


def main() -> int:
    ap = placed_args(__doc__, SHAPES)
    ap.add_argument("--families", default="silu_mul,gelu_mul")
    ap.add_argument("--bodies", action="store_true", help="silu_mul only: the op's and Liger's launch, three bodies")
    ap.add_argument("--rows-1d", action="store_true", help="each tile candidate also through the 1-D row kernel")
    args = ap.parse_args()
    rng = random.Random(0)
    rows_out, summary = [], []
    for name in args.families.split(","):
        fam, kernels = discover()[name], KERNELS[name]
        for spec, dtype, shape in points(args):
            inp = fam.make_inputs(shape, dtype, "cuda", 3)
            x, ref = inp["x"], fam.oracle(**inp)
            n_rows, h = shape[0], shape[1] // 2
            spots = places({"x": x}, args.placements, rng)
            op = gated.choose_config(h, x.element_size(), n_rows, launching.sm_count(x), launching.fast_memory(x))
            fns = {}
            ys = [_empty(pool, (n_rows, h), x) for _, _, pool, _ in spots]  # each place's output from its pool
            cands = {(label, kernels): cfg for label, cfg in candidates(h, x.element_size(), op).items()}
            if args.bodies:
                cands = _bodies(h, x.element_size(), op, kernels)
            if args.rows_1d:
                cands.update({(f"{label} 1d", ROWS_1D[name]): cfg for (label, _), cfg in cands.items()
                              if not (cfg.flat or cfg.one_row)})  # fmt: skip
            for (label, kern), cfg in cands.items():
                if label != "op" and cfg == op and kern is kernels:
                    continue
                calls = [_checked(kern, cfg, moved["x"], y, ref, fam.tolerances[dtype])
                         for (moved, _, _, _), y in zip(spots, ys)]  # fmt: skip
                if None in calls:
                    print(f"  WRONG RESULT, not timed: {label} ({cfg})")
                    continue
                fns.update({(label, i): call for i, call in enumerate(calls)})
            fns.update(peer_calls(fam, spots, PEERS, dtype))
            print(f"== {name} {spec} {dtype} (op: {op})")
            race_point(f"{name} {spec}", dtype, fns, args, rng, rows_out, summary)
            del spots[:], fns, ys
            torch.cuda.empty_cache()
    return 0


def _bodies(h: int, element_size: int, op: gated.Config, kernels) -> dict:
    """--bodies: the op's config and one whole-row tile of 16 warps with H compiled in (Liger's launch), each with
    silu_mul's body and the two of ``BODIES``."""
    whole = gated.Config(_widest_block(h, element_size), 1, 16, False, cols_const=True)
    out = {}
    for name, kern in [("", kernels)] + [(f" {k}", v) for k, v in BODIES.items()]:
        out[(f"op{name}", kern)] = op
        out[(f"whole w16 const{name}", kern)] = whole
    return out


def _widest_block(h: int, element_size: int) -> int:
    """The widest tile of a row of ``h`` outputs: the row's power-of-two block, at most 32 KB (as the tuned version)."""
    return min(triton.next_power_of_2(h), gated.TUNED_MAX_BLOCK_BYTES // element_size)


def _checked(kernels, cfg: gated.Config, x: torch.Tensor, y: torch.Tensor, ref, tol: float):
    """The config's launch on ``x`` into ``y`` once checked against ``ref`` (NaN-poisoned first); None if wrong."""
    y.fill_(float("nan"))
    gated.launch_tile(kernels, cfg, x, y)
    if not rel_err(y, ref) <= tol:
        return None
    return lambda: gated.launch_tile(kernels, cfg, x, y)


def _empty(pool, shape: tuple[int, int], like: torch.Tensor) -> torch.Tensor:
    """An uninitialised tensor like ``like`` of ``shape``, from ``pool`` (None: the default allocator)."""
    if pool is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    with torch.cuda.use_mem_pool(pool):
        return torch.empty(shape, dtype=like.dtype, device=like.device)


if __name__ == "__main__":
    raise SystemExit(main())
