"""Rows wider than one block, each split over ``SPLITS`` programs that hold their chunk in registers and
meet once: x is read from DRAM once, as in a copy.

The chunked loop (``looped``) and the two-launch split (``split``) read each row twice; for many rows of
64-256 KB the second read does not stay in L2 (ncu counted 1.41-1.48x the bytes model in DRAM at 2048x65536
and 2048x131072 bf16 on an H100, for kprof and for torch.compile alike). Here each program

1. takes a ticket (an atomic counter): tickets are handed out in the order programs start, so every program
   of a row with a lower ticket is running or done, and the programs a waiting one waits for start as soon
   as any earlier row finishes: no deadlock while the GPU holds ``SPLITS`` programs at once;
2. loads its chunk of the row into registers, stores the chunk's sum of squares in a workspace slot, and
   counts itself in at the row's counter (release);
3. waits until the row's counter says the whole row is in (acquire), adds the row's partial sums in a fixed
   order (the result does not depend on arrival order), and writes its chunk normalised.

Registers decide the speed: each SM holds as much of x as its programs' registers do. Keeping x in its own
dtype until after the wait, and loading the weight only then, took 8192-element programs of 8 warps from 123
to 32 registers a thread; on an H100 the kernel then ran 2048x131072 bf16 in 401.5 us (the loop it replaces
533.9, torch.compile 540.0, a copy of the same bytes 352.9), at 64 elements a thread
(benchmarks/results/rmsnorm-cooperative/). fp16's second conversion was merged with the first, keeping
float32 x in registers through the wait (110 registers a thread against bf16's 74) and fp16 at 77-80% of the
copy ceiling; ``split_rows.float32_again`` keeps it apart (64 registers, 84-89% of the ceiling).

The dispatch (``kernels/rmsnorm/tuned.py``) runs 16-bit rows through the pipelined form (``launch_pipelined``:
a program loads its next chunk before it waits for the row of the one it holds), on an H200 with the slotted
meeting (``launch_slotted``; there 1024 or more rows of 65536 are held one a program instead,
``tuned.whole_row_kernel``, and 1024 or more rows of 256 KB half in a program's registers and half in L1,
``tuned.halves_kernel``), float32 rows through this one (on an H200 through the slotted kernel too, in a layout of
their own: ``tuned._FAST_MEMORY_FP32_SLOTTED``).

The waiting needs the programs of a row to run at the same time, which Triton's interpreter (one program
after another) cannot do: :func:`launch_cooperative` runs only on a GPU.
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
from kprof.runtime import interpreting


@triton.jit(do_not_specialize=["ticket_base"])  # a new value every call
def _rmsnorm_cooperative_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] output
    ws_ptr,  # [rows, SPLITS] float32: each program's partial sum of squares
    sync_ptr,  # [1 + rows] int32, the meeting's counters (split_rows): tickets, then one per row
    ticket_base,  # the ticket counter's value when the launch started: tickets count from there
    # sizes and strides
    x_row_stride,
    y_row_stride,
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
    # x stays in its own dtype in registers through the meeting, converted where used
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
    xf = x.to(tl.float32)
    total = cooperative_row_sum(ws_ptr, sync_ptr, row, part, tl.sum(xf * xf, axis=0), SPLITS, SPLITS_POW2)
    rstd = tl.rsqrt(total / N + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = float32_again(x, total) * rstd * w
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit(do_not_specialize=["ticket_base"])  # a new value every call
def _rmsnorm_pipelined_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] output
    ws_ptr,  # [rows, SPLITS] float32: each chunk's partial sum of squares
    sync_ptr,  # [1 + rows] int32, the meeting's counters (split_rows): tickets, then one per row
    ticket_base,  # the ticket counter's value when the launch started: tickets count from there
    # sizes and strides
    x_row_stride,
    y_row_stride,
    N,
    n_tickets,  # rows x SPLITS
    # parameters
    eps,
    # meta-parameters
    CHUNK: tl.constexpr,  # elements per ticket, a power of two >= N / SPLITS; two are held at a time
    SPLITS: tl.constexpr,  # chunks per row
    SPLITS_POW2: tl.constexpr,  # SPLITS rounded up to a power of two
    CVT_ASM: tl.constexpr,  # fp16: the second conversion in inline PTX (``float32_again``); not in the interpreter
):
    """The cooperative kernel with its meeting hidden: a program keeps taking tickets, and loads the next
    ticket's chunk and counts it in before it waits for the row of the chunk it holds, so the wait overlaps
    a load instead of leaving the SM's memory pipe idle. No deadlock: a ticket is counted in right after it is
    taken, with no wait between, so only the last row handed out can be short of arrivals, and a program
    waiting on it holds two of its tickets: all resident programs cannot wait there at once while they
    number more than SPLITS / 2.

    Counting the next chunk in only after the held chunk is stored (its load in flight through the wait and the
    store) was slower on an H200: 70.4-75.2% of a copy's speed against this order's 81.6-84.8% at 512-8192 rows of
    65536-131072, bf16 and fp16, since every row completes a step later
    (benchmarks/results/rmsnorm-cooperative/arrival-order-2a1648d/)."""
    offs = tl.arange(0, CHUNK)
    ticket = take_ticket(sync_ptr, ticket_base)
    x = _pipelined_take(x_ptr, ws_ptr, sync_ptr, 0, ticket, offs, x_row_stride, N, n_tickets, CHUNK, SPLITS, False)
    # the loop carries the ticket, not a flag: Triton 3.6's layout pass failed on a loop whose condition was
    # a carried flag (TritonGPURemoveLayoutConversions, sm_90); a comparison in the condition compiles
    while ticket < n_tickets:
        after = take_ticket(sync_ptr, ticket_base)
        x_after = _pipelined_take(x_ptr, ws_ptr, sync_ptr, 0, after, offs, x_row_stride, N, n_tickets, CHUNK, SPLITS,
                                  False)  # fmt: skip
        pipelined_finish(x, ticket, offs, w_ptr, y_ptr, y_row_stride, ws_ptr, sync_ptr, N, eps, CHUNK, SPLITS,
                         SPLITS_POW2, CVT_ASM)  # fmt: skip
        x, ticket = x_after, after


@triton.jit(do_not_specialize=["ticket_base", "generation"])  # new values every call
def _rmsnorm_slotted_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] output
    slots_ptr,  # [rows, SPLITS] int64: each chunk's partial sum of squares and its launch's generation (split_rows)
    sync_ptr,  # [1] int32 at least: the ticket counter (split_rows)
    ticket_base,  # the ticket counter's value when the launch started: tickets count from there
    generation,  # this launch's generation in the slots (launching.meeting_slots)
    # sizes and strides
    x_row_stride,
    y_row_stride,
    N,
    n_tickets,  # rows x SPLITS
    # parameters
    eps,
    # meta-parameters
    CHUNK: tl.constexpr,  # elements per ticket, a power of two >= N / SPLITS; two are held at a time
    SPLITS: tl.constexpr,  # chunks per row
    SPLITS_POW2: tl.constexpr,  # SPLITS rounded up to a power of two
    CVT_ASM: tl.constexpr,  # fp16: the second conversion in inline PTX (``float32_again``); not in the interpreter
):
    """The pipelined kernel with the slotted meeting (``split_rows.slot_arrive``): no release after the chunk a
    program has just stored, and x loaded without a cache hint. The same order and the same argument against
    deadlock as the pipelined kernel. On an H200, in the pipelined kernel's layout (8192-element chunks of 8 warps,
    4 programs an SM; 64 registers a thread under Triton 3.6), against the pipelined kernel, % of a copy of the same
    bytes, bf16 / fp16: 512x65536 86.5 / 87.8 against 78.3 / 79.1 (35.3 against 39.0 us, a copy 30.6), 2048x131072
    92.9 / 92.2 against 85.2 / 84.8, 8192x65536 93.3 / 93.3 against 85.1 / 85.2; 4096-element chunks of 4 warps,
    8 an SM, 85.2-92.7%. Why (races of copies of the kernels there): the same loads and stores with no meeting,
    one chunk a program, reached 98-100% of the copy, and so did a persistent copy drawing tickets, so neither the
    layout nor the tickets are the gap; the pipelined kernel without its wait (arrivals only) stayed at 78-84%,
    and with its arrivals release-free 85-90%. x loaded ``evict_first`` cost 3-5%, in a plain copy too (99.3
    against 95.0% at 2048x131072) (benchmarks/results/rmsnorm-cooperative/h200-slots-5539449/)."""
    offs = tl.arange(0, CHUNK)
    ticket = take_ticket(sync_ptr, ticket_base)
    x = _pipelined_take(x_ptr, slots_ptr, sync_ptr, generation, ticket, offs, x_row_stride, N, n_tickets, CHUNK, SPLITS,
                        True)  # fmt: skip
    while ticket < n_tickets:  # the ticket carried, as in the pipelined kernel
        after = take_ticket(sync_ptr, ticket_base)
        x_after = _pipelined_take(x_ptr, slots_ptr, sync_ptr, generation, after, offs, x_row_stride, N, n_tickets,
                                  CHUNK, SPLITS, True)  # fmt: skip
        total = slot_wait_sum(slots_ptr, (ticket // SPLITS).to(tl.int64), generation, SPLITS, SPLITS_POW2)
        pipelined_store(x, total, ticket, offs, w_ptr, y_ptr, y_row_stride, N, eps, CHUNK, SPLITS, CVT_ASM)
        x, ticket = x_after, after


@triton.jit
def _pipelined_take(
    x_ptr, ws_ptr, sync_ptr, generation, ticket, offs, x_row_stride, N, n_tickets, CHUNK: tl.constexpr,
    SPLITS: tl.constexpr, SLOTTED: tl.constexpr,
):  # fmt: skip
    """Load the chunk of ``ticket`` and count its sum of squares in at its row; a ticket past the last row
    loads nothing (its columns are compared with 0 instead of N) and counts nothing. ``SLOTTED``: the slotted
    meeting (``ws_ptr`` the slots, this launch's ``generation``) and x loaded without a hint; otherwise x
    ``evict_first`` and the counters' meeting (``generation`` unused)."""
    live = ticket < n_tickets
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    cols = part * CHUNK + offs
    m = cols < tl.where(live, N, 0)
    if SLOTTED:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0)
    else:
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
    xf = x.to(tl.float32)
    if SLOTTED:
        slot_arrive(ws_ptr, row, part, tl.sum(xf * xf, axis=0), generation, live, SPLITS)
    else:
        cooperative_arrive(ws_ptr, sync_ptr, row, part, tl.sum(xf * xf, axis=0), live, SPLITS)
    return x


