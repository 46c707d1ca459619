"""Products with K split over several programs per output tile, shared by rmsnorm_linear's and swiglu's split-K
kernels: how many programs a tile gets, the columns of K each takes, one call's fp32 workspace, and how the
parts meet.

The parts meet without a wait. Each program stores its fp32 partial tile, then takes a ticket at its tile's
counter (``take_ticket``). The program that draws the last ticket adds the parts in slot order
(``sum_parts``: the result does not depend on which program finished last), finishes the tile and puts the
counter back to zero (``release``). No program waits for another, so the kernels are correct under the
interpreter, which runs programs one after another. The counters are kept per device and stream
(``launching.ticket_counters``) and left at zero by every call, so no call pays for a memset.
"""

from __future__ import annotations

import triton
import triton.language as tl


def split_count(m: int, k: int, n: int, block_m: int, block_n: int, block_k: int, programs: int) -> int:
    """Programs per output tile: enough that the launch has about ``programs`` programs, at least one BLOCK_K
    step each."""
    tile_count = triton.cdiv(m, block_m) * triton.cdiv(n, block_n)
    return max(1, min(triton.cdiv(programs, tile_count), triton.cdiv(k, block_k)))


def k_ranges(k: int, splits: int, block_k: int) -> tuple[int, int]:
    """(programs per tile, columns of K each takes: whole BLOCK_K steps) for about ``splits`` programs; fewer
    where an equal share rounded up to whole steps leaves the last ones without columns."""
    per_program = triton.cdiv(triton.cdiv(k, splits), block_k) * block_k
    return triton.cdiv(k, per_program), per_program


def config(bm: int, bn: int, bk: int, splits: int, warps: int, stages: int, **meta: object) -> triton.Config:
    """A ``triton.Config`` of a split-K kernel: BLOCK_M/N/K, about ``splits`` programs per output tile and any
    other meta-parameters in ``meta``."""
    return triton.Config(
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SPLIT_K": splits, **meta}, num_warps=warps, num_stages=stages
    )


def workspace_floats(parts: int, extra: int) -> tuple[int, int]:
    """(floats of the partial tiles, rounded up to 16 bytes; floats in all with ``extra`` after them) of one
    call's fp32 workspace."""
    first = triton.cdiv(parts, 4) * 4
    return first, first + extra


@triton.jit
def program_tile(SPLIT_K, K_PER_SPLIT, K, N, BLOCK_N: tl.constexpr):
    """(split, tile, row tile, column tile, first column of K, end of its columns) of this program. The split
    varies fastest: the programs of a tile are launched together and finish close together."""
    pid = tl.program_id(0)
    split = pid % SPLIT_K
    tile = pid // SPLIT_K
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_start = split * K_PER_SPLIT
    return split, tile, tile // tiles_n, tile % tiles_n, k_start, tl.minimum(k_start + K_PER_SPLIT, K)


@triton.jit
def tile_rows(pid_m, M, BLOCK_M: tl.constexpr, MASKED: tl.constexpr):
    """(row offsets, rows within M) of a row tile. Unless ``MASKED`` the rows past M wrap (modulo M): the loads stay
    in bounds without a row mask (see swiglu/tiled.py), and read rows the tile already has. Where those loads are
    ``cp.async`` copies, which go to L2 for every row, a one-row tile then reads its row BLOCK_M times; masked
    (``rows within M`` in the load's mask) the rows past M are zero-filled and not read."""
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs = rows
    if not MASKED:
        offs = rows % M
    return offs, rows < M


@triton.jit
def tile_cols(pid_n, N, BLOCK_N: tl.constexpr):
    """Column offsets of a column tile, wrapped past N (modulo N): the loads stay in bounds without a column mask,
    and the output's store masks the wrapped columns (``output_tile``)."""
    return (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N


@triton.jit
def output_tile(pid_m, pid_n, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """(columns, in-bounds mask, offsets in a contiguous [M, N]) of an output tile."""
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    return cols, mask, rows[:, None].to(tl.int64) * N + cols[None, :]


@triton.jit
def take_ticket(count_ptr, tile):
    """This program's ticket at ``tile``'s counter, once every thread's stores are done (the barrier makes
    them part of the atomic's release); the program that draws ``SPLIT_K - 1`` finishes the tile."""
    tl.debug_barrier()
    return tl.atomic_add(count_ptr + tile, 1, sem="acq_rel")


@triton.jit
def sum_parts(ptrs, mask, stride, SPLIT_K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The sum of ``SPLIT_K`` fp32 partial tiles ``stride`` elements apart, in slot order. ``.cg``: the parts
    from L2, never from a stale L1 line."""
    total = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for _ in range(0, SPLIT_K):
        total += tl.load(ptrs, mask=mask, other=0.0, cache_modifier=".cg")
        ptrs += stride
    return total


@triton.jit
def release(count_ptr, tile):
    """Put ``tile``'s counter back to zero for the next call in this stream (the last ticket's program)."""
    tl.store(count_ptr + tile, 0)
