"""cuBLAS's two products, then kprof's silu_mul kernel: the op as torch.compile builds it. The products
are not Triton kernels; this version exists for the row counts where no Triton product of kprof's matches
cuBLAS: at 512 rows the tiled kernel lost to torch.compile at the 5504-column grid points, by 7-18% in bf16
(``benchmarks/results/grid/catalog-bf16/``) and 18% in fp16 at 512x4096x5504
(``benchmarks/results/decode-tiles/``), and the interleaved TMA kernel serves only 1000 rows and more.

Both products write into the halves of one [M, 2N] buffer (gate | up, the layout silu_mul reads: cuBLAS
takes the half-width views with a row stride of 2N, no copy), then the tuned silu_mul kernel reads it once
and writes y. Nothing derived from the weights is kept.

On interleaved weights (``tuned.interleaved_weights``, what :class:`kprof.kernels.ops.PreparedSwiGLU` holds) the
products are one cuBLAS product of twice the width, gate and up side by side in each pair of columns, and
``_silu_pairs_kernel`` reads those pairs (:func:`interleaved_product_then_silu`)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching
from kprof.kernels.silu_mul.kernels import VERSIONS as SILU_MUL
from kprof.kernels.silu_mul.kernels import silu
from kprof.kernels.swiglu.family import FAMILY, check_inputs


@triton.jit
def _silu_pairs_kernel(
    h_ptr,  # [M, 2N] gate and up side by side: column 2j is gate j, 2j + 1 is up j
    y_ptr,  # [M, N] output, contiguous
    N,
    stride_hm,
    BLOCK_N: tl.constexpr,  # output columns per program (axis 1 of the grid); rows on axis 0
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    pairs = tl.program_id(1) * 2 * BLOCK_N + tl.arange(0, 2 * BLOCK_N)  # contiguous: one wide load, then split
    h = tl.load(h_ptr + row * stride_hm + pairs, mask=pairs < 2 * N, other=0.0).to(tl.float32)
    gate, up = tl.split(tl.reshape(h, [BLOCK_N, 2]))
    tl.store(y_ptr + row * N + cols, (silu(gate) * up).to(y_ptr.dtype.element_ty), mask=cols < N)


def pairs_launch(n: int) -> tuple[int, dict[str, int]]:
    """(BLOCK_N, launch options) of the pairs kernel for ``n`` output columns: its grid is (M, cdiv(n, BLOCK_N))."""
    return min(1024, triton.next_power_of_2(n)), ({} if launching.interpreting() else {"num_warps": 4})


def silu_pairs(h: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``silu(h[:, 0::2]) * h[:, 1::2]`` for ``h`` [M, 2N] with unit column stride: [M, N] in h's dtype, written
    into ``out`` (contiguous) where given."""
    m, n = h.shape[0], h.shape[1] // 2
    y = torch.empty((m, n), dtype=h.dtype, device=h.device) if out is None else out
    if m and n:
        block, options = pairs_launch(n)
        _silu_pairs_kernel[(m, triton.cdiv(n, block))](h, y, n, h.stride(0), BLOCK_N=block, **options)
    return y


def interleaved_product_then_silu(
    x2d: torch.Tensor, w_int: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """``silu(x2d @ Wg) * (x2d @ Wu)`` from the interleaved weights ``w_int`` [K, 2N] (column 2j = Wg[:, j],
    2j + 1 = Wu[:, j]): one cuBLAS product [M, 2N], then one pass over its pairs. [M, N] in x's dtype, written into
    ``out`` (contiguous) where given."""
    return silu_pairs(torch.mm(x2d, w_int), out)


def products_then_silu_mul(x2d: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``silu(x2d @ w_gate) * (x2d @ w_up)`` for checked 2-D rows: [M, N]."""
    m, n = x2d.shape[0], w_gate.shape[1]
    gate_up = torch.empty((m, 2 * n), dtype=x2d.dtype, device=x2d.device)
    torch.mm(x2d, w_gate, out=gate_up[:, :n])
    torch.mm(x2d, w_up, out=gate_up[:, n:])
    return SILU_MUL["triton_tuned"](gate_up)


@FAMILY.provider(
    "triton_cublas_silu",
    kind="triton",
    description="cuBLAS's two products (x @ Wg, x @ Wu into the halves of one buffer), then kprof's tuned "
    "silu_mul kernel: the products are not Triton kernels",
)
def swiglu_cublas_silu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    x2d, ff = check_inputs(x, w_gate, w_up)
    return products_then_silu_mul(x2d, w_gate, w_up).view(*x.shape[:-1], ff)


# Public handle for op_plan (the ops API's launch plan): the kernel keeps its `_` name, which profilers record.
silu_pairs_kernel = _silu_pairs_kernel