def launch_pipelined(
    x2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, eps: float, chunk: int, programs: int, num_warps: int
) -> Any:
    """Normalise the rows of ``x2d`` into ``y2d`` in chunks of ``chunk`` elements (a power of two), ``programs``
    programs taking chunks in turn (at most one per chunk); returns the compiled kernel (its registers and
    spills). GPU only, as :func:`launch_cooperative`."""
    with MEETING_LOCK:  # counters taken to tickets counted: see launching.MEETING_LOCK
        (ws, sync, base), meta, grid, n_tickets = pipelined_launch_args(x2d, chunk, programs, "rmsnorm")
        kernel, args, options = _pipelined_call(x2d, weight, y2d, ws, sync, base, eps, n_tickets, meta, num_warps)
        return launch_meeting(kernel, grid, args, options, sync, n_tickets + grid[0])


def launch_slotted(
    x2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, eps: float, chunk: int, programs: int, num_warps: int,
    maxnreg: int = 0,
) -> Any:  # fmt: skip
    """:func:`launch_pipelined` with the slotted meeting (``_rmsnorm_slotted_kernel``); returns the compiled kernel.
    ``maxnreg``: registers a thread at most (ptxas's ``.maxnreg``; 0: the compiler's choice). Capped to fit more
    programs an SM it ran slower at every cap raced on an H200 (40-48 registers, 3-12 programs an SM: 35-84% of a
    copy against 87-93% uncapped; benchmarks/results/rmsnorm-cooperative/h200-in-flight-61ffca9/). GPU only, as
    :func:`launch_cooperative`."""
    with MEETING_LOCK:  # counters taken to tickets counted: see launching.MEETING_LOCK
        (slots, sync, base, generation), meta, grid, n_tickets = slotted_launch_args(x2d, chunk, programs, "rmsnorm")
        kernel, args, options = _slotted_call(x2d, weight, y2d, slots, sync, base, generation, eps, n_tickets, meta,
                                              num_warps)  # fmt: skip
        return launch_meeting(kernel, grid, args, options, sync, n_tickets + grid[0], maxnreg)


