"""Few rows wider than one block: each row split over several programs, in two launches.

One program per row (``looped``) leaves most of the GPU idle when there are few rows: 1x131072 bf16 ran
13.98 us against torch.compile's 4.61 us on an H100, 8x65536 7.68 against 4.83
(benchmarks/results/grid/rmsnorm-bf16-main/). Here a row is cut into ``SPLITS`` chunks:

1. ``_rmsnorm_split_sumsq_kernel``, grid (rows, SPLITS): each program sums the squares of its chunk into
   one float32 slot of a small workspace, and reads x with ``evict_last`` so the chunk stays in L2;
2. ``kprof.kernels.lib.split_rows.split_apply_kernel``, same grid: each program adds its row's SPLITS
   partial sums (a few hundred bytes), then normalises its chunk, reading x again from L2.

Two launches that meet through a float32 workspace of partial sums (the stream's kept one,
``launching.partials_workspace``); the split count comes from ``kprof.kernels.lib.split_rows.choose_splits``, the loop
step and warps from its ``loop_config``. :func:`split_plan` is the same launch as a plan (``tuned.py`` keeps it per call
signature).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib.launching import MEETING_LOCK, partials_workspace
from kprof.kernels.lib.plans import Launch
from kprof.kernels.lib.split_rows import SplitLaunch, chunk_of, split_apply_kernel
from kprof.launch import CompiledLauncher, spec_key


@triton.jit
def _rmsnorm_split_sumsq_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    ws_ptr,  # [rows, SPLITS] float32: each program's partial sum of squares
    # sizes and strides
    x_row_stride,
    N,
    CHUNK,  # elements per program (a multiple of 256, so every chunk starts 16-byte aligned)
    # meta-parameters
    BLOCK_N: tl.constexpr,  # elements per loop step
    SPLITS: tl.constexpr,  # programs per row
):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    cols = tl.arange(0, BLOCK_N)
    base = x_ptr + row * x_row_stride + split * CHUNK
    lim = tl.minimum(CHUNK, N - split * CHUNK)  # this chunk's elements (the last one may be short or empty)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for off in tl.range(0, CHUNK, BLOCK_N):
        m = off + cols < lim
        # evict_last: the second launch reads the same chunk, from L2 rather than DRAM
        x = tl.load(base + off + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
        acc += x * x
    tl.store(ws_ptr + row * SPLITS + split, tl.sum(acc, axis=0))


_sumsq_launcher = CompiledLauncher(_rmsnorm_split_sumsq_kernel)
_apply_launcher = CompiledLauncher(split_apply_kernel)


def launch_split(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    eps: float,
    splits: int,
    block_n: int,
    num_warps: int,
) -> None:
    """Normalise the rows of ``x2d`` into ``y2d`` with ``splits`` programs per row (two launches)."""
    n_rows, n = x2d.shape
    chunk = chunk_of(n, splits)
    grid = (n_rows, splits)
    with MEETING_LOCK:  # the stream's kept workspace, from the first launch to the second: see partials_workspace
        ws = partials_workspace(x2d, n_rows * splits)
        first = (x2d, ws, x2d.stride(0), n, chunk)
        _sumsq_launcher(
            (splits, block_n, num_warps, spec_key(first)), grid, first + (block_n, splits), num_warps=num_warps
        )
        second = (x2d, weight, y2d, ws, x2d.stride(0), y2d.stride(0), n, chunk, float(eps))
        _apply_launcher(
            (splits, block_n, num_warps, spec_key(second)), grid, second + (block_n, splits), num_warps=num_warps
        )


def split_plan(
    n_rows: int, n: int, x_row_stride: int, eps: float, splits: int, block_n: int, num_warps: int, sigs: tuple,
    template: torch.Tensor,
) -> SplitLaunch:  # fmt: skip
    """The launch plan of what :func:`launch_split` launches over ``n_rows`` rows of ``n`` elements, x's rows
    ``x_row_stride`` apart, into contiguous rows; ``sigs``: ``plans.sig`` of x and the weight (y is new: aligned,
    contiguous, x's dtype), ``template`` an empty float32 tensor on their GPU.

    What it saves: on an H200, bf16, 1-32 rows of 65536-131072 (3.1-6.0 us of GPU time) took 76.1-158.4 us of host
    time a call through the checked launch and 18.6-21.5 from the plan, interleaved on one machine
    (benchmarks/results/grid/meeting-plans-3d38a5c/split-85a8be4/)."""
    chunk = chunk_of(n, splits)
    grid, options = (n_rows, splits), {"num_warps": num_warps}
    first_tail = (x_row_stride, n, chunk, block_n, splits)
    second_tail = (x_row_stride, n, n, chunk, float(eps), block_n, splits)
    first = Launch(_sumsq_launcher, ("split", first_tail, num_warps, *sigs), grid, first_tail, options)
    second = Launch(_apply_launcher, ("split", second_tail, num_warps, *sigs), grid, second_tail, options)
    return SplitLaunch(first, second, ((0,), (0, 1, 2)), n_rows * splits, template)  # x; x, weight, y
