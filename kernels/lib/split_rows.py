"""How rows wider than one block are split over programs, shared by rmsnorm and add_rmsnorm.

* Few rows, two launches (``kernels/rmsnorm/split.py``, ``kernels/add_rmsnorm/split.py``): the split count,
  each program's chunk, the loop step and warps of both launches, and the second launch's kernel (normalise
  a chunk from the row's partial sums of squares), the same for both families.
* Many rows, one launch whose programs meet once per row (``kernels/rmsnorm/cooperative.py``,
  ``kernels/add_rmsnorm/cooperative.py``): the tickets, the row's meeting and its buffers.

The meeting's counters (``launching.meeting_counters``: one ticket counter, then one counter per row) are kept
per device and stream and never zeroed by a launch of their own; so is the workspace of the rows' partial sums
(``launching.meeting_buffers``), which a launch writes before it reads. The ticket counter is never put back to zero:
the host counts the tickets each launch draws and passes the counter's value at the launch's start
(``ticket_base``), from which the kernel counts its tickets; a launch that raises, which may or may not have drawn
its tickets, leaves its counters behind (``launch_meeting``). A launch holds ``launching.MEETING_LOCK`` from taking
the base until its tickets are counted, so two threads launching on one stream never start from the same base.
A row's counter cannot be put back to zero by its last program either, since the row's other programs may still be
reading it while they wait; instead every launch adds exactly ``GENERATION`` to it: each program counts 1, and the
row's first part ``GENERATION - SPLITS`` more.
A row's counter is a multiple of ``GENERATION`` between launches, whatever their SPLITS, and its low bits reach
zero exactly when the row's last program has arrived. Both are int32 and wrap around: the tickets as differences,
the rows' low bits because ``GENERATION`` is a power of two. Code after the pipelined loop that put the ticket
counter back to zero instead took add_rmsnorm's bf16 pipelined kernel from 40 to 52 registers a thread under
Triton 3.6 (two programs an SM instead of three), and the same store inside the loop rmsnorm's fp16 one from 64
to 76.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from kprof.kernels.lib.launching import (
    MEETING_LOCK,
    meeting_buffers,
    meeting_counters,
    meeting_forget,
    meeting_slots,
    meeting_tickets_drawn,
    partials_workspace,
)
from kprof.kernels.lib.plans import Launch, Plans, constexpr_tail
from kprof.launch import CompiledLauncher

# What each launch adds to a row's arrival counter (see the module docstring); above any SPLITS the dispatch makes.
GENERATION = tl.constexpr(1 << 16)

# The choice below, raced on an H100 (benchmarks/results/rmsnorm-split-rows/: 20 shapes of 1-64 rows x
# 16384-131072 columns, bf16 and fp32, 3 interleaved rounds of cold times, every candidate of splits x
# loop step x warps): it lands within 4.4% of the fastest candidate at every shape (1.0075x on average)
# and 14-27% under torch.compile. Two waves of programs beat one (32x131072 bf16: 8 splits, 8.48 us,
# against 4 splits, 11.55 us); at 64 rows one program per row with 16 warps is faster than any split
# (64x131072: 14.38 against 16.54 us), so rows split only while four programs per row still fit one wave.
MIN_CHUNK = 1024  # elements: smaller chunks did not pay for their program
MAX_SPLITS = 128
WAVES = 2  # programs per SM the split count may reach


def choose_splits(n_rows: int, n: int, sm_count: int) -> int:
    """Programs per row: 1 (do not split) when four programs per row would not fit one wave of the SMs;
    else the largest power of two that keeps rows x splits within ``WAVES`` waves and every chunk at
    least ``MIN_CHUNK`` elements."""
    if n_rows * 4 > sm_count:
        return 1
    splits = 1
    while (
        splits * 2 <= MAX_SPLITS and n_rows * splits * 2 <= WAVES * sm_count and triton.cdiv(n, splits * 2) >= MIN_CHUNK
    ):
        splits *= 2
    return splits


def chunk_of(n: int, splits: int) -> int:
    """Elements per program: an equal share of the row, rounded up to 256 so every chunk starts aligned."""
    return triton.cdiv(triton.cdiv(n, splits), 256) * 256


def loop_config(n: int, splits: int) -> tuple[int, int]:
    """(elements per loop step, warps): the whole chunk in one step up to 4096 elements, else 2048 a step
    (8192-element chunks ran faster in 2048 steps: 16x131072 bf16 5.76 against 5.98 us); 4 warps for
    1024-element steps, 8 above."""
    chunk = chunk_of(n, splits)
    block = triton.next_power_of_2(chunk) if chunk <= 4096 else 2048
    return block, 4 if block <= 1024 else 8


@triton.jit
def split_apply_kernel(
    # pointers
    x_ptr,  # [rows, N] input of the norm (rmsnorm: x; add_rmsnorm: h = x + residual)
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] output
    ws_ptr,  # [rows, SPLITS] float32 partial sums of squares from the first launch
    # sizes and strides
    x_row_stride,
    y_row_stride,
    N,
    CHUNK,  # elements per program (a multiple of 256)
    # parameters
    eps,
    # meta-parameters
    BLOCK_N: tl.constexpr,  # elements per loop step
    SPLITS: tl.constexpr,  # programs per row
):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    parts = tl.load(ws_ptr + row * SPLITS + tl.arange(0, SPLITS))
    rstd = tl.rsqrt(tl.sum(parts, axis=0) / N + eps)
    cols = tl.arange(0, BLOCK_N)
    start = split * CHUNK
    x_base = x_ptr + row * x_row_stride + start
    y_base = y_ptr + row * y_row_stride + start
    lim = tl.minimum(CHUNK, N - start)
    for off in tl.range(0, CHUNK, BLOCK_N):
        m = off + cols < lim
        x = tl.load(x_base + off + cols, mask=m, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + start + off + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_base + off + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


# ---------------------------------------------------------------------------------- cooperative programs
@triton.jit
def take_ticket(sync_ptr, ticket_base):
    """The next ticket from the counter at ``sync_ptr``, counted from ``ticket_base`` (the counter's value when the
    launch started: see the module docstring), a relaxed atomic. A ticket publishes no data (the arrivals release
    the partial sums, the waits acquire them); its atomicity alone keeps tickets unique and in the order they were
    taken. Triton's default order (acq_rel) made each ticket wait for the program's earlier stores, in the
    pipelined kernels the whole chunk just normalised: relaxed, on an H100 the cooperative kernels took
    0.957-0.995x their time and copies of the pipelined ones 0.889-0.986x at 512-8192 rows of 65536-131072
    columns, bf16 and fp16 (benchmarks/results/rmsnorm-cooperative/meeting-56aebed/)."""
    return tl.atomic_add(sync_ptr, 1, sem="relaxed") - ticket_base


@triton.jit
def cooperative_ticket(sync_ptr, ticket_base, SPLITS: tl.constexpr):
    """(row, part) of this program, from a ticket taken when it starts: tickets are handed out in start
    order, so every program of a row with a lower ticket is running or done, and the programs a waiting one
    waits for start as soon as any earlier row finishes (no deadlock while the GPU holds SPLITS programs)."""
    ticket = take_ticket(sync_ptr, ticket_base)
    return (ticket // SPLITS).to(tl.int64), ticket % SPLITS


@triton.jit
def arrival(part, SPLITS: tl.constexpr):
    """What a program adds to its row's counter: 1, and the row's first part ``GENERATION - SPLITS`` more, so
    that a launch adds exactly ``GENERATION`` to each row's counter."""
    return tl.where(part == 0, GENERATION - SPLITS + 1, 1)