def launch_cooperative(
    x2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, eps: float, splits: int, num_warps: int
) -> None:
    """Normalise the rows of ``x2d`` into ``y2d``, ``splits`` cooperating programs per row (one launch; its
    counters are kept between calls, see ``split_rows``). GPU only: see the module docstring."""
    with MEETING_LOCK:  # counters taken to tickets counted: see launching.MEETING_LOCK
        (ws, sync, base), meta = cooperative_launch_args(x2d, splits, "rmsnorm")
        kernel, args, options = _cooperative_call(x2d, weight, y2d, ws, sync, base, eps, meta, num_warps)
        launch_meeting(kernel, (x2d.shape[0] * splits,), args, options, sync, x2d.shape[0] * splits)


_pipelined_launcher = CompiledLauncher(_rmsnorm_pipelined_kernel)
_cooperative_launcher = CompiledLauncher(_rmsnorm_cooperative_kernel)
_slotted_launcher = CompiledLauncher(_rmsnorm_slotted_kernel)


def meeting_plan(
    kernel: str, n_rows: int, n: int, x_row_stride: int, eps: float, chunk: int, splits: int, programs: int,
    num_warps: int, sigs: tuple, template: torch.Tensor,
) -> MeetingLaunch:  # fmt: skip
    """The launch plan of what :func:`launch_pipelined` ("pipelined": chunks of ``chunk``, at most ``programs``
    programs), :func:`launch_slotted` ("slotted", the same) or :func:`launch_cooperative` ("cooperative": ``splits``
    programs a row) launches over ``n_rows`` rows
    of ``n`` elements, x's rows ``x_row_stride`` apart, into contiguous rows; ``sigs``: ``plans.sig`` of x and the
    weight (y is new: aligned, contiguous, x's dtype), ``template`` an empty float32 tensor on their GPU."""
    named = {"x_row_stride": x_row_stride, "y_row_stride": n, "N": n, "eps": float(eps), "CVT_ASM": not interpreting()}
    launchers = (_pipelined_launcher, _cooperative_launcher, _slotted_launcher)
    return meeting_launch(kernel, launchers, named, n_rows, chunk, splits, programs, num_warps, sigs, template)


