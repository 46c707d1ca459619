"""The Triton versions of silu_mul: ``triton_one_row``, ``triton_tiled``, ``triton_tuned``.

Each kernel is a design of ``kernels/lib/gated.py`` (where a program's gate, up and outputs are, shared
with gelu_mul) with silu as its activation. Launch choices and wrappers: ``gated.register_versions``.
"""

import triton
import triton.language as tl

from kprof.kernels.lib import gated
from kprof.kernels.lib.gated import flat_block, known_row, load_gate_up, one_row_block, tile_gate_up
from kprof.kernels.lib.launching import known_multiple
from kprof.kernels.silu_mul.family import FAMILY, OP


@triton.jit
def silu(g):
    """silu(g) = g * sigmoid(g), of fp32 ``g``."""
    return g * tl.sigmoid(g)


@triton.jit
def _gated_one_row_kernel(
    x_ptr,  # [rows, 2H] input: gate in columns [0, H), up in [H, 2H)
    y_ptr,  # [rows, H] output, contiguous
    x_row_stride,
    H,
    BLOCK_H: tl.constexpr,  # power of two >= H: the whole row in one block
):
    g_ptrs, y_offs, mask = one_row_block(x_ptr, x_row_stride, H, BLOCK_H)
    g, u = load_gate_up(g_ptrs, H, mask, False)
    tl.store(y_ptr + y_offs, (silu(g) * u).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gated_tile_kernel(
    x_ptr,  # [rows, 2H] input: gate | up
    y_ptr,  # [rows, H] output, contiguous
    x_row_stride,
    n_rows,
    H,
    BLOCK_H: tl.constexpr,  # columns per program (axis 1 of the grid walks the column blocks)
    ROWS: tl.constexpr,  # rows per program (axis 0 walks the row blocks)
    HINTS: tl.constexpr,  # evict_first on the inputs: each byte is read once
    I64: tl.constexpr,  # 64-bit offsets
    ALIGN: tl.constexpr = 1,  # H and the row stride are multiples of ALIGN elements (launching.vector_align)
    COLS: tl.constexpr = 0,  # 0, or H as a constant (one binary per width, as Liger-Kernel compiles its row kernel)
):
    g, u, y_offs, mask = tile_gate_up(x_ptr, x_row_stride, n_rows, H, BLOCK_H, ROWS, HINTS, I64, ALIGN, COLS)
    tl.store(y_ptr + y_offs, (silu(g) * u).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gated_flat_kernel(
    x_ptr,  # [rows, 2H] input: gate | up
    y_ptr,  # [rows, H] output, contiguous
    x_row_stride,
    total,  # rows * H outputs
    H,
    BLOCK: tl.constexpr,  # consecutive outputs per program, across row ends
    I64: tl.constexpr,  # 64-bit offsets
    ALIGN: tl.constexpr = 1,  # H and the row stride (so rows * H) are multiples of ALIGN (launching.vector_align)
):
    H, x_row_stride = known_row(H, x_row_stride, ALIGN)
    total = known_multiple(total, ALIGN)
    g_ptrs, y_offs, mask = flat_block(x_ptr, x_row_stride, total, H, BLOCK, I64)
    g, u = load_gate_up(g_ptrs, H, mask, False)
    tl.store(y_ptr + y_offs, (silu(g) * u).to(y_ptr.dtype.element_ty), mask=mask)


# The kernels keep the names profilers have recorded for them (gelu_mul's are named alike: a profile holds
# one family's launches); KERNELS is the public handle (kprof.kernels.ops, benchmarks/gated_flat.py).
KERNELS = gated.GatedKernels(_gated_one_row_kernel, _gated_tile_kernel, _gated_flat_kernel)
VERSIONS = gated.register_versions(FAMILY, OP, KERNELS)
