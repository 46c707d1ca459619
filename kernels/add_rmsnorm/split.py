"""Few rows wider than one block: each row split over several programs, in two launches.

One program per row (``looped``) leaves most of the GPU idle when there are few rows: on an H100 in bf16
``triton_tuned`` ran 1x131072 in 22.24 us against torch.compile's 5.92, 8x131072 in 19.36 against 7.55 and
1x65536 in 12.00 against 5.79 (benchmarks/results/grid/catalog-bf16/grid-add_rmsnorm-main-bf16.md). Here a
row is cut into ``SPLITS`` chunks, as rmsnorm's ``split`` does (with it: 4.00, 5.63 and 3.75 us, 0.64-0.75x
torch.compile; benchmarks/results/grid/catalog-bf16-rerace/):

1. ``_add_rmsnorm_split_sum_kernel``, grid (rows, SPLITS): each program adds its chunk of x and residual,
   stores h rounded to the input dtype (as every version and the eager code do; the norm is taken of the
   h returned) with ``evict_last`` so it stays in L2, and sums the squares of the rounded h into one
   float32 slot of a small workspace;
2. ``kprof.kernels.lib.split_rows.split_apply_kernel`` (rmsnorm's too), same grid: each program adds its
   row's SPLITS partial sums (a few hundred bytes), then normalises its chunk of h, read back from L2.

DRAM sees x and residual read once and h and y written once (the four row passes of the fused op) as long
as h stays in L2 between the launches. The workspace is the stream's kept one (``launching.partials_workspace``).
The split count, chunk and loop step follow rmsnorm's rule
(``kprof.kernels.lib.split_rows``, measured for rmsnorm on an H100).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib.launching import MEETING_LOCK, partials_workspace
from kprof.kernels.lib.split_rows import chunk_of, split_apply_kernel
from kprof.launch import CompiledLauncher, spec_key


@triton.jit
def _add_rmsnorm_split_sum_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    r_ptr,  # [rows, N] residual
    h_ptr,  # [rows, N] sum x + residual, contiguous
    ws_ptr,  # [rows, SPLITS] float32: each program's partial sum of squares of h
    # sizes and strides
    x_row_stride,
    r_row_stride,
    N,
    CHUNK,  # elements per program (a multiple of 256, so every chunk starts 16-byte aligned)
    # meta-parameters
    BLOCK_N: tl.constexpr,  # elements per loop step
    SPLITS: tl.constexpr,  # programs per row
):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    cols = tl.arange(0, BLOCK_N)
    start = split * CHUNK
    x_base = x_ptr + row * x_row_stride + start
    r_base = r_ptr + row * r_row_stride + start
    h_base = h_ptr + row * N + start
    lim = tl.minimum(CHUNK, N - start)  # this chunk's elements (the last one may be short or empty)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in tl.range(0, CHUNK, BLOCK_N):
        m = off + cols < lim
        x = tl.load(x_base + off + cols, mask=m, other=0.0, eviction_policy="evict_first")
        r = tl.load(r_base + off + cols, mask=m, other=0.0, eviction_policy="evict_first")
        # h rounded to the storage dtype before the norm, so y == rmsnorm(h) for the h returned
        h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
        # evict_last: the second launch reads h back, from L2 rather than DRAM
        tl.store(h_base + off + cols, h, mask=m, eviction_policy="evict_last")
        hf = h.to(tl.float32)
        acc += hf * hf
    tl.store(ws_ptr + row * SPLITS + split, tl.sum(acc, axis=0))


sum_launcher = CompiledLauncher(_add_rmsnorm_split_sum_kernel)
apply_launcher = CompiledLauncher(split_apply_kernel)  # h contiguous: row strides N


def launch_split(
    x2d: torch.Tensor,
    r2d: torch.Tensor,
    weight: torch.Tensor,
    y: torch.Tensor,
    h: torch.Tensor,
    eps: float,
    splits: int,
    block_n: int,
    num_warps: int,
) -> None:
    """``h = x + residual`` and ``y = rmsnorm(h) * weight`` for the rows of ``x2d`` and ``r2d`` (unit last
    stride, any row stride) into contiguous ``y`` and ``h``, with ``splits`` programs per row (two launches)."""
    n_rows, n = x2d.shape
    chunk = chunk_of(n, splits)
    grid = (n_rows, splits)
    with MEETING_LOCK:  # the stream's kept workspace, from the first launch to the second: see partials_workspace
        ws = partials_workspace(x2d, n_rows * splits)
        first = (x2d, r2d, h, ws, x2d.stride(0), r2d.stride(0), n, chunk)
        sum_launcher(
            (splits, block_n, num_warps, spec_key(first)), grid, first + (block_n, splits), num_warps=num_warps
        )
        second = (h, weight, y, ws, n, n, n, chunk, float(eps))
        apply_launcher(
            (splits, block_n, num_warps, spec_key(second)), grid, second + (block_n, splits), num_warps=num_warps
        )