@triton.jit
def cooperative_row_sum(ws_ptr, sync_ptr, row, part, partial, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):
    """The sum over the row of every program's ``partial``: store this one's, count it in at the row's
    counter (release), wait for the rest of the row (acquire), add the row's partials in slot order (the
    result does not depend on the order of arrival)."""
    tl.store(ws_ptr + row * SPLITS + part, partial)
    add = arrival(part, SPLITS)
    arrived = tl.atomic_add(sync_ptr + 1 + row, add, sem="release") + add
    while arrived & (GENERATION - 1) != 0:  # the low bits: zero once the whole row is in
        arrived = tl.atomic_add(sync_ptr + 1 + row, 0, sem="acquire")
    slots = tl.arange(0, SPLITS_POW2)
    # .cg: the partials from L2, never from a stale L1 line
    parts = tl.load(ws_ptr + row * SPLITS + slots, mask=slots < SPLITS, other=0.0, cache_modifier=".cg")
    return tl.sum(parts, axis=0)


@triton.jit
def cooperative_arrive(ws_ptr, sync_ptr, row, part, partial, live, SPLITS: tl.constexpr):
    """Store this program's ``partial`` of ``row`` and count it in at the row's counter (release); nothing
    where ``live`` is false (a ticket past the last row)."""
    tl.store(ws_ptr + row * SPLITS + part, partial, mask=live)
    tl.atomic_add(sync_ptr + 1 + row, arrival(part, SPLITS), mask=live, sem="release")


