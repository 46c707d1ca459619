"""Many rows of 128 KB or more: each row split over ``SPLITS`` programs that hold their chunk of h = x +
residual in registers and meet once, so x and the residual are read once and h is not read back.

The same protocol as rmsnorm's (``kernels/rmsnorm/cooperative.py``: tickets in start order, a partial sum per
program, a counter per row, the partial sums added in a fixed order). The chunked kernel (``looped``) stores
h and reads it back for its second pass; at 512+ rows of 65536-131072 bf16 columns it reached 77-84% of the
copy ceiling on an H100 (benchmarks/results/grid/). GPU only: the interpreter runs one program after another.

The pipelined form (:func:`launch_pipelined`, what fp16 takes from 512 rows) hides the meeting as rmsnorm's does: a
program computes and counts in its next chunk of h before it waits for the row of the one it holds. The slotted form
(:func:`launch_slotted`) is the pipelined one with the meeting in slots (``split_rows.slot_arrive``), as rmsnorm's.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from kprof.kernels.lib.launching import MEETING_LOCK
from kprof.kernels.lib.split_rows import (
    MeetingLaunch,
    cooperative_arrive,
    cooperative_launch_args,
    cooperative_meta,
    cooperative_row_sum,
    cooperative_ticket,
    float32_again,
    launch_meeting,
    meeting_launch,
    pipelined_finish,
    pipelined_launch_args,
    pipelined_meta,
    pipelined_store,
    slot_arrive,
    slot_wait_sum,
    slotted_launch_args,
    take_ticket,
)
from kprof.launch import CompiledLauncher


@triton.jit(do_not_specialize=["ticket_base"])  # a new value every call
def _add_rmsnorm_cooperative_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    r_ptr,  # [rows, N] residual
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] normalised output, contiguous
    h_ptr,  # [rows, N] sum, contiguous
    ws_ptr,  # [rows, SPLITS] float32: each program's partial sum of squares
    sync_ptr,  # [1 + rows] int32, the meeting's counters (split_rows): tickets, then one per row
    ticket_base,  # the ticket counter's value when the launch started: tickets count from there
    # sizes and strides
    x_row_stride,
    r_row_stride,
    N,
    # parameters
    eps,
    # meta-parameters
    CHUNK: tl.constexpr,  # elements per program, a power of two >= N / SPLITS: held in registers
    SPLITS: tl.constexpr,  # programs per row
    SPLITS_POW2: tl.constexpr,  # SPLITS rounded up to a power of two (the partial sums are read as one block)
):
    row, part = cooperative_ticket(sync_ptr, ticket_base, SPLITS)
    cols = part * CHUNK + tl.arange(0, CHUNK)
    m = cols < N
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
    r = tl.load(r_ptr + row * r_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
    # h is rounded to its dtype before it is normalised, as every version does, and kept in that dtype
    h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * N + cols, h, mask=m)
    hf = h.to(tl.float32)
    total = cooperative_row_sum(ws_ptr, sync_ptr, row, part, tl.sum(hf * hf, axis=0), SPLITS, SPLITS_POW2)
    rstd = tl.rsqrt(total / N + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
    tl.store(y_ptr + row * N + cols, (float32_again(h, total) * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit(do_not_specialize=["ticket_base"])  # a new value every call
def _add_rmsnorm_pipelined_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    r_ptr,  # [rows, N] residual
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] normalised output, contiguous
    h_ptr,  # [rows, N] sum, contiguous
    ws_ptr,  # [rows, SPLITS] float32: each chunk's partial sum of squares
    sync_ptr,  # [1 + rows] int32, the meeting's counters (split_rows): tickets, then one per row
    ticket_base,  # the ticket counter's value when the launch started: tickets count from there
    # sizes and strides
    x_row_stride,
    r_row_stride,
    N,
    n_tickets,  # rows x SPLITS
    # parameters
    eps,
    # meta-parameters
    CHUNK: tl.constexpr,  # elements per ticket, a power of two >= N / SPLITS; two chunks of h are held at a time
    SPLITS: tl.constexpr,  # chunks per row
    SPLITS_POW2: tl.constexpr,  # SPLITS rounded up to a power of two
):
    """The cooperative kernel with its meeting hidden, as rmsnorm's (``kernels/rmsnorm/cooperative.py``): a
    program keeps taking tickets, and computes, stores and counts in the next ticket's chunk of h before it
    waits for the row of the chunk it holds. No deadlock for the same reason: a ticket is counted in right
    after it is taken."""
    offs = tl.arange(0, CHUNK)
    ticket = take_ticket(sync_ptr, ticket_base)
    h = _pipelined_take(x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, 0, ticket, offs, x_row_stride, r_row_stride, N,
                        n_tickets, CHUNK, SPLITS, False)  # fmt: skip
    # the loop carries the ticket, not a flag (Triton 3.6's layout pass failed on a carried flag; see rmsnorm's)
    while ticket < n_tickets:
        after = take_ticket(sync_ptr, ticket_base)
        h_after = _pipelined_take(x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, 0, after, offs, x_row_stride, r_row_stride,
                                  N, n_tickets, CHUNK, SPLITS, False)  # fmt: skip
        pipelined_finish(h, ticket, offs, w_ptr, y_ptr, N, ws_ptr, sync_ptr, N, eps, CHUNK, SPLITS, SPLITS_POW2)
        h, ticket = h_after, after


@triton.jit
def _pipelined_take(
    x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, generation, ticket, offs, x_row_stride, r_row_stride, N, n_tickets,
    CHUNK: tl.constexpr, SPLITS: tl.constexpr, SLOTTED: tl.constexpr,
):  # fmt: skip
    """Load the chunk of ``ticket`` of x and the residual, store h = x + residual (rounded to its dtype, as
    every version does), count h's sum of squares in at its row and return h; a ticket past the last row
    loads, stores and counts nothing. ``SLOTTED``: the slotted meeting (``ws_ptr`` the slots, this launch's
    ``generation``), x and the residual loaded without a hint; otherwise ``evict_first`` and the counters'
    meeting (``generation`` unused)."""
    live = ticket < n_tickets
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    cols = part * CHUNK + offs
    m = cols < tl.where(live, N, 0)
    if SLOTTED:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0)
        r = tl.load(r_ptr + row * r_row_stride + cols, mask=m, other=0.0)
    else:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
        r = tl.load(r_ptr + row * r_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
    h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + row * N + cols, h, mask=m)
    hf = h.to(tl.float32)
    if SLOTTED:
        slot_arrive(ws_ptr, row, part, tl.sum(hf * hf, axis=0), generation, live, SPLITS)
    else:
        cooperative_arrive(ws_ptr, sync_ptr, row, part, tl.sum(hf * hf, axis=0), live, SPLITS)
    return h


@triton.jit(do_not_specialize=["ticket_base", "generation"])  # new values every call
def _add_rmsnorm_slotted_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    r_ptr,  # [rows, N] residual
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] normalised output, contiguous
    h_ptr,  # [rows, N] sum, contiguous
    slots_ptr,  # [rows, SPLITS] int64: each chunk's partial sum of squares and its launch's generation (split_rows)
    sync_ptr,  # [1] int32 at least: the ticket counter (split_rows)
    ticket_base,  # the ticket counter's value when the launch started: tickets count from there
    generation,  # this launch's generation in the slots (launching.meeting_slots)
    # sizes and strides
    x_row_stride,
    r_row_stride,
    N,
    n_tickets,  # rows x SPLITS
    # parameters
    eps,
    # meta-parameters
    CHUNK: tl.constexpr,  # elements per ticket, a power of two >= N / SPLITS; two chunks of h are held at a time
    SPLITS: tl.constexpr,  # chunks per row
    SPLITS_POW2: tl.constexpr,  # SPLITS rounded up to a power of two
):
    """The pipelined kernel with the slotted meeting, as rmsnorm's (``_rmsnorm_slotted_kernel``): a chunk's arrival
    no longer waits for the stores before it (here the chunk of h just stored too), and x and the residual are
    loaded without a cache hint. The same order and argument against deadlock as the pipelined kernel."""
    offs = tl.arange(0, CHUNK)
    ticket = take_ticket(sync_ptr, ticket_base)
    h = _pipelined_take(x_ptr, r_ptr, h_ptr, slots_ptr, sync_ptr, generation, ticket, offs, x_row_stride,
                        r_row_stride, N, n_tickets, CHUNK, SPLITS, True)  # fmt: skip
    while ticket < n_tickets:  # the ticket carried, as in the pipelined kernel
        after = take_ticket(sync_ptr, ticket_base)
        h_after = _pipelined_take(x_ptr, r_ptr, h_ptr, slots_ptr, sync_ptr, generation, after, offs, x_row_stride,
                                  r_row_stride, N, n_tickets, CHUNK, SPLITS, True)  # fmt: skip
        total = slot_wait_sum(slots_ptr, (ticket // SPLITS).to(tl.int64), generation, SPLITS, SPLITS_POW2)
        pipelined_store(h, total, ticket, offs, w_ptr, y_ptr, N, N, eps, CHUNK, SPLITS)
        h, ticket = h_after, after


def launch_pipelined(
    x2d: torch.Tensor,
    r2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    h2d: torch.Tensor,
    eps: float,
    chunk: int,
    programs: int,
    num_warps: int,
) -> Any:
    """y, h = add_rmsnorm(x, residual) over rows in chunks of ``chunk`` elements (a power of two), ``programs``
    programs taking chunks in turn (at most one per chunk); y and h contiguous. Returns the compiled kernel
    (its registers and spills). GPU only, as :func:`launch_cooperative`."""
    with MEETING_LOCK:  # counters taken to tickets counted: see launching.MEETING_LOCK
        (ws, sync, base), meta, grid, n_tickets = pipelined_launch_args(x2d, chunk, programs, "add_rmsnorm")
        kernel, args, options = _pipelined_call(
            x2d, r2d, weight, y2d, h2d, ws, sync, base, eps, n_tickets, meta, num_warps
        )
        return launch_meeting(kernel, grid, args, options, sync, n_tickets + grid[0])


def launch_slotted(
    x2d: torch.Tensor,
    r2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    h2d: torch.Tensor,
    eps: float,
    chunk: int,
    programs: int,
    num_warps: int,
    maxnreg: int = 0,
) -> Any:
    """:func:`launch_pipelined` with the slotted meeting (``_add_rmsnorm_slotted_kernel``); returns the compiled
    kernel. ``maxnreg``: registers a thread at most (ptxas's ``.maxnreg``; 0: the compiler's choice). On an H200 a
    cap of 64 on bf16's layout at 65536 columns (71 registers: 7 of its 8 programs an SM fit) ran 97.8% of a copy
    against 97.6%; capped at 48 it spilled and ran 64-79%
    (benchmarks/results/rmsnorm-cooperative/h200-in-flight-61ffca9/). GPU only, as :func:`launch_cooperative`."""
    with MEETING_LOCK:  # counters taken to tickets counted: see launching.MEETING_LOCK
        (slots, sync, base, generation), meta, grid, n_tickets = slotted_launch_args(
            x2d, chunk, programs, "add_rmsnorm"
        )
        kernel, args, options = _slotted_call(
            x2d, r2d, weight, y2d, h2d, slots, sync, base, generation, eps, n_tickets, meta, num_warps
        )
        return launch_meeting(kernel, grid, args, options, sync, n_tickets + grid[0], maxnreg)


def launch_cooperative(
    x2d: torch.Tensor,
    r2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    h2d: torch.Tensor,
    eps: float,
    splits: int,
    num_warps: int,
) -> None:
    """y, h = add_rmsnorm(x, residual) over rows, ``splits`` cooperating programs per row (one launch; its
    counters are kept between calls, see ``split_rows``). y and h contiguous. GPU only: see the module docstring."""
    with MEETING_LOCK:  # counters taken to tickets counted: see launching.MEETING_LOCK
        (ws, sync, base), meta = cooperative_launch_args(x2d, splits, "add_rmsnorm")
        kernel, args, options = _cooperative_call(x2d, r2d, weight, y2d, h2d, ws, sync, base, eps, meta, num_warps)
        launch_meeting(kernel, (x2d.shape[0] * splits,), args, options, sync, x2d.shape[0] * splits)


_pipelined_launcher = CompiledLauncher(_add_rmsnorm_pipelined_kernel)
_cooperative_launcher = CompiledLauncher(_add_rmsnorm_cooperative_kernel)
_slotted_launcher = CompiledLauncher(_add_rmsnorm_slotted_kernel)


def meeting_plan(
    kernel: str, n_rows: int, n: int, x_row_stride: int, r_row_stride: int, eps: float, chunk: int, splits: int,
    programs: int, num_warps: int, sigs: tuple, template: torch.Tensor,
) -> MeetingLaunch:  # fmt: skip
    """As rmsnorm's ``meeting_plan`` (``kernels/rmsnorm/cooperative.py``): the launch plan of what
    :func:`launch_pipelined`, :func:`launch_slotted` or :func:`launch_cooperative` launches, x's and the residual's
    rows ``x_row_stride``
    and ``r_row_stride`` apart, y and h contiguous; ``sigs``: ``plans.sig`` of x, the residual and the weight."""
    named = {"x_row_stride": x_row_stride, "r_row_stride": r_row_stride, "N": n, "eps": float(eps)}
    launchers = (_pipelined_launcher, _cooperative_launcher, _slotted_launcher)
    return meeting_launch(kernel, launchers, named, n_rows, chunk, splits, programs, num_warps, sigs, template)


def _pipelined_call(
    x2d: torch.Tensor, r2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, h2d: torch.Tensor,
    ws: torch.Tensor, sync: torch.Tensor, base: int, eps: float, n_tickets: int, meta: dict, num_warps: int,
) -> tuple[Any, tuple, dict]:  # fmt: skip
    """The pipelined kernel, its arguments and options: one place for its launch and its offline compile."""
    args = (
        x2d,
        r2d,
        weight,
        y2d,
        h2d,
        ws,
        sync,
        base,
        x2d.stride(0),
        r2d.stride(0),
        x2d.shape[1],
        n_tickets,
        float(eps),
    )
    return _add_rmsnorm_pipelined_kernel, args, {**meta, "num_warps": num_warps}


def _slotted_call(
    x2d: torch.Tensor, r2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, h2d: torch.Tensor,
    slots: torch.Tensor, sync: torch.Tensor, base: int, generation: int, eps: float, n_tickets: int, meta: dict,
    num_warps: int,
) -> tuple[Any, tuple, dict]:  # fmt: skip
    """The slotted kernel, its arguments and options: one place for its launch and its offline compile."""
    args = (x2d, r2d, weight, y2d, h2d, slots, sync, base, generation, x2d.stride(0), r2d.stride(0), x2d.shape[1],
            n_tickets, float(eps))  # fmt: skip
    return _add_rmsnorm_slotted_kernel, args, {**meta, "num_warps": num_warps}


def _cooperative_call(
    x2d: torch.Tensor, r2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, h2d: torch.Tensor,
    ws: torch.Tensor, sync: torch.Tensor, base: int, eps: float, meta: dict, num_warps: int,
) -> tuple[Any, tuple, dict]:  # fmt: skip
    """The cooperative kernel, its arguments and options: one place for its launch and its offline compile."""
    args = (x2d, r2d, weight, y2d, h2d, ws, sync, base, x2d.stride(0), r2d.stride(0), x2d.shape[1], float(eps))
    return _add_rmsnorm_cooperative_kernel, args, {**meta, "num_warps": num_warps}


def offline_call(
    kernel: str, n_rows: int, n: int, dtype: torch.dtype, chunk: int, splits: int, num_warps: int
) -> tuple[Any, tuple, dict]:
    """As rmsnorm's ``offline_call`` (``kernels/rmsnorm/cooperative.py``): the GPU launch of ``kernel`` over
    ``n_rows`` contiguous rows of ``n`` elements, small CPU tensors standing in for the GPU's, to compile it for a
    GPU without one."""
    x2d, weight = torch.empty((1, n), dtype=dtype), torch.empty(n, dtype=dtype)
    ws, sync = torch.empty(1, dtype=torch.float32), torch.empty(1, dtype=torch.int32)
    if kernel == "pipelined":
        meta = pipelined_meta(n, chunk)
        return _pipelined_call(x2d, x2d, weight, x2d, x2d, ws, sync, 0, 1e-6, n_rows * meta["SPLITS"], meta, num_warps)
    if kernel == "slotted":
        meta, slots = pipelined_meta(n, chunk), torch.empty(1, dtype=torch.int64)
        tickets = n_rows * meta["SPLITS"]
        return _slotted_call(x2d, x2d, weight, x2d, x2d, slots, sync, 0, 1, 1e-6, tickets, meta, num_warps)
    return _cooperative_call(x2d, x2d, weight, x2d, x2d, ws, sync, 0, 1e-6, cooperative_meta(n, splits), num_warps)
