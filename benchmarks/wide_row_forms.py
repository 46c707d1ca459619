"""Which part of the wide-row kernels' form keeps them under a device copy on an H200: the program layout, the
persistent loop and its tickets, or the cache hints.

    python benchmarks/wide_row_forms.py --out DIR [--set forms|meeting|order|early|library|add-library|deep|retouch|regs|add-regs|staged|whole|whole-rule] [--shapes 512x65536,2048x131072,8192x65536] \
        [--rounds 3] [--rep-ms 5] [--dtypes bf16] [--caps 4x8192x8x0,4x8192x8x64]

On an H200 rmsnorm's wide-row kernel (``kernels/rmsnorm/cooperative.py``, pipelined) reaches 81-85% of a copy of the
same bytes at 512-32768 rows of 65536-131072 columns, and so did the same loads and stores without the row's meeting
(``benchmarks/results/rmsnorm-cooperative/``); rows of 16384 columns, one row a program, reach 99% there. Every
candidate below moves x's bytes once each way (x read, y written) and differs from the next in one thing:

- ``copy cC wW HINT``: y = x, one program a chunk of C elements, W warps (no loop, no atomics);
- ``own cC wW HINT``: the same layout normalising each chunk by its own sum of squares (the wide kernel without its
  meeting; a wrong result on purpose, not checked);
- ``loop pK cC wW HINT ORDER``: y = x in a persistent loop of K programs an SM, each loading its next chunk before it
  stores the one it holds (the pipelined kernel's order), the next chunk from a relaxed ticket (``ticket``) or the
  program's next turn (``static``);
- ``pipe pK cC wW HINT``: rmsnorm's pipelined kernel as shipped but for the hints; with ``slots`` its meeting
  without fences: a chunk's partial sum and the launch's generation in one 64-bit slot (a relaxed exchange), the
  waiting program polling its row's slots with one volatile load of them all until every slot has this launch's
  generation (``--set meeting``); with ``nowait`` it counts its chunk in but normalises it by its own sum (a wrong
  result on purpose: the loop, loads and arrivals without the wait);
- ``coop cC wW HINT``: rmsnorm's cooperative kernel (one chunk a program, meeting once) but for the hints
  (``--set meeting``);
- ``pipelined ...``, ``slotted ...``: rmsnorm's library kernels (``--set library``, any dtype), or add_rmsnorm's
  (``--set add-library``: x and the residual into y and h, its dispatch and a copy of those bytes);
- ``deep pK cC wW``: the slotted kernel two chunks deep (``--set deep``): a program waits for the row of the chunk it
  took two tickets ago, not one; ``ahead pK cC wW``: the same with two loads in flight (a chunk counted in a turn
  after its load is issued); ``retouch pK cC wW``: the slotted kernel holding nothing through the wait, its chunk read
  again from L2 (``--set retouch``);
- ``staged pK cC wW sS``: the slot meeting in a loop over fixed turns (program p takes chunks p, p + G, ...), the
  wait polled in PTX, so Triton's pipeliner loads the next S - 1 chunks into shared memory while a program waits
  (``--set staged``);
- ``slotted ... rR``: the slotted kernel with at most R registers a thread (``maxnreg``), so more programs fit an SM
  (``--set regs``; ``--set add-regs`` add_rmsnorm's);
- ``whole cC wW``: one program a row, the whole row held in x's dtype (the library's kernel); ``splitS cC wW``:
  S programs a row, one chunk each, meeting once in the slots, each program an SM's registers (``--set whole``);
  ``--set whole-rule``: the library's whole-row kernel alone beside the dispatch, at any width;
- ``[dispatch]``: rmsnorm's ``triton_tuned``; ``[copy]``: ``y.copy_(x)``, the target's yardstick.

``HINT``: ``ef`` x loaded ``evict_first`` (as shipped), ``-`` no hint, ``cs`` no hint and y stored ``.cs``
(streaming). Copies are checked bit for bit and ``pipe`` against the float64 oracle before they are timed; ``cold``
times, ``--rounds`` rounds in a fresh random order. Writes DIR/times.csv (every round) and DIR/summary.csv (per
shape: each candidate's median as % of the copy).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import pct_of_copy_rows, print_pct_of_copy, print_race, race_rounds, race_rows, write_csv

from kprof.kernels import discover
from kprof.kernels.lib.split_rows import (
    cooperative_arrive,
    cooperative_launch_args,
    cooperative_row_sum,
    cooperative_ticket,
    cooperative_wait_sum,
    float32_again,
    launch_meeting,
    pipelined_launch_args,
    pipelined_store,
    slot_arrive,
    slot_wait_sum,
    take_ticket,
)
from kprof.occupancy import theoretical_occupancy

HINTS = {"ef": ("evict_first", ""), "-": ("", ""), "cs": ("", ".cs")}  # name -> (x's eviction, y's cache modifier)
COPIES = [(c, w) for c in (8192, 16384, 32768) for w in (8, 16)]
OWN = [(c, w) for c in (8192, 16384) for w in (8, 16)]
LOOPS = [(k, 8192, 8) for k in (4, 8)] + [(8, 4096, 4)]
PIPES = [(4, 8192, 8), (8, 4096, 4)]
COOPS = [(8192, 8), (16384, 8), (16384, 16), (4096, 4)]


@triton.jit
def _copy_kernel(x_ptr, y_ptr, CHUNK: tl.constexpr, X_EVICT: tl.constexpr, Y_CACHE: tl.constexpr):
    """y = x, one chunk a program (the tensor a whole number of chunks)."""
    offs = tl.program_id(0).to(tl.int64) * CHUNK + tl.arange(0, CHUNK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, eviction_policy=X_EVICT), cache_modifier=Y_CACHE)


@triton.jit
def _own_kernel(x_ptr, w_ptr, y_ptr, N, eps, CHUNK: tl.constexpr, SPLITS: tl.constexpr, X_EVICT: tl.constexpr,
                Y_CACHE: tl.constexpr):  # fmt: skip
    """One chunk a program, normalised by its own sum of squares: the wide kernel's loads and stores, no meeting."""
    pid = tl.program_id(0)
    row, part = (pid // SPLITS).to(tl.int64), pid % SPLITS
    cols = part * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * N + cols, eviction_policy=X_EVICT)
    xf = x.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(xf * xf, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
    tl.store(y_ptr + row * N + cols, (xf * rstd * w).to(y_ptr.dtype.element_ty), cache_modifier=Y_CACHE)


@triton.jit
def _loop_kernel(x_ptr, y_ptr, sync_ptr, base, n_chunks, CHUNK: tl.constexpr, TICKET: tl.constexpr,
                 X_EVICT: tl.constexpr, Y_CACHE: tl.constexpr):  # fmt: skip
    """y = x by a persistent loop: load the next chunk, then store the one held."""
    offs = tl.arange(0, CHUNK)
    step = tl.num_programs(0)
    if TICKET:
        t = tl.atomic_add(sync_ptr, 1, sem="relaxed") - base
    else:
        t = tl.program_id(0)
    x = tl.load(x_ptr + t.to(tl.int64) * CHUNK + offs, mask=offs < tl.where(t < n_chunks, CHUNK, 0), other=0.0,
                eviction_policy=X_EVICT)  # fmt: skip
    while t < n_chunks:
        if TICKET:
            nt = tl.atomic_add(sync_ptr, 1, sem="relaxed") - base
        else:
            nt = t + step
        xn = tl.load(x_ptr + nt.to(tl.int64) * CHUNK + offs, mask=offs < tl.where(nt < n_chunks, CHUNK, 0),
                     other=0.0, eviction_policy=X_EVICT)  # fmt: skip
        tl.store(y_ptr + t.to(tl.int64) * CHUNK + offs, x, cache_modifier=Y_CACHE)
        x, t = xn, nt


@triton.jit
def _pipe_load(x_ptr, ticket, offs, N, n_tickets, CHUNK: tl.constexpr, SPLITS: tl.constexpr, X_EVICT: tl.constexpr):
    live = ticket < n_tickets
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    cols = part * CHUNK + offs
    return tl.load(x_ptr + row * N + cols, mask=cols < tl.where(live, N, 0), other=0.0, eviction_policy=X_EVICT)


@triton.jit
def _pipe_arrive(x, ws_ptr, sync_ptr, slots_ptr, gen, ticket, n_tickets, SPLITS: tl.constexpr, SLOTS: tl.constexpr):
    live = ticket < n_tickets
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    xf = x.to(tl.float32)
    if SLOTS:
        slot_arrive(slots_ptr, row, part, tl.sum(xf * xf, axis=0), gen, live, SPLITS)
    else:
        cooperative_arrive(ws_ptr, sync_ptr, row, part, tl.sum(xf * xf, axis=0), live, SPLITS)


@triton.jit(do_not_specialize=["ticket_base", "gen"])
def _pipe_kernel(x_ptr, w_ptr, y_ptr, ws_ptr, sync_ptr, slots_ptr, ticket_base, gen, N, n_tickets, eps,
                 CHUNK: tl.constexpr, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, X_EVICT: tl.constexpr,
                 Y_CACHE: tl.constexpr, SLOTS: tl.constexpr, WAIT: tl.constexpr, STORE_FIRST: tl.constexpr):  # fmt: skip
    """rmsnorm's pipelined kernel (``kernels/rmsnorm/cooperative.py``) with its x load's and y store's hints as
    parameters (contiguous rows, bf16); ``SLOTS``: the meeting in generation-tagged 64-bit slots; ``WAIT`` False:
    no wait, each chunk normalised by its own sum; ``STORE_FIRST``: the next chunk counted in after the held one is
    stored, unless both are of one row (a program waiting on its held chunk's row must not hold an uncounted chunk
    of it)."""
    offs = tl.arange(0, CHUNK)
    ticket = take_ticket(sync_ptr, ticket_base)
    x = _pipe_load(x_ptr, ticket, offs, N, n_tickets, CHUNK, SPLITS, X_EVICT)
    _pipe_arrive(x, ws_ptr, sync_ptr, slots_ptr, gen, ticket, n_tickets, SPLITS, SLOTS)
    while ticket < n_tickets:
        after = take_ticket(sync_ptr, ticket_base)
        x_after = _pipe_load(x_ptr, after, offs, N, n_tickets, CHUNK, SPLITS, X_EVICT)
        row = (ticket // SPLITS).to(tl.int64)
        same_row = (after // SPLITS).to(tl.int64) == row
        if not STORE_FIRST or same_row:
            _pipe_arrive(x_after, ws_ptr, sync_ptr, slots_ptr, gen, after, n_tickets, SPLITS, SLOTS)
        cols = (ticket % SPLITS) * CHUNK + offs
        if not WAIT:
            xs = float32_again(x, 0.0)
            total = tl.sum(xs * xs, axis=0) * SPLITS
        elif SLOTS:
            total = slot_wait_sum(slots_ptr, row, gen, SPLITS, SPLITS_POW2)
        else:
            total = cooperative_wait_sum(ws_ptr, sync_ptr, row, SPLITS, SPLITS_POW2)
        xf = float32_again(x, total)  # after the wait: x held in bf16 through it
        rstd = tl.rsqrt(total / N + eps)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(y_ptr + row * N + cols, (xf * rstd * w).to(y_ptr.dtype.element_ty), mask=cols < N,
                 cache_modifier=Y_CACHE)  # fmt: skip
        if STORE_FIRST and not same_row:
            _pipe_arrive(x_after, ws_ptr, sync_ptr, slots_ptr, gen, after, n_tickets, SPLITS, SLOTS)
        x, ticket = x_after, after


@triton.jit
def _slot_poll(slots_ptr, row, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):
    """The row's slots, one volatile load of them all."""
    slots = tl.arange(0, SPLITS_POW2)
    return tl.load(slots_ptr + row * SPLITS + slots, mask=slots < SPLITS, other=0, volatile=True)


@triton.jit
def _slot_settle(v, slots_ptr, row, gen, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):
    """The row's total from its polled slots ``v``, polled again until every slot holds this launch's generation."""
    live = tl.arange(0, SPLITS_POW2) < SPLITS
    missing = tl.sum(tl.where(live & ((v >> 32) != gen), 1, 0), axis=0)
    while missing > 0:
        v = _slot_poll(slots_ptr, row, SPLITS, SPLITS_POW2)
        missing = tl.sum(tl.where(live & ((v >> 32) != gen), 1, 0), axis=0)
    return tl.sum(tl.where(live, (v & 0xFFFFFFFF).to(tl.uint32).to(tl.float32, bitcast=True), 0.0), axis=0)


@triton.jit
def _slot_take(x_ptr, slots_ptr, sync_ptr, ticket_base, gen, offs, N, n_tickets, CHUNK: tl.constexpr,
               SPLITS: tl.constexpr):  # fmt: skip
    """Take a ticket, load its chunk (no hint) and count its sum in at its row's slot; returns (ticket, chunk)."""
    ticket = take_ticket(sync_ptr, ticket_base)
    x = _pipe_load(x_ptr, ticket, offs, N, n_tickets, CHUNK, SPLITS, "")
    _pipe_arrive(x, slots_ptr, sync_ptr, slots_ptr, gen, ticket, n_tickets, SPLITS, True)
    return ticket, x


@triton.jit(do_not_specialize=["ticket_base", "gen"])
def _early_kernel(x_ptr, w_ptr, y_ptr, slots_ptr, sync_ptr, ticket_base, gen, N, n_tickets, eps, CHUNK: tl.constexpr,
                  SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, EARLY_POLL: tl.constexpr, EARLY_W: tl.constexpr):  # fmt: skip
    """The slot meeting's pipelined kernel with the held row's first poll (``EARLY_POLL``) and the weight's load
    (``EARLY_W``) issued right after the next chunk's load, before its sum waits for it: their round trips under
    that load's instead of after it."""
    offs = tl.arange(0, CHUNK)
    ticket, x = _slot_take(x_ptr, slots_ptr, sync_ptr, ticket_base, gen, offs, N, n_tickets, CHUNK, SPLITS)
    while ticket < n_tickets:
        after = take_ticket(sync_ptr, ticket_base)
        x_after = _pipe_load(x_ptr, after, offs, N, n_tickets, CHUNK, SPLITS, "")
        row = (ticket // SPLITS).to(tl.int64)
        cols = (ticket % SPLITS) * CHUNK + offs
        if EARLY_POLL:
            v = _slot_poll(slots_ptr, row, SPLITS, SPLITS_POW2)
        if EARLY_W:
            w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last")
        _pipe_arrive(x_after, slots_ptr, sync_ptr, slots_ptr, gen, after, n_tickets, SPLITS, True)
        if not EARLY_POLL:
            v = _slot_poll(slots_ptr, row, SPLITS, SPLITS_POW2)
        total = _slot_settle(v, slots_ptr, row, gen, SPLITS, SPLITS_POW2)
        if not EARLY_W:
            w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last")
        xf = float32_again(x, total)
        y = xf * tl.rsqrt(total / N + eps) * w.to(tl.float32)
        tl.store(y_ptr + row * N + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)
        x, ticket = x_after, after


@triton.jit(do_not_specialize=["ticket_base", "gen"])
def _deep_kernel(x_ptr, w_ptr, y_ptr, slots_ptr, sync_ptr, ticket_base, gen, N, n_tickets, eps, CHUNK: tl.constexpr,
                 SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):  # fmt: skip
    """The slot meeting's pipelined kernel two chunks deep: a program holds the chunks of its last two tickets and
    waits for the older one's row only after it has taken, loaded and counted in a third, so the row has had two
    turns of every program to fill instead of one. Each program draws two tickets past the last."""
    offs = tl.arange(0, CHUNK)
    t0, x0 = _slot_take(x_ptr, slots_ptr, sync_ptr, ticket_base, gen, offs, N, n_tickets, CHUNK, SPLITS)
    t1, x1 = _slot_take(x_ptr, slots_ptr, sync_ptr, ticket_base, gen, offs, N, n_tickets, CHUNK, SPLITS)
    while t0 < n_tickets:
        t2, x2 = _slot_take(x_ptr, slots_ptr, sync_ptr, ticket_base, gen, offs, N, n_tickets, CHUNK, SPLITS)
        total = slot_wait_sum(slots_ptr, (t0 // SPLITS).to(tl.int64), gen, SPLITS, SPLITS_POW2)
        pipelined_store(x0, total, t0, offs, w_ptr, y_ptr, N, N, eps, CHUNK, SPLITS)
        x0, t0, x1, t1 = x1, t1, x2, t2


@triton.jit(do_not_specialize=["ticket_base", "gen"])
def _ahead_kernel(x_ptr, w_ptr, y_ptr, slots_ptr, sync_ptr, ticket_base, gen, N, n_tickets, eps, CHUNK: tl.constexpr,
                  SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):  # fmt: skip
    """The slot meeting's pipelined kernel with two loads in flight: a program issues the load of a third chunk
    before it counts in the second (whose load it issued a turn ago) and waits for the first's row, as the
    persistent copy issues its next load before it stores. A chunk is counted in once its load is back, so a
    program waiting for a row may hold an uncounted chunk: never one of that row (counted in first, then; a slot
    written twice holds the same bits). Each program draws two tickets past the last."""
    offs = tl.arange(0, CHUNK)
    t0 = take_ticket(sync_ptr, ticket_base)
    x0 = _pipe_load(x_ptr, t0, offs, N, n_tickets, CHUNK, SPLITS, "")
    t1 = take_ticket(sync_ptr, ticket_base)
    x1 = _pipe_load(x_ptr, t1, offs, N, n_tickets, CHUNK, SPLITS, "")
    _pipe_arrive(x0, slots_ptr, sync_ptr, slots_ptr, gen, t0, n_tickets, SPLITS, True)
    while t0 < n_tickets:
        t2 = take_ticket(sync_ptr, ticket_base)
        x2 = _pipe_load(x_ptr, t2, offs, N, n_tickets, CHUNK, SPLITS, "")
        _pipe_arrive(x1, slots_ptr, sync_ptr, slots_ptr, gen, t1, n_tickets, SPLITS, True)
        row = (t0 // SPLITS).to(tl.int64)
        if (t2 // SPLITS).to(tl.int64) == row:
            _pipe_arrive(x2, slots_ptr, sync_ptr, slots_ptr, gen, t2, n_tickets, SPLITS, True)
        total = slot_wait_sum(slots_ptr, row, gen, SPLITS, SPLITS_POW2)
        pipelined_store(x0, total, t0, offs, w_ptr, y_ptr, N, N, eps, CHUNK, SPLITS)
        x0, t0, x1, t1 = x1, t1, x2, t2


@triton.jit(do_not_specialize=["ticket_base", "gen"])
def _retouch_kernel(x_ptr, w_ptr, y_ptr, slots_ptr, sync_ptr, ticket_base, gen, N, n_tickets, eps, CHUNK: tl.constexpr,
                    SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):  # fmt: skip
    """The slot meeting's pipelined kernel holding nothing through the wait: a chunk's registers are free once its sum
    is counted in, and the chunk is read again (from L2, where it was read a turn before) to be normalised. One chunk
    a thread's registers instead of two, so more programs fit an SM; x read once from DRAM while L2 holds it."""
    offs = tl.arange(0, CHUNK)
    ticket, _ = _slot_take(x_ptr, slots_ptr, sync_ptr, ticket_base, gen, offs, N, n_tickets, CHUNK, SPLITS)
    while ticket < n_tickets:
        after, _ = _slot_take(x_ptr, slots_ptr, sync_ptr, ticket_base, gen, offs, N, n_tickets, CHUNK, SPLITS)
        row = (ticket // SPLITS).to(tl.int64)
        cols = (ticket % SPLITS) * CHUNK + offs
        total = slot_wait_sum(slots_ptr, row, gen, SPLITS, SPLITS_POW2)
        xr = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(y_ptr + row * N + cols, (xr * tl.rsqrt(total / N + eps) * w).to(y_ptr.dtype.element_ty), mask=cols < N)
        ticket = after


# A poll of one slot in PTX: a loop inside one instruction block, so the row loop around it has no nested loop and
# Triton's pipeliner will stage its loads (a loop with a `while` inside is not pipelined: offline, sm_90, Triton 3.9,
# the same kernel with `split_rows.slot_wait_sum` compiled to no cp.async at all).
_SPIN = tl.constexpr("""{
.reg .pred %p;
.reg .b32 %lo, %hi;
KPROF_POLL:
ld.volatile.global.b64 $0, [$1];
mov.b64 {%lo, %hi}, $0;
setp.ne.b32 %p, %hi, $2;
@%p bra KPROF_POLL;
}""")


@triton.jit
def _slot_spin_sum(slots_ptr, row, gen, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):
    """``split_rows.slot_wait_sum`` with the poll in PTX (``_SPIN``): each slot read until it holds ``gen``."""
    slots = tl.arange(0, SPLITS_POW2)
    live = slots < SPLITS
    ptrs = slots_ptr + row * SPLITS + tl.where(live, slots, 0)
    v = tl.inline_asm_elementwise(_SPIN, "=l,l,r", [ptrs, tl.zeros([SPLITS_POW2], dtype=tl.int32) + gen],
                                  dtype=tl.int64, is_pure=False, pack=1)  # fmt: skip
    return tl.sum(tl.where(live, (v & 0xFFFFFFFF).to(tl.uint32).to(tl.float32, bitcast=True), 0.0), axis=0)


@triton.jit(do_not_specialize=["gen"])
def _staged_kernel(x_ptr, w_ptr, y_ptr, slots_ptr, gen, N, n_tickets, eps, CHUNK: tl.constexpr, SPLITS: tl.constexpr,
                   SPLITS_POW2: tl.constexpr, STAGES: tl.constexpr, CVT_ASM: tl.constexpr):  # fmt: skip
    """The slot meeting with x's next chunks in shared memory: program p takes chunks p, p + G, p + 2G, ... (G the
    grid), so their addresses are known ahead and the pipeliner issues each chunk's load (cp.async) STAGES - 1 turns
    early, into shared memory, not registers. A program holds one chunk in registers; while it waits for its row the
    next ones are on their way. Needs the whole grid resident at once (a waiting program may wait for a chunk of any
    program): the bench launches only layouts whose compiled registers and shared memory fit."""
    pid = tl.program_id(0)
    offs = tl.arange(0, CHUNK)
    for ticket in tl.range(pid, n_tickets, tl.num_programs(0), num_stages=STAGES):
        row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
        cols = part * CHUNK + offs
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        xf = x.to(tl.float32)
        slot_arrive(slots_ptr, row, part, tl.sum(xf * xf, axis=0), gen, ticket >= 0, SPLITS)
        total = _slot_spin_sum(slots_ptr, row, gen, SPLITS, SPLITS_POW2)
        pipelined_store(x, total, ticket, offs, w_ptr, y_ptr, N, N, eps, CHUNK, SPLITS, CVT_ASM)


@triton.jit(do_not_specialize=["ticket_base"])
def _coop_kernel(x_ptr, w_ptr, y_ptr, ws_ptr, sync_ptr, ticket_base, N, eps, CHUNK: tl.constexpr,
                 SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, X_EVICT: tl.constexpr):  # fmt: skip
    """rmsnorm's cooperative kernel (contiguous rows, bf16) with its x load's hint as a parameter."""
    row, part = cooperative_ticket(sync_ptr, ticket_base, SPLITS)
    cols = part * CHUNK + tl.arange(0, CHUNK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0, eviction_policy=X_EVICT)
    xf = x.to(tl.float32)
    total = cooperative_row_sum(ws_ptr, sync_ptr, row, part, tl.sum(xf * xf, axis=0), SPLITS, SPLITS_POW2)
    w = tl.load(w_ptr + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = float32_again(x, total) * tl.rsqrt(total / N + eps) * w
    tl.store(y_ptr + row * N + cols, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit(do_not_specialize=["ticket_base", "gen"])
def _one_ticket_kernel(x_ptr, w_ptr, y_ptr, slots_ptr, sync_ptr, ticket_base, gen, N, eps, CHUNK: tl.constexpr,
                       SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, CVT_ASM: tl.constexpr):  # fmt: skip
    """SPLITS programs a row (N == SPLITS x CHUNK), one ticket each, meeting once in the slots (``--set whole``): the
    cooperative kernel's order with the slotted meeting, a chunk of a whole SM's registers a program."""
    ticket = take_ticket(sync_ptr, ticket_base)
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    cols = part * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * N + cols)
    xf = x.to(tl.float32)
    slot_arrive(slots_ptr, row, part, tl.sum(xf * xf, axis=0), gen, ticket >= 0, SPLITS)
    total = slot_wait_sum(slots_ptr, row, gen, SPLITS, SPLITS_POW2)
    w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
    y = float32_again(x, total, CVT_ASM) * tl.rsqrt(total / N + eps) * w
    tl.store(y_ptr + row * N + cols, y.to(y_ptr.dtype.element_ty))


def _fastest_copy(xf: torch.Tensor, yf: torch.Tensor):
    """The fastest Triton copy of the first set (8192-element chunks, 16 warps, no hint), for reference."""
    return lambda: _copy_kernel[(xf.numel() // 8192,)](xf, yf, CHUNK=8192, X_EVICT="", Y_CACHE="", num_warps=16)


class _Tickets:
    """A ticket counter for the ``loop ... ticket`` copies, never zeroed: the host passes the count drawn so far."""

    def __init__(self, device: torch.device) -> None:
        self.sync = torch.zeros(1, dtype=torch.int32, device=device)
        self.drawn = 0

    def take(self, tickets: int) -> int:
        base, self.drawn = self.drawn, self.drawn + tickets
        return base


def form_candidates(inputs: dict, y: torch.Tensor, sms: int) -> dict:
    """``--set forms``: name -> a call writing y (every candidate's output is y)."""
    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    n_rows, n = x.shape
    xf, yf = x.view(-1), y.view(-1)
    tickets = _Tickets(x.device)
    fns = {}
    for hint, (xe, yc) in HINTS.items():
        for c, wp in COPIES:
            grid = (xf.numel() // c,)
            fns[f"copy c{c} w{wp} {hint}"] = lambda g=grid, c=c, wp=wp, xe=xe, yc=yc: _copy_kernel[g](
                xf, yf, CHUNK=c, X_EVICT=xe, Y_CACHE=yc, num_warps=wp
            )
        for c, wp in OWN:
            grid = (n_rows * (n // c),)
            fns[f"own c{c} w{wp} {hint}"] = lambda g=grid, c=c, wp=wp, xe=xe, yc=yc: _own_kernel[g](
                x, w, y, n, eps, CHUNK=c, SPLITS=n // c, X_EVICT=xe, Y_CACHE=yc, num_warps=wp
            )
        for k, c, wp in LOOPS:
            chunks = xf.numel() // c
            grid = (min(k * sms, chunks),)
            for order in ("ticket", "static"):

                def loop(g=grid, c=c, wp=wp, xe=xe, yc=yc, chunks=chunks, tk=order == "ticket") -> None:
                    base = tickets.take(chunks + g[0]) if tk else 0
                    _loop_kernel[g](xf, yf, tickets.sync, base, chunks, CHUNK=c, TICKET=tk, X_EVICT=xe, Y_CACHE=yc,
                                    num_warps=wp)  # fmt: skip

                fns[f"loop p{k} c{c} w{wp} {hint} {order}"] = loop
        for k, c, wp in PIPES:
            fns[f"pipe p{k} c{c} w{wp} {hint}"] = _pipe(inputs, y, sms, k, c, wp, xe, yc, slots=None, wait=True)
    return fns


ORDERS = [(4, 8192, 8), (8, 4096, 4), (6, 4096, 4), (4, 4096, 8), (12, 2048, 4), (16, 2048, 2)]


def order_candidates(inputs: dict, y: torch.Tensor, sms: int) -> dict:
    """``--set order``: the pipelined kernel with its meeting in slots, the next chunk counted in before or after the
    held one is stored, over layouts (programs an SM, chunk, warps), no x hint."""
    x = inputs["x"]
    xf, yf = x.view(-1), y.view(-1)
    slots = _Slots(x.device)
    fns = {
        "copy c8192 w16 -": _fastest_copy(xf, yf),
    }
    for k, c, wp in ORDERS:
        for first in (False, True):
            name = f"pipe p{k} c{c} w{wp} - slots{' store-first' if first else ''}"
            fns[name] = _pipe(inputs, y, sms, k, c, wp, "", "", slots=slots, wait=True, store_first=first)
    fns["pipe p4 c8192 w8 - store-first"] = _pipe(inputs, y, sms, 4, 8192, 8, "", "", None, True, store_first=True)
    return fns


EARLY = [(8, 4096, 4), (6, 4096, 4), (3, 8192, 8), (4, 8192, 8)]


def early_candidates(inputs: dict, y: torch.Tensor, sms: int) -> dict:
    """``--set early``: the slot meeting's kernel with the held row's first poll and the weight's load issued before
    the next chunk's sum, or after it, over layouts (programs an SM, chunk, warps)."""
    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    n = x.shape[1]
    xf, yf = x.view(-1), y.view(-1)
    slots = _Slots(x.device)
    fns = {
        "copy c8192 w16 -": _fastest_copy(xf, yf),
    }
    for k, c, wp in EARLY:
        for poll in (False, True):
            for early_w in (False, True):
                name = f"pipe p{k} c{c} w{wp} - slots{' poll' if poll else ''}{' w' if early_w else ''}"

                def early(k=k, c=c, wp=wp, poll=poll, early_w=early_w, name=name) -> None:
                    (ws, sync, base), meta, grid, n_tickets = pipelined_launch_args(x, c, k * sms, "rmsnorm")
                    buf, gen = slots.take(x.shape[0] * meta["SPLITS"])
                    args = (x, w, y, buf, sync, base, gen, n, n_tickets, eps)
                    options = {**meta, "EARLY_POLL": poll, "EARLY_W": early_w, "num_warps": wp}
                    compiled = launch_meeting(_early_kernel, grid, args, options, sync, n_tickets + grid[0])
                    _keep_registers(name, compiled)

                fns[name] = early
    return fns


DEEP = [(4, 8192, 8), (3, 8192, 8), (2, 8192, 16), (3, 8192, 16), (8, 4096, 4), (6, 4096, 4), (4, 4096, 8)]
DEEP += [(2, 16384, 16)]  # programs an SM, chunk, warps
AHEAD = [(4, 4096, 8), (5, 4096, 8), (2, 8192, 16), (3, 8192, 16), (8, 2048, 4), (10, 2048, 4), (8, 4096, 4)]
AHEAD += [(4, 8192, 8)]  # programs an SM, chunk, warps
RETOUCH = [(4, 8192, 8), (5, 8192, 8), (8, 4096, 4), (10, 4096, 4), (12, 4096, 4), (2, 16384, 16), (4, 4096, 8)]
RETOUCH += [(6, 4096, 8)]  # programs an SM, chunk, warps


def deep_candidates(inputs: dict, y: torch.Tensor, sms: int, retouch: bool = False) -> dict:
    """``--set deep``: the slot meeting's kernel two chunks deep (``_deep_kernel``) and with two loads in flight
    (``_ahead_kernel``) over layouts (programs an SM, chunk, warps), beside the library's slotted kernel (one chunk
    deep) in its layouts. ``retouch`` (``--set retouch``): the kernel holding nothing through the wait
    (``_retouch_kernel``) instead of those two."""
    from kprof.kernels.rmsnorm import cooperative

    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    n = x.shape[1]
    slots = _Slots(x.device)
    fns = {}
    for k, c, wp in ((4, 8192, 8), (8, 4096, 4)):
        name = f"slotted p{k} c{c} w{wp}"

        def call(k=k, c=c, wp=wp, name=name) -> None:
            compiled = cooperative.launch_slotted(x, w, y, eps, c, k * sms, wp)
            _keep_registers(name, compiled)

        fns[name] = call
    forms = (("deep", _deep_kernel, DEEP), ("ahead", _ahead_kernel, AHEAD))
    if retouch:
        forms = (("retouch", _retouch_kernel, RETOUCH),)
    for form, kernel, layouts in forms:
        for k, c, wp in layouts:
            name = f"{form} p{k} c{c} w{wp}"

            def call(kernel=kernel, k=k, c=c, wp=wp, name=name) -> None:
                (ws, sync, base), meta, grid, n_tickets = pipelined_launch_args(x, c, k * sms, "rmsnorm")
                buf, gen = slots.take(x.shape[0] * meta["SPLITS"])
                options = {**meta, "num_warps": wp}
                args = (x, w, y, buf, sync, base, gen, n, n_tickets, eps)
                past = 1 if kernel is _retouch_kernel else 2  # tickets each program draws past the last
                compiled = launch_meeting(kernel, grid, args, options, sync, n_tickets + past * grid[0])
                _keep_registers(name, compiled)

            fns[name] = call
    return fns


STAGED = [(4, 8192, 8, 2), (5, 8192, 8, 2), (3, 8192, 8, 3), (8, 4096, 4, 2), (6, 4096, 4, 3), (4, 4096, 8, 2)]
STAGED += [(7, 4096, 4, 2), (2, 16384, 16, 2)]  # programs an SM, chunk, warps, stages


def staged_candidates(inputs: dict, y: torch.Tensor, sms: int) -> dict:
    """``--set staged``: ``_staged_kernel`` over ``STAGED`` layouts whose compiled kernel fits its programs on the
    SMs at once (others are left out and said why: a grid that cannot be resident would wait for ever), beside the
    library's slotted kernel in its layout."""
    from kprof.kernels.rmsnorm import cooperative
    from kprof.runtime import interpreting

    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    n_rows, n = x.shape
    slots = _Slots(x.device)
    fns = {}

    def slotted() -> None:
        _keep_registers("slotted p4 c8192 w8", cooperative.launch_slotted(x, w, y, eps, 8192, 4 * sms, 8))

    fns["slotted p4 c8192 w8"] = slotted
    for k, c, wp, st in STAGED:
        name = f"staged p{k} c{c} w{wp} s{st}"
        meta = {"CHUNK": c, "SPLITS": triton.cdiv(n, c), "SPLITS_POW2": triton.next_power_of_2(triton.cdiv(n, c))}
        meta |= {"STAGES": st, "CVT_ASM": not interpreting(), "num_warps": wp}
        n_tickets = n_rows * meta["SPLITS"]
        args = (x, w, y, slots.buf, 1, n, n_tickets, eps)
        compiled = _staged_kernel.warmup(*args, grid=(1,), **meta)
        compiled._init_handles()  # loads the binary: its registers are known from here
        # programs an H100/H200 SM holds at once (kprof's occupancy calculator, sm_90 limits)
        fit = theoretical_occupancy(32 * wp, compiled.n_regs, int(compiled.metadata.shared)).blocks_per_sm
        _keep_registers(name, compiled)
        if fit < k:
            print(f"  left out {name}: {fit} programs an SM fit ({compiled.n_regs} registers, "
                  f"{compiled.metadata.shared} B shared)", flush=True)  # fmt: skip
            continue

        def call(k=k, meta=meta, n_tickets=n_tickets) -> None:
            buf, gen = slots.take(n_tickets)
            _staged_kernel[(min(k * sms, n_tickets),)](x, w, y, buf, gen, n, n_tickets, eps, **meta)

        fns[name] = call
    return fns


# float32 rows also (``--set library``, ``--set add-library``): the slotted kernel (and in add_rmsnorm's the pipelined
# one) holding as many bytes a chunk as 16-bit's layouts do; programs an SM, chunk, warps
FP32_LAYOUTS = [(8, 2048, 4), (4, 4096, 8)]


def library_candidates(inputs: dict, y: torch.Tensor, sms: int) -> dict:
    """``--set library``: rmsnorm's library kernels, the pipelined one in its layout and the slotted one in that
    layout and in others (more of the row a ticket, fewer programs an SM); registers printed."""
    from kprof.kernels.rmsnorm import cooperative

    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    fns = {}
    for name, launch, (k, c, wp) in (
        ("pipelined p4 c8192 w8", cooperative.launch_pipelined, (4, 8192, 8)),
        ("slotted p8 c4096 w4", cooperative.launch_slotted, (8, 4096, 4)),
        ("slotted p4 c8192 w8", cooperative.launch_slotted, (4, 8192, 8)),
        ("slotted p2 c16384 w16", cooperative.launch_slotted, (2, 16384, 16)),
        ("slotted p1 c32768 w32", cooperative.launch_slotted, (1, 32768, 32)),
        *[
            (f"slotted p{k} c{c} w{wp}", cooperative.launch_slotted, (k, c, wp))
            for k, c, wp in FP32_LAYOUTS
            if x.element_size() == 4
        ],
    ):

        def call(launch=launch, k=k, c=c, wp=wp, name=name) -> None:
            compiled = launch(x, w, y, eps, c, k * sms, wp)
            _keep_registers(name, compiled)

        fns[name] = call
    return fns


WHOLE_LAYOUTS = [(1, 32, 0), (2, 32, 0), (2, 32, 32), (4, 32, 0), (4, 32, 32), (4, 16, 0), (8, 8, 0)]
# programs a row, warps, registers a thread at most (0: the compiler's choice; 32: two programs of 32 warps an SM)


def whole_candidates(inputs: dict, y: torch.Tensor, sms: int) -> dict:
    """``--set whole``: a row's chunks one a program, each a whole SM's registers (``WHOLE_LAYOUTS`` holding 16-128
    bytes of x a thread): one program a row (the library's ``tuned.whole_row_kernel``, unmasked; fp16's second
    conversion through the xor), else ``_one_ticket_kernel`` (fp16's second conversion in PTX). Registers printed.
    At d9a43da this set also ran a copy of the whole-row kernel with fp16's conversion in PTX (``whole ... asm``:
    8 bytes spilled, 77.7-90.7% of the copy against the xor's 85.8-97.6%; results/rmsnorm-cooperative/h200-whole-row/
    forms-d9a43da/)."""
    from kprof.kernels.lib.launching import MEETING_LOCK
    from kprof.kernels.lib.split_rows import slotted_launch_args
    from kprof.kernels.rmsnorm import tuned

    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    n_rows, n = x.shape
    fns = {}
    for splits, wp, cap in WHOLE_LAYOUTS:
        chunk = n // splits
        held = chunk * x.element_size() // (32 * wp)  # bytes of x a thread holds
        if not 16 <= held <= 128 or chunk * splits != n:
            continue
        name = f"{'whole' if splits == 1 else f'split{splits}'} c{chunk} w{wp}" + (f" r{cap}" if cap else "")
        opts = {"num_warps": wp, "maxnreg": cap} if cap else {"num_warps": wp}
        if splits == 1:
            i64 = tuned.needs_i64(n_rows, n)

            def call(name=name, opts=opts, i64=i64) -> None:
                c = tuned.whole_row_kernel[(n_rows,)](x, w, y, n, n, n_rows, n, eps, BLOCK_N=n, I64=i64, EVEN=True,
                                                      **opts)  # fmt: skip
                _keep_registers(name, c)

        else:

            def call(chunk=chunk, wp=wp, cap=cap, name=name) -> None:
                with MEETING_LOCK:
                    (slots, sync, base, gen), meta, grid, n_tickets = slotted_launch_args(
                        x, chunk, n_rows * (n // chunk), "rmsnorm"
                    )
                    args = (x, w, y, slots, sync, base, gen, n, eps)
                    c = launch_meeting(_one_ticket_kernel, grid, args, {**meta, "CVT_ASM": True, "num_warps": wp},
                                       sync, n_tickets, cap)  # fmt: skip
                _keep_registers(name, c)

        fns[name] = call
    return fns


def whole_rule_candidates(inputs: dict, y: torch.Tensor, sms: int) -> dict:
    """``--set whole-rule``: the library's whole-row kernel (``tuned._rmsnorm_whole_row_kernel``, 32 warps) and the
    config an H200 takes without it (``before: ...``), the dispatch and a copy beside them, to place its rule."""
    from kprof.kernels.rmsnorm import tuned

    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    n_rows, n = x.shape
    cfg = tuned.Config("whole", triton.next_power_of_2(n), 1, 32)
    before = tuned.choose_config(n, x.element_size(), n_rows, sms, True, True, whole_rows=False)
    before = tuned.fitted(before, n_rows, n, x.dtype)
    return {
        "whole w32": lambda: tuned.launch_with_config(cfg, x, w, y, eps),
        f"before: {before.kernel} c{before.block_n} w{before.num_warps}": lambda: tuned.launch_with_config(
            before, x, w, y, eps
        ),
    }


REG_CAPS = [(4, 8192, 8, 0), (5, 8192, 8, 48), (6, 8192, 8, 40), (3, 8192, 16, 40), (8, 4096, 4, 0), (10, 4096, 4, 48)]
REG_CAPS += [(12, 4096, 4, 40)]  # programs an SM, chunk, warps, registers a thread at most (0: the compiler's choice)
ADD_REG_CAPS = [(8, 4096, 4, 0), (8, 4096, 4, 64), (10, 4096, 4, 48), (4, 8192, 8, 0), (5, 8192, 8, 48)]
ADD_REG_CAPS += [(3, 8192, 16, 40)]


def capped_candidates(inputs: dict, y: torch.Tensor, sms: int, caps: list | None = None) -> dict:
    """``--set regs``: rmsnorm's slotted kernel with its registers capped (``maxnreg``) so more programs fit an SM,
    over layouts (programs an SM, chunk, warps, cap; ``caps`` or ``REG_CAPS``); registers and spills printed."""
    from kprof.kernels.rmsnorm import cooperative

    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    fns = {}
    for k, c, wp, cap in caps or REG_CAPS:
        name = f"slotted p{k} c{c} w{wp}" + (f" r{cap}" if cap else "")

        def call(k=k, c=c, wp=wp, cap=cap, name=name) -> None:
            compiled = cooperative.launch_slotted(x, w, y, eps, c, k * sms, wp, maxnreg=cap)
            _keep_registers(name, compiled)

        fns[name] = call
    return fns


def meeting_candidates(inputs: dict, y: torch.Tensor, sms: int) -> dict:
    """``--set meeting``: the pipelined kernel's meeting with fences or in slots, with and without the wait; the
    cooperative kernel; the fastest forms of the first set for reference."""
    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    n_rows, n = x.shape
    xf, yf = x.view(-1), y.view(-1)
    slots = _Slots(x.device)
    fns = {
        "copy c8192 w16 -": _fastest_copy(xf, yf),
        "own c8192 w8 -": lambda: _own_kernel[(n_rows * (n // 8192),)](
            x, w, y, n, eps, CHUNK=8192, SPLITS=n // 8192, X_EVICT="", Y_CACHE="", num_warps=8
        ),
    }
    for hint in ("ef", "-"):
        xe, yc = HINTS[hint]
        for k, c, wp in PIPES:
            fns[f"pipe p{k} c{c} w{wp} {hint}"] = _pipe(inputs, y, sms, k, c, wp, xe, yc, slots=None, wait=True)
            fns[f"pipe p{k} c{c} w{wp} {hint} slots"] = _pipe(inputs, y, sms, k, c, wp, xe, yc, slots=slots, wait=True)
        for c, wp in COOPS:

            def coop(c=c, wp=wp, xe=xe) -> None:
                splits = n // c
                (ws, sync, base), meta = cooperative_launch_args(x, splits, "rmsnorm")
                options = {**meta, "X_EVICT": xe, "num_warps": wp}
                grid = (n_rows * splits,)
                launch_meeting(_coop_kernel, grid, (x, w, y, ws, sync, base, n, eps), options, sync, grid[0])

            fns[f"coop c{c} w{wp} {hint}"] = coop
    fns["pipe p4 c8192 w8 - nowait"] = _pipe(inputs, y, sms, 4, 8192, 8, "", "", slots=None, wait=False)
    fns["pipe p4 c8192 w8 - slots nowait"] = _pipe(inputs, y, sms, 4, 8192, 8, "", "", slots=slots, wait=False)
    return fns


class _Slots:
    """The slot protocol's buffer (int64, grown as needed, never zeroed between launches) and its generations."""

    def __init__(self, device: torch.device) -> None:
        self.buf = torch.zeros(1, dtype=torch.int64, device=device)
        self.gen = 0

    def take(self, n: int) -> tuple[torch.Tensor, int]:
        if self.buf.numel() < n:
            self.buf = torch.zeros(n, dtype=torch.int64, device=self.buf.device)
        self.gen = self.gen % (2**31 - 1) + 1
        return self.buf, self.gen


def _pipe(inputs: dict, y: torch.Tensor, sms: int, k: int, c: int, wp: int, xe: str, yc: str, slots: _Slots | None,
          wait: bool, store_first: bool = False):  # fmt: skip
    """A call of the bench's pipelined kernel: K programs an SM, chunks of C, W warps, the hints, the meeting in
    ``slots`` (else fenced), ``wait`` False: no wait, ``store_first`` (see the kernel). The compiled kernel's
    registers a thread and spilled bytes go to ``REGISTERS`` under the call."""
    x, w, eps = inputs["x"], inputs["weight"], float(inputs.get("eps", 1e-6))
    n = x.shape[1]

    def pipe() -> None:
        (ws, sync, base), meta, grid, n_tickets = pipelined_launch_args(x, c, k * sms, "rmsnorm")
        buf, gen = slots.take(x.shape[0] * meta["SPLITS"]) if slots else (ws, 0)
        args = (x, w, y, ws, sync, buf, base, gen, n, n_tickets, eps)
        options = {**meta, "X_EVICT": xe, "Y_CACHE": yc, "SLOTS": slots is not None, "WAIT": wait}
        options |= {"STORE_FIRST": store_first, "num_warps": wp}
        compiled = launch_meeting(_pipe_kernel, grid, args, options, sync, n_tickets + grid[0])
        _keep_registers(pipe, compiled)

    return pipe


REGISTERS: dict = {}  # a candidate's name or call -> (registers a thread, spilled bytes) of its compiled kernel


def _keep_registers(key, compiled) -> None:
    """Note ``compiled``'s registers a thread and spilled bytes in ``REGISTERS`` under ``key``."""
    REGISTERS[key] = (getattr(compiled, "n_regs", None), getattr(compiled, "n_spills", None))


def checked(fns: dict, x: torch.Tensor, y: torch.Tensor, ref: torch.Tensor) -> tuple[dict, dict]:
    """The candidates whose output is right (copies bit for bit, ``pipe`` within bf16's rounding of the oracle;
    ``own`` is wrong on purpose and kept unchecked), and why each other one was left out."""
    kept, notes = {}, {}
    for name, fn in fns.items():
        y.fill_(float("nan"))
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - a candidate that cannot compile or launch is reported, not raced
            notes[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
            continue
        if name.startswith(("copy", "loop")):
            ok = torch.equal(y, x)
        elif name.startswith(
            ("pipe", "coop", "slotted", "deep", "ahead", "retouch", "staged", "whole", "split", "before")
        ) and not name.endswith("nowait"):
            ok = bool(torch.isfinite(y).all()) and float((y.double() - ref).abs().max()) <= 2e-2 * float(
                ref.abs().max()
            )
        else:
            ok = True
        if ok:
            kept[name] = fn
        else:
            notes[name] = "wrong output"
    return kept, notes


ADD_LAYOUTS = [(4, 8192, 8), (8, 4096, 4), (3, 8192, 16)]  # programs an SM, chunk, warps


def _race_point(point: str, fns: dict, notes: dict, args: argparse.Namespace, rng: random.Random) -> tuple[list, list]:
    """Race one point's candidates (``[copy]`` among them), print the fastest, the ones left out and the compiled
    kernels' registers; returns (every round's rows, the summary's rows: each candidate's median as % of the copy)."""
    times = race_rounds(fns, args.rounds, args.rep_ms, rng)
    print_race(point, times, top=12)
    for name, why in notes.items():
        print(f"  left out {name}: {why}", flush=True)
    for name, fn in fns.items():
        got = REGISTERS.get(name) or REGISTERS.get(fn)
        if got:
            print(f"  {name}: {got[0]} registers a thread, {got[1]} bytes spilled", flush=True)
    return race_rows(point, times), pct_of_copy_rows(point, times)


def add_library_race(args: argparse.Namespace, sms: int, rng: random.Random) -> tuple[list, list]:
    """``--set add-library``: add_rmsnorm's pipelined and slotted kernels in ``ADD_LAYOUTS`` beside its dispatch and a
    copy of the bytes it moves (x and the residual into y and h), each checked against the float64 oracle (y and h)
    first; returns (every round's rows, the summary's rows)."""
    from bench_common import copy_of_op

    from kprof.kernels.add_rmsnorm import cooperative

    fam = discover()["add_rmsnorm"]
    times_rows, summary = [], []
    for dtype in args.dtypes.split(","):
        for spec in args.shapes.split(","):
            inputs = fam.make_inputs(tuple(int(v) for v in spec.split("x")), dtype, "cuda", 1234)
            x, r, w, eps = inputs["x"], inputs["residual"], inputs["weight"], float(inputs["eps"])
            y, h = torch.empty_like(x), torch.empty_like(x)
            ref_y, ref_h = fam.oracle(**inputs)
            fns, notes = {}, {}
            if args.set == "add-regs":
                layouts = [(f"slotted p{k} c{c} w{wp}" + (f" r{cap}" if cap else ""), k, c, wp, cap)
                           for k, c, wp, cap in args.caps or ADD_REG_CAPS]  # fmt: skip
            else:
                layouts = [(f"{kernel} p{k} c{c} w{wp}", k, c, wp, kernel)
                           for kernel in ("pipelined", "slotted")
                           for k, c, wp in ADD_LAYOUTS + FP32_LAYOUTS * (dtype == "fp32")]  # fmt: skip
            for name, k, c, wp, how in layouts:

                def call(how=how, k=k, c=c, wp=wp, name=name, ops=(x, r, w, y, h, eps)) -> None:
                    if how == "pipelined":
                        compiled = cooperative.launch_pipelined(*ops, c, k * sms, wp)
                    else:  # the slotted kernel, its registers capped where ``how`` is a number other than 0
                        cap = 0 if how == "slotted" else how
                        compiled = cooperative.launch_slotted(*ops, c, k * sms, wp, maxnreg=cap)
                    _keep_registers(name, compiled)

                y.fill_(float("nan"))
                call()
                err = max(
                    float((out.double() - ref).abs().max() / ref.abs().max()) for out, ref in ((y, ref_y), (h, ref_h))
                )
                if y.isnan().any() or err > 2e-2:
                    notes[name] = f"wrong output (max error {err:.1e} of the largest value)"
                else:
                    fns[name] = call

            dispatch = fam.providers["triton_tuned"].fn
            fns["[dispatch]"] = lambda inputs=inputs: dispatch(**inputs)
            fns["[copy]"] = copy_of_op(inputs, y, h)
            rows, point_summary = _race_point(f"add_rmsnorm/{spec}/{dtype}", fns, notes, args, rng)
            times_rows += rows
            summary += point_summary
            del inputs, x, r, y, h, ref_y, ref_h, fns
            torch.cuda.empty_cache()
    return times_rows, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--set",
        choices=(
            "forms",
            "meeting",
            "order",
            "early",
            "library",
            "add-library",
            "deep",
            "retouch",
            "regs",
            "add-regs",
            "staged",
            "whole",
            "whole-rule",
        ),
        default="forms",
    )
    ap.add_argument("--shapes", default="512x65536,2048x131072,8192x65536")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=5.0)
    ap.add_argument(
        "--caps",
        type=lambda v: [tuple(int(n) for n in lay.split("x")) for lay in v.split(",")],
        help="--set regs/add-regs: these layouts instead, each programs-an-SM x chunk x warps x register cap "
        "(0: the compiler's choice), e.g. 4x8192x8x0,4x8192x8x64",
    )
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rng = random.Random(20261129)
    add_sets = ("add-library", "add-regs")
    times_rows, summary = add_library_race(args, sms, rng) if args.set in add_sets else ([], [])
    for dtype in args.dtypes.split(",") if args.set not in add_sets else ():
        for spec in args.shapes.split(","):
            shape = tuple(int(v) for v in spec.split("x"))
            inputs = fam.make_inputs(shape, dtype, "cuda", 1234)
            x = inputs["x"]
            y = torch.empty_like(x)
            ref = fam.oracle(**inputs)
            make = {
                "forms": form_candidates,
                "meeting": meeting_candidates,
                "order": order_candidates,
                "early": early_candidates,
                "library": library_candidates,
                "deep": deep_candidates,
                "retouch": lambda inputs, y, sms: deep_candidates(inputs, y, sms, retouch=True),
                "regs": lambda inputs, y, sms: capped_candidates(inputs, y, sms, args.caps),
                "staged": staged_candidates,
                "whole": whole_candidates,
                "whole-rule": whole_rule_candidates,
            }[args.set]
            fns, notes = checked(make(inputs, y, sms), x, y, ref)
            dispatch = fam.providers["triton_tuned"].fn
            fns["[dispatch]"] = lambda inputs=inputs: dispatch(**inputs)
            fns["[copy]"] = lambda x=x, y=y: y.copy_(x)
            rows, point_summary = _race_point(f"rmsnorm/{spec}/{dtype}", fns, notes, args, rng)
            times_rows += rows
            summary += point_summary
            del inputs, x, y, ref, fns
            torch.cuda.empty_cache()
    write_csv(args.out / "times.csv", times_rows)
    write_csv(args.out / "summary.csv", summary)
    print_pct_of_copy(summary, 34)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