def _pipelined_call(
    x2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, ws: torch.Tensor, sync: torch.Tensor, base: int,
    eps: float, n_tickets: int, meta: dict, num_warps: int,
) -> tuple[Any, tuple, dict]:  # fmt: skip
    """The pipelined kernel, its arguments and options: one place for its launch and its offline compile."""
    args = (x2d, weight, y2d, ws, sync, base, x2d.stride(0), y2d.stride(0), x2d.shape[1], n_tickets, float(eps))
    return _rmsnorm_pipelined_kernel, args, {**meta, "CVT_ASM": not interpreting(), "num_warps": num_warps}


def _slotted_call(
    x2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, slots: torch.Tensor, sync: torch.Tensor, base: int,
    generation: int, eps: float, n_tickets: int, meta: dict, num_warps: int,
) -> tuple[Any, tuple, dict]:  # fmt: skip
    """The slotted kernel, its arguments and options: one place for its launch and its offline compile."""
    args = (x2d, weight, y2d, slots, sync, base, generation, x2d.stride(0), y2d.stride(0), x2d.shape[1], n_tickets,
            float(eps))  # fmt: skip
    return _rmsnorm_slotted_kernel, args, {**meta, "CVT_ASM": not interpreting(), "num_warps": num_warps}


def _cooperative_call(
    x2d: torch.Tensor, weight: torch.Tensor, y2d: torch.Tensor, ws: torch.Tensor, sync: torch.Tensor, base: int,
    eps: float, meta: dict, num_warps: int,
) -> tuple[Any, tuple, dict]:  # fmt: skip
    """The cooperative kernel, its arguments and options: one place for its launch and its offline compile."""
    args = (x2d, weight, y2d, ws, sync, base, x2d.stride(0), y2d.stride(0), x2d.shape[1], float(eps))
    return _rmsnorm_cooperative_kernel, args, {**meta, "num_warps": num_warps}


def offline_call(
    kernel: str, n_rows: int, n: int, dtype: torch.dtype, chunk: int, splits: int, num_warps: int
) -> tuple[Any, tuple, dict]:
    """The kernel, arguments and options of the GPU launch of ``kernel`` ("pipelined" or "slotted": chunks of
    ``chunk`` elements; "cooperative": ``splits`` programs a row) over ``n_rows`` contiguous rows of ``n``
    elements, with small CPU tensors standing in for the GPU's (same dtypes, 16-byte-aligned pointers, the same
    integers), for ``kprof.specialization.compile_for`` to compile for a GPU without one."""
    x2d, weight = torch.empty((1, n), dtype=dtype), torch.empty(n, dtype=dtype)
    ws, sync = torch.empty(1, dtype=torch.float32), torch.empty(1, dtype=torch.int32)
    if kernel == "pipelined":
        meta = pipelined_meta(n, chunk)
        return _pipelined_call(x2d, weight, x2d, ws, sync, 0, 1e-6, n_rows * meta["SPLITS"], meta, num_warps)
    if kernel == "slotted":
        meta, slots = pipelined_meta(n, chunk), torch.empty(1, dtype=torch.int64)
        return _slotted_call(x2d, weight, x2d, slots, sync, 0, 1, 1e-6, n_rows * meta["SPLITS"], meta, num_warps)
    return _cooperative_call(x2d, weight, x2d, ws, sync, 0, 1e-6, cooperative_meta(n, splits), num_warps)