@triton.jit
def cooperative_wait_sum(ws_ptr, sync_ptr, row, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):
    """Wait until every program of ``row`` has arrived (acquire), then add the row's partials in slot order. The
    waiting program has arrived, so the counter's low bits are zero only once the whole row has."""
    arrived = tl.atomic_add(sync_ptr + 1 + row, 0, sem="acquire")
    while arrived & (GENERATION - 1) != 0:  # the low bits: zero once the whole row is in
        arrived = tl.atomic_add(sync_ptr + 1 + row, 0, sem="acquire")
    slots = tl.arange(0, SPLITS_POW2)
    parts = tl.load(ws_ptr + row * SPLITS + slots, mask=slots < SPLITS, other=0.0, cache_modifier=".cg")
    return tl.sum(parts, axis=0)


@triton.jit
def pipelined_finish(
    v, ticket, offs, w_ptr, y_ptr, y_row_stride, ws_ptr, sync_ptr, N, eps,
    CHUNK: tl.constexpr, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, CVT_ASM: tl.constexpr = False,
):  # fmt: skip
    """A pipelined kernel's step after it has taken the next ticket: wait for the row of ``ticket``, then store
    ``v`` (that ticket's chunk, held in its own dtype) normalised by the row's rstd and the weight."""
    total = cooperative_wait_sum(ws_ptr, sync_ptr, (ticket // SPLITS).to(tl.int64), SPLITS, SPLITS_POW2)
    pipelined_store(v, total, ticket, offs, w_ptr, y_ptr, y_row_stride, N, eps, CHUNK, SPLITS, CVT_ASM)


@triton.jit
def pipelined_store(
    v, total, ticket, offs, w_ptr, y_ptr, y_row_stride, N, eps,
    CHUNK: tl.constexpr, SPLITS: tl.constexpr, CVT_ASM: tl.constexpr = False,
):  # fmt: skip
    """Store ``v`` (the chunk of ``ticket``, held in its own dtype) normalised by its row's sum of squares ``total``
    and the weight."""
    row = (ticket // SPLITS).to(tl.int64)
    cols = (ticket % SPLITS) * CHUNK + offs
    rstd = tl.rsqrt(total / N + eps)
    m = cols < N
    w = tl.load(w_ptr + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = float32_again(v, total, CVT_ASM) * rstd * w
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=m)


# ---------------------------------------------------------------------------------- the slotted meeting
# The meeting above orders memory with a release (each arrival) and acquires (each poll). In the pipelined kernels a
# program's arrival comes right after it stored the chunk before, and a release waits until those stores are
# visible: on an H200 the pipelined kernel with its arrivals made release-free (each chunk's partial sum and the
# launch's generation in one 64-bit slot, one relaxed exchange; a waiting program polls its row's slots in one
# volatile load until each holds its launch's generation) took rmsnorm from 78-85% of a copy's speed to 86-93%, x
# loaded without a hint (benchmarks/results/rmsnorm-cooperative/h200-slots-5539449/). A
# slot is written whole, so a slot with the launch's generation holds that launch's sum: no fence is needed, and
# nothing else passes between the programs.
@triton.jit
def slot_arrive(slots_ptr, row, part, partial, generation, live, SPLITS: tl.constexpr):
    """Write this chunk's ``partial`` and the launch's ``generation`` (``launching.meeting_slots``) into the chunk's
    slot of ``row`` in one relaxed 64-bit exchange; nothing where ``live`` is false (a ticket past the last row)."""
    bits = partial.to(tl.uint32, bitcast=True).to(tl.int64) | (generation.to(tl.int64) << 32)
    tl.atomic_xchg(slots_ptr + row * SPLITS + part, bits, mask=live, sem="relaxed")


@triton.jit
def slot_wait_sum(slots_ptr, row, generation, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr):
    """Poll ``row``'s slots (one volatile load of them all) until each holds ``generation``, then add their partial
    sums in slot order (the result does not depend on the order of arrival)."""
    slots = tl.arange(0, SPLITS_POW2)
    live = slots < SPLITS
    ptrs = slots_ptr + row * SPLITS + slots
    v = tl.load(ptrs, mask=live, other=0, volatile=True)
    missing = tl.sum(tl.where(live & ((v >> 32) != generation), 1, 0), axis=0)
    while missing > 0:
        v = tl.load(ptrs, mask=live, other=0, volatile=True)
        missing = tl.sum(tl.where(live & ((v >> 32) != generation), 1, 0), axis=0)
    return tl.sum(tl.where(live, (v & 0xFFFFFFFF).to(tl.uint32).to(tl.float32, bitcast=True), 0.0), axis=0)


@triton.jit
def float32_again(v, total, CVT_ASM: tl.constexpr = False):
    """``v`` (a chunk held in its 16-bit dtype through the row's meeting) as float32 a second time, written so
    the compiler cannot merge it with the first conversion and keep the float32 copy in registers through the
    wait. bf16: as bit operations. fp16: through an xor with the row total's NaN flag (zero unless the total
    is NaN, when the result is NaN whatever the low bit of x). sm_90 resource report, rmsnorm, 16384 elements
    with 8 warps: bf16 74 registers a thread; fp16 110 with a plain conversion, 64 with the xor. On an H100,
    fp16 rows of 65536-131072 at 512-8192 rows went from 77-80% of the copy ceiling to 84-89% (512x65536 57.3
    -> 52.3 us in `kprof grid`). The xor for bf16 too (64 registers) ran 1.5-2% slower than the bit
    operations there (benchmarks/results/rmsnorm-cooperative/xor-f9c9585/). ``CVT_ASM``: fp16 through
    ``cvt.f32.f16`` in inline PTX instead (GPU only: the interpreter runs no PTX). rmsnorm's pipelined kernel, 8192
    elements with 8 warps: 64 registers against the xor's 80 (Triton 3.6), so it fits 4 programs an SM; add_rmsnorm's
    went from 64 to 78 and keeps the xor (benchmarks/results/rmsnorm-cooperative/pipelined-fp16-648c762/)."""
    if v.dtype == tl.bfloat16:
        return (v.to(tl.int16, bitcast=True).to(tl.int32) << 16).to(tl.float32, bitcast=True)
    elif v.dtype == tl.float16 and CVT_ASM:  # a conversion in inline PTX, which the compiler cannot merge either
        return tl.inline_asm_elementwise("cvt.f32.f16 $0, $1;", "=r,h", [v], dtype=tl.float32, is_pure=True, pack=1)
    elif v.dtype == tl.float16:
        flip = (total != total).to(tl.int16)
        return (v.to(tl.int16, bitcast=True) ^ flip).to(tl.float16, bitcast=True).to(tl.float32)
    else:
        return v.to(tl.float32)


def pipelined_launch_args(x2d: torch.Tensor, chunk: int, programs: int, what: str) -> tuple[tuple, dict, tuple, int]:
    """A pipelined launch over the rows of ``x2d`` in chunks of ``chunk`` elements: the buffers and constexprs of
    :func:`cooperative_launch_args` (``CHUNK`` the given chunk), the grid (``programs``, at most one a ticket)
    and the number of tickets (rows x chunks a row; each program also draws one past the last, which ends it)."""
    meta = pipelined_meta(x2d.shape[1], chunk)
    buffers, _ = cooperative_launch_args(x2d, meta["SPLITS"], what)
    grid, n_tickets = pipelined_programs(x2d.shape[0], meta["SPLITS"], programs)
    return buffers, meta, (grid,), n_tickets


def slotted_launch_args(x2d: torch.Tensor, chunk: int, programs: int, what: str) -> tuple[tuple, dict, tuple, int]:
    """:func:`pipelined_launch_args` for the slotted meeting: the buffers are (slots, counters, ticket base,
    generation) (``launching.meeting_slots``; of the counters only the ticket counter is used, and no float32
    workspace), the rest as there; refuses a CPU tensor. Hold ``launching.MEETING_LOCK`` from here until the launch's
    tickets are counted."""
    _gpu_only(x2d, what)
    meta = pipelined_meta(x2d.shape[1], chunk)
    sync, base = meeting_counters(x2d, 1)
    slots, generation = meeting_slots(x2d, x2d.shape[0] * meta["SPLITS"])
    grid, n_tickets = pipelined_programs(x2d.shape[0], meta["SPLITS"], programs)
    return (slots, sync, base, generation), meta, (grid,), n_tickets


def pipelined_programs(n_rows: int, splits: int, programs: int) -> tuple[int, int]:
    """(programs launched, tickets of chunks) of a pipelined launch over ``n_rows`` rows of ``splits`` chunks
    that asks for ``programs`` programs: at most one a ticket. Each program also draws one ticket past the last,
    which ends it, so a launch draws the sum of the two."""
    n_tickets = n_rows * splits
    return max(1, min(programs, n_tickets)), n_tickets


def pipelined_meta(n: int, chunk: int) -> dict[str, int]:
    """The constexprs of a pipelined kernel over rows of ``n`` elements in chunks of ``chunk``."""
    splits = triton.cdiv(n, chunk)
    return {"CHUNK": chunk, "SPLITS": splits, "SPLITS_POW2": triton.next_power_of_2(splits)}


def cooperative_meta(n: int, splits: int) -> dict[str, int]:
    """The constexprs of a cooperative kernel over rows of ``n`` elements, ``splits`` programs a row."""
    chunk = triton.next_power_of_2(triton.cdiv(n, splits))
    return {"CHUNK": chunk, "SPLITS": splits, "SPLITS_POW2": triton.next_power_of_2(splits)}


def cooperative_launch_args(x2d: torch.Tensor, splits: int, what: str) -> tuple[tuple, dict]:
    """The buffers (partial sums; the meeting's counters, kept between calls, and the ticket counter's value now:
    see the module docstring) and the constexprs of a cooperative launch over the rows of ``x2d``; refuses a CPU
    tensor (the interpreter runs one program after another, so a program would wait for ever for the rest of its
    row)."""
    n_rows, n = x2d.shape
    _gpu_only(x2d, what)
    if splits >= GENERATION.value:
        raise ValueError(f"{splits} programs a row: the meeting's counters allow fewer than {GENERATION.value}")
    sync, ticket_base, ws = meeting_buffers(x2d, 1 + n_rows, n_rows * splits)
    return (ws, sync, ticket_base), cooperative_meta(n, splits)


def _gpu_only(x2d: torch.Tensor, what: str) -> None:
    """Refuse a CPU tensor: the interpreter runs one program after another, so a program would wait for ever for the
    rest of its row."""
    if not x2d.is_cuda:
        raise ValueError(
            f"the cooperative {what} kernel needs the programs of a row to run at once, which the interpreter "
            "cannot do; run it on a GPU, or use the chunked kernel"
        )


def launch_meeting(
    kernel: Any, grid: tuple[int], args: tuple, options: dict, sync: torch.Tensor, tickets: int, maxnreg: int = 0
) -> Any:
    """``kernel[grid](*args, **options)``, a launch whose programs draw ``tickets`` tickets in all at ``sync``
    (from :func:`cooperative_launch_args`), counted once it is launched; returns the compiled kernel. ``maxnreg``:
    registers a thread at most (ptxas's ``.maxnreg``; 0: the compiler's choice). A launch that raises (an interrupt
    included) leaves its counters to itself: the next call starts on fresh ones."""
    options = {**options, "maxnreg": maxnreg} if maxnreg else options
    try:
        compiled = kernel[grid](*args, **options)
        meeting_tickets_drawn(sync, tickets)
    except BaseException:
        meeting_forget(sync)
        raise
    return compiled


# ---------------------------------------------------------------------------------- layouts that fit
@dataclass(frozen=True)
class RacedLayout:
    """A persistent wide-row layout as it was raced: ``chunk`` elements a ticket, ``warps`` a program, ``per_sm``
    programs an SM launched, of which ``fit`` fitted an SM at once at the registers it compiled to there."""

    chunk: int
    warps: int
    per_sm: int
    fit: int


def fitting_layout(layouts: Sequence[RacedLayout], fits: Callable[[RacedLayout], int]) -> RacedLayout:
    """The first of ``layouts`` (the raced one, then its fallbacks) whose compiled kernel fits as many programs an SM
    as where it was raced (``fits``: programs an SM that fit at its registers here); where none does, the one that
    holds the most row elements in flight an SM (programs that fit x chunk), the earlier on a tie.

    Why: a layout's speed follows the row elements its programs hold in flight an SM, and its registers move with
    the width (the kernel is specialised on the chunks a row) and the Triton version. rmsnorm fp16's 8192-element,
    8-warp layout compiles to 64 registers a thread at 65536 and 131072 columns under Triton 3.6 (4 programs an SM
    fit) and to 74-77 between (3 fit): on an H200 it read 82.1-83.5% of a copy of the same bytes at 1024x81920,
    4096x114688 and 8192x98304, where 16384-element chunks of 16 warps (64 registers, 2 fit) read 87.2-90.0
    (benchmarks/results/rmsnorm-cooperative/h200-fit-3af47a6/)."""
    best, best_in_flight = layouts[0], -1
    for layout in layouts:
        fit = min(fits(layout), layout.per_sm)
        if fit >= layout.fit:
            return layout
        if fit * layout.chunk > best_in_flight:
            best, best_in_flight = layout, fit * layout.chunk
    return best


_compiled = Plans()  # offline_resources' answers, by specialisation: one offline compile each ({}: it failed)
_fitted = Plans()  # fitted_layout's answers, by its arguments' specialisation


def fitted_layout(
    family: str, layouts: tuple[RacedLayout, ...], n_rows: int, n: int, dtype: torch.dtype, offline_call: Callable
) -> RacedLayout:
    """:func:`fitting_layout` of ``layouts`` for the slotted kernel of ``family`` over ``n_rows`` rows of ``n``
    elements of ``dtype``: each layout's kernel compiled offline for sm_90 once a specialisation
    (:func:`programs_that_fit`; ``offline_call``: the family's ``cooperative.offline_call``), the answer kept (a
    lookup from the second call on). No GPU needed."""
    memo = (family, layouts, n, dtype, n_rows % 16)  # n_rows % 16 decides each layout's tickets' divisibility by 16
    found = _fitted.get(memo)
    if found is None:

        def fits(layout: RacedLayout) -> int:
            n_tickets = n_rows * triton.cdiv(n, layout.chunk)  # specialised on as an integer argument
            key = (family, dtype, n, n_tickets % 16 == 0, layout.chunk, layout.warps)
            fit = programs_that_fit(
                key, lambda: offline_call("slotted", n_rows, n, dtype, layout.chunk, 0, layout.warps)
            )
            return layout.fit if fit is None else fit  # not known: as where it was raced

        found = _fitted.put(memo, fitting_layout(layouts, fits))
    return found


def offline_resources(
    key: tuple, call: Callable[[], tuple[Any, tuple, dict]], what: str, otherwise: str
) -> dict[str, Any] | None:
    """ptxas's resources of the launch ``call()`` gives (kernel, arguments, options with its ``num_warps``),
    compiled offline for sm_90 (``kprof.specialization.compile_resources``: the launch's own specialisation, Triton's
    cache), with the launch's ``num_warps`` added; kept by ``key``, which must name everything the specialisation
    depends on (``call`` runs only the first time). None where that compile fails (no ptxas, a Triton whose compiler
    API moved): a RuntimeWarning says why, once a key (``what``: the kernel; ``otherwise``: what the caller launches
    instead)."""
    found = _compiled.get(key)
    if found is None:
        from kprof.specialization import compile_resources

        try:
            kernel, args, options = call()
            found = {**compile_resources(kernel, args, options, 90), "num_warps": int(options["num_warps"])}
        except Exception as exc:  # noqa: BLE001 - the check is an optimisation, never the reason a call fails
            warnings.warn(
                f"kprof: could not compile {what} offline to read its resources ({exc!r}); {otherwise}",
                RuntimeWarning,
                stacklevel=3,
            )
            found = {}
        _compiled.put(key, found)
    return found or None


def programs_that_fit(key: tuple, call: Callable[[], tuple[Any, tuple, dict]]) -> int | None:
    """Programs of the launch ``call()`` gives that fit an sm_90 SM at once: its :func:`offline_resources` read with
    kprof's occupancy calculator (``key``: as there, its first item the family). None where the compile fails, and the
    caller keeps what it would have launched without the check."""
    from kprof.occupancy import theoretical_occupancy

    res = offline_resources(
        key,
        call,
        f"{key[0]}'s wide-row kernel",
        "it launches the layout raced for this width without checking that its programs fit an SM",
    )
    if res is None:
        return None
    return theoretical_occupancy(32 * res["num_warps"], res["registers"], res["shared_mem_bytes"]).blocks_per_sm


# ---------------------------------------------------------------------------------- launch plans
class SplitLaunch:
    """The split path's two launches (few wide rows, ``splits`` programs a row) fixed by a plan's call signature: the
    first writes each program's partial sum of squares into a float32 workspace, the second reads its row's and
    writes the normalised chunks. The workspace is the stream's kept one (``launching.partials_workspace``; a CUDA
    graph's capture gets its own), taken under ``launching.MEETING_LOCK`` until the second launch is made.

    Called like a :class:`~kprof.kernels.lib.plans.Launch` with the family's leading tensors (rmsnorm: x, weight, y;
    add_rmsnorm: x, residual, weight, y, h), or (``fast``) their raw addresses; ``first_takes`` and
    ``second_takes`` are the positions among them of the tensors each launch takes before the workspace."""

    __slots__ = ("first", "second", "first_takes", "second_takes", "partials", "template")

    def __init__(
        self,
        first: Launch,
        second: Launch,
        takes: tuple[tuple[int, ...], tuple[int, ...]],
        partials: int,
        template: torch.Tensor,
    ) -> None:
        self.first, self.second, (self.first_takes, self.second_takes) = first, second, takes
        self.partials = partials  # rows x splits
        self.template = template  # an empty float32 tensor on the inputs' GPU

    @property
    def entry(self) -> Any:
        """Set once both launches have compiled entries (until then, and under hooks, call the object)."""
        return self.second.entry if self.first.entry is not None else None

    def __call__(self, *tensors: torch.Tensor) -> None:
        self._both(self.first, self.second, tensors, raw=False)

    def fast(self, *pointers: int) -> None:
        """Both compiled launches with the leading tensors as raw addresses: only once ``entry`` is set and no
        launch hook is installed."""
        self._both(self.first.fast, self.second.fast, pointers, raw=True)

    def _both(self, first: Any, second: Any, leading: tuple, raw: bool) -> None:
        with MEETING_LOCK:  # another thread's first launch on this stream must not come between these two
            ws = partials_workspace(self.template, self.partials)
            w = ws.data_ptr() if raw else ws
            first(*[leading[i] for i in self.first_takes], w)
            second(*[leading[i] for i in self.second_takes], w)


class MeetingLaunch:
    """A meeting kernel's launch (cooperative or pipelined) fixed by a plan's call signature: per call the
    current stream's meeting counters, the ticket counter's value now and the workspace of partial sums kept with them
    (``launching.meeting_buffers``), then the compiled launch through Triton's C launcher; the tickets it draws
    are counted once it is launched, and a launch that raises leaves its counters behind, as
    :func:`launch_meeting` does. Called like a :class:`~kprof.kernels.lib.plans.Launch` with the kernel's leading
    tensors (x, weight, y; add_rmsnorm's x, residual, weight, y, h), or (``fast``) their raw addresses.

    What it saves: the checked launch binds a dozen arguments and constexprs through the JIT on every call
    (``launch_meeting``). On an H200, bf16, the two measured interleaved
    (benchmarks/results/grid/meeting-plans-3d38a5c/): rmsnorm's triton_tuned at 256-2048 rows of 65536-131072 took
    92.0-93.7 us of host time a call through the checked launch, 18.6-19.5 from its plan (GPU time 38.4-148.2 us,
    unchanged); add_rmsnorm's at 64-2048 rows 144.2-155.8 against 36.5-44.4."""

    __slots__ = ("launch", "ws_shape", "partials", "counters", "tickets", "template", "slotted")

    def __init__(
        self, launch: Launch, ws_shape: tuple[int, int], tickets: int, template: torch.Tensor, slotted: bool = False
    ) -> None:
        self.launch, self.tickets, self.template, self.ws_shape = launch, tickets, template, ws_shape
        self.partials = ws_shape[0] * ws_shape[1]  # one a row and program (chunk)
        self.counters = 1 + ws_shape[0]  # the ticket counter, then one per row
        self.slotted = slotted  # the slotted meeting: (slots, counters, ticket base, generation) after the tensors

    @property
    def entry(self) -> Any:
        """The compiled launch entry, once the JIT has built it (until then, and under hooks, call the object)."""
        return self.launch.entry

    def __call__(self, *tensors: torch.Tensor) -> None:
        self._meet(self.launch, tensors, raw=False)

    def fast(self, *pointers: int) -> None:
        """The compiled launch with the leading tensors as raw addresses: only once ``entry`` is set and no launch
        hook is installed."""
        self._meet(self.launch.fast, pointers, raw=True)

    def _meet(self, launch: Any, leading: tuple, raw: bool) -> None:
        """``launch(*leading, workspace, counters, ticket base)`` (the slotted kernel: slots, counters, ticket base,
        generation), the buffers as raw addresses where ``raw``."""
        with MEETING_LOCK:  # counters taken to tickets counted: see launching.MEETING_LOCK
            if self.slotted:
                sync, base = meeting_counters(self.template, 1)
                ws, generation = meeting_slots(self.template, self.partials)
                tail: tuple = (base, generation)
            else:
                sync, base, ws = meeting_buffers(self.template, self.counters, self.partials)
                tail = (base,)
            try:
                launch(*leading, *((ws.data_ptr(), sync.data_ptr()) if raw else (ws, sync)), *tail)
                meeting_tickets_drawn(sync, self.tickets)
            except BaseException:
                meeting_forget(sync)
                raise


def meeting_launch(
    kernel: str,
    launchers: tuple[CompiledLauncher, CompiledLauncher],
    named: dict[str, Any],
    n_rows: int,
    chunk: int,
    splits: int,
    programs: int,
    num_warps: int,
    sigs: tuple,
    template: torch.Tensor,
) -> MeetingLaunch:
    """The :class:`MeetingLaunch` of a family's pipelined kernel (``kernel`` "pipelined": chunks of ``chunk``, at
    most ``programs`` programs; "slotted": the same with the slotted meeting) or cooperative one ("cooperative":
    ``splits`` programs a row), ``launchers`` (pipelined, cooperative, and slotted where the family has it), over
    ``n_rows`` rows. ``named`` gives the family's arguments after ``ticket_base`` by name
    but the tickets and the meta-parameters this adds (strides, ``N``, eps; one kernel's own constexprs, which the
    other does not take, are left out of its launch); ``sigs`` is what the plan's signature says of the leading
    tensors (``plans.sig``: dtypes, devices, 16-byte alignment), ``template`` an empty float32 tensor on their GPU
    (the workspace is allocated like it). The compiled kernel is keyed without ``ticket_base``, which the kernels do
    not specialise on (an int32 always), nor the slotted kernel's ``generation``."""
    named = dict(named)
    if kernel in ("pipelined", "slotted"):
        launcher = launchers[0 if kernel == "pipelined" else 2]
        named.update(pipelined_meta(named["N"], chunk))
        programs, named["n_tickets"] = pipelined_programs(n_rows, named["SPLITS"], programs)
        tickets = named["n_tickets"] + programs  # each program draws one past the last, which ends it
    else:
        launcher = launchers[1]
        named.update(cooperative_meta(named["N"], splits))
        programs = tickets = n_rows * splits
    slotted = kernel == "slotted"
    first = launcher.jit_fn.arg_names.index("generation" if slotted else "ticket_base") + 1
    tail = constexpr_tail(launcher.jit_fn, first, named)
    launch = Launch(launcher, ("meeting", tail, num_warps, *sigs), (programs,), tail, {"num_warps": num_warps})
    return MeetingLaunch(launch, (n_rows, named["SPLITS"]), tickets, template, slotted)
