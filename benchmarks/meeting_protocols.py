"""How the programs of a wide row meet: the shipped counter protocol against one with no memory fences.

    python benchmarks/meeting_protocols.py --out DIR [--dtypes bf16,fp16] [--families rmsnorm,add_rmsnorm] \
        [--rounds 3] [--rep-ms 5] [--shapes 512x65536,...]

rmsnorm's and add_rmsnorm's cooperative and pipelined kernels (``kernels/lib/split_rows.py``) reach 85-95% of a
device copy at many rows of 128-256 KB on an H100, where the same loads and stores without the meeting reach
89-97% (``benchmarks/results/rmsnorm-cooperative/``). Their meeting orders memory three times per chunk:

- the ticket is an ``atomic_add`` with Triton's default ``acq_rel`` order;
- a program stores its partial sum, then counts itself in with a ``release`` atomic;
- a waiting program polls the row's counter with ``acquire`` atomics, then reads the partial sums.

A release waits until the program's earlier stores are visible, among them the whole normalised chunk the
pipelined kernel has just stored. This race times three protocols in copies of the two kernels:

- ``p0``: as shipped until this race (the library takes relaxed tickets since 695fd4b);
- ``p1``: the ticket ``relaxed`` (a ticket orders nothing; its atomicity alone keeps tickets unique), the rest
  as shipped;
- ``p2``: no fence at all. Each chunk writes one 64-bit slot with one relaxed atomic exchange: its partial
  sum's bits and, above them, a flag. A waiting program reads the row's slots with volatile loads until every
  flag is set; a slot is read whole or not at all, so a set flag means its sum is there. The slots (and the
  ticket, slot 0) are one zeroed int64 buffer.

Candidates: ``pipe pK`` (the pipelined kernel: 8192-element chunks, 8 warps, 4 programs an SM, the dispatch's
choice where it pipelines), ``coop pK`` (the cooperative kernel at the family's rule: 16384-element chunks,
8 warps for rmsnorm, 16 for add_rmsnorm bf16, 32 for fp16), ``[auto]`` (the family's ``triton_tuned``) and
``[copy]`` (a device copy of the bytes the op moves). Every candidate is checked against the float64 oracle
first; ``cold`` times, ``--rounds`` rounds in a fresh random order. Writes DIR/times.csv and DIR/summary.csv.
"""

from __future__ import annotations

import random
import statistics

import torch
import triton
import triton.language as tl
from bench_common import (
    checked,
    copy_of_op,
    print_notes,
    print_race,
    race_rounds,
    race_rows,
    tuned_y,
    wide_row_args,
    wide_row_points,
    write_csv,
)

from kprof.kernels.lib.split_rows import cooperative_arrive, cooperative_wait_sum, float32_again

FLAG = tl.constexpr(1 << 32)  # above a partial sum's 32 bits in its slot: the slot is written
# (chunk elements, warps) of the cooperative rule: rmsnorm 64 a thread x 8 warps; add_rmsnorm 32 KB a program
COOP = {("rmsnorm", "bf16"): (16384, 8), ("rmsnorm", "fp16"): (16384, 8)}
COOP |= {("add_rmsnorm", "bf16"): (16384, 16), ("add_rmsnorm", "fp16"): (16384, 32)}
PIPE = (8192, 8)  # chunk elements, warps
PIPE_PER_SM = (4, 3, 6)


@triton.jit
def _ticket(sync_ptr, PROTOCOL: tl.constexpr):
    if PROTOCOL == 0:
        return tl.atomic_add(sync_ptr, 1)  # Triton's default order, acq_rel
    else:  # int32 whatever the buffer (p2's is int64): a ticket's columns are int32 vectors, as p0's
        return tl.atomic_add(sync_ptr, 1, sem="relaxed").to(tl.int32)


@triton.jit
def _arrive(ws_ptr, sync_ptr, row, part, partial, live, SPLITS: tl.constexpr, PROTOCOL: tl.constexpr):
    if PROTOCOL == 2:
        bits = partial.to(tl.uint32, bitcast=True).to(tl.int64)
        tl.atomic_xchg(sync_ptr + 1 + row * SPLITS + part, bits | FLAG, mask=live, sem="relaxed")
    else:
        cooperative_arrive(ws_ptr, sync_ptr, row, part, partial, live, SPLITS)


@triton.jit
def _wait_sum(ws_ptr, sync_ptr, row, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, PROTOCOL: tl.constexpr):
    if PROTOCOL == 2:
        base = sync_ptr + 1 + row * SPLITS
        for s in tl.static_range(SPLITS):  # a scalar poll per slot: a polled block of slots cost registers
            while (tl.load(base + s, volatile=True) >> 32) == 0:
                pass
        slots = tl.arange(0, SPLITS_POW2)
        v = tl.load(base + slots, mask=slots < SPLITS, other=FLAG, volatile=True)
        return tl.sum((v & 0xFFFFFFFF).to(tl.uint32).to(tl.float32, bitcast=True), axis=0)
    else:
        return cooperative_wait_sum(ws_ptr, sync_ptr, row, SPLITS, SPLITS_POW2)


@triton.jit
def _take(x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, ticket, offs, x_row_stride, r_row_stride, N, n_tickets,
          CHUNK: tl.constexpr, SPLITS: tl.constexpr, ADD: tl.constexpr, PROTOCOL: tl.constexpr):  # fmt: skip
    """Load ticket's chunk (add_rmsnorm: x + residual, h stored), count its sum of squares in; return it."""
    live = ticket < n_tickets
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    cols = part * CHUNK + offs
    m = cols < tl.where(live, N, 0)
    v = tl.load(x_ptr + row * x_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
    if ADD:
        r = tl.load(r_ptr + row * r_row_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
        v = (v.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
        tl.store(h_ptr + row * N + cols, v, mask=m)
    vf = v.to(tl.float32)
    _arrive(ws_ptr, sync_ptr, row, part, tl.sum(vf * vf, axis=0), live, SPLITS, PROTOCOL)
    return v


@triton.jit
def _finish(v, ticket, offs, w_ptr, y_ptr, ws_ptr, sync_ptr, N, eps,
            CHUNK: tl.constexpr, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, PROTOCOL: tl.constexpr):  # fmt: skip
    """Wait for ticket's row, store its chunk ``v`` normalised (y contiguous)."""
    row = (ticket // SPLITS).to(tl.int64)
    cols = (ticket % SPLITS) * CHUNK + offs
    total = _wait_sum(ws_ptr, sync_ptr, row, SPLITS, SPLITS_POW2, PROTOCOL)
    m = cols < N
    w = tl.load(w_ptr + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = float32_again(v, total) * tl.rsqrt(total / N + eps) * w
    tl.store(y_ptr + row * N + cols, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _meeting_kernel(
    x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, ws_ptr, sync_ptr, x_row_stride, r_row_stride, N, n_tickets, eps,
    CHUNK: tl.constexpr, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr,
    ADD: tl.constexpr,  # add_rmsnorm (h = x + residual, stored) rather than rmsnorm
    PIPELINED: tl.constexpr,  # take tickets in turn, loading the next chunk before waiting (else one ticket)
    PROTOCOL: tl.constexpr,
):  # fmt: skip
    offs = tl.arange(0, CHUNK)
    ticket = _ticket(sync_ptr, PROTOCOL)
    v = _take(x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, ticket, offs, x_row_stride, r_row_stride, N, n_tickets,
              CHUNK, SPLITS, ADD, PROTOCOL)  # fmt: skip
    if PIPELINED:
        while ticket < n_tickets:
            after = _ticket(sync_ptr, PROTOCOL)
            v_after = _take(x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, after, offs, x_row_stride, r_row_stride, N,
                            n_tickets, CHUNK, SPLITS, ADD, PROTOCOL)  # fmt: skip
            _finish(v, ticket, offs, w_ptr, y_ptr, ws_ptr, sync_ptr, N, eps, CHUNK, SPLITS, SPLITS_POW2, PROTOCOL)
            v, ticket = v_after, after
    else:
        _finish(v, ticket, offs, w_ptr, y_ptr, ws_ptr, sync_ptr, N, eps, CHUNK, SPLITS, SPLITS_POW2, PROTOCOL)


def launch(inputs: dict, y: torch.Tensor, h: torch.Tensor | None, chunk: int, warps: int, programs: int | None,
           protocol: int) -> torch.Tensor:  # fmt: skip
    """One call: ``programs`` None for the cooperative kernel (a program a ticket), else pipelined."""
    x, w = inputs["x"], inputs["weight"]
    r = inputs.get("residual", x)
    n_rows, n = x.shape
    splits = triton.cdiv(n, chunk)
    n_tickets = n_rows * splits
    if protocol == 2:
        sync = torch.zeros(1 + n_tickets, dtype=torch.int64, device=x.device)
        ws = sync
    else:
        ws = torch.empty((n_rows, splits), dtype=torch.float32, device=x.device)
        sync = torch.zeros(1 + n_rows, dtype=torch.int32, device=x.device)
    grid = n_tickets if programs is None else max(1, min(programs, n_tickets))
    _meeting_kernel[(grid,)](
        x, r, w, y, y if h is None else h, ws, sync, x.stride(0), r.stride(0), n, n_tickets, float(inputs["eps"]),
        CHUNK=chunk, SPLITS=splits, SPLITS_POW2=triton.next_power_of_2(splits), ADD=h is not None,
        PIPELINED=programs is not None, PROTOCOL=protocol, num_warps=warps,
    )  # fmt: skip
    return y


def candidates(family: str, dtype: str, inputs: dict, y, h, ref, sms: int, auto) -> dict:
    out = {}
    coop_chunk, coop_warps = COOP[(family, dtype)]
    for p in (0, 1, 2):
        out[f"coop p{p}"] = (lambda p=p: launch(inputs, y, h, coop_chunk, coop_warps, None, p), ref)
        for k in PIPE_PER_SM if p == 2 else PIPE_PER_SM[:1]:
            out[f"pipe p{p} x{k}"] = (lambda p=p, k=k: launch(inputs, y, h, PIPE[0], PIPE[1], k * sms, p), ref)

    out["[auto]"] = (auto, ref)
    return out


def main() -> int:
    args = wide_row_args(__doc__, "bf16,fp16", 480.0).parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, summary = [], []
    for shape, family, dtype, fam, inputs, ref in wide_row_points(args):
        y = torch.empty_like(inputs["x"])
        h = torch.empty_like(inputs["x"]) if family == "add_rmsnorm" else None
        fns, notes = checked(candidates(family, dtype, inputs, y, h, ref, sms, tuned_y(fam, inputs)), y)
        fns["[copy]"] = copy_of_op(inputs, y, h)
        times = race_rounds(fns, args.rounds, args.rep_ms, rng)
        print_race(shape, times, top=30)
        print_notes(notes)
        rows += race_rows(shape, times)
        med = {k: statistics.median(v) for k, v in times.items()}
        best_us, best = min((v, k) for k, v in med.items() if not k.startswith("["))
        summary.append(
            {
                "shape": shape,
                "auto_us": med.get("[auto]"),
                "pipe_p0_us": med.get("pipe p0 x4"),
                "pipe_p2_us": med.get("pipe p2 x4"),
                "coop_p0_us": med.get("coop p0"),
                "coop_p2_us": med.get("coop p2"),
                "best": best,
                "best_us": best_us,
                "copy_us": med["[copy]"],
                "auto_of_copy": med["[copy]"] / med["[auto]"] if med.get("[auto]") else None,
                "best_of_copy": med["[copy]"] / best_us,
            }
        )
        del y, h, fns
    write_csv(args.out / "times.csv", rows)
    write_csv(args.out / "summary.csv", summary)
    cols = ("auto_us", "pipe_p0_us", "pipe_p2_us", "coop_p0_us", "coop_p2_us", "copy_us")
    print(f"{'shape':<28} " + " ".join(f"{c[:-3]:>9}" for c in cols) + f" {'auto%':>6} {'best%':>6}  best")
    for s in summary:
        print(
            f"{s['shape']:<28} " + " ".join(f"{s[c] or 0:9.1f}" for c in cols)
            + f" {100 * (s['auto_of_copy'] or 0):6.1f} {100 * s['best_of_copy']:6.1f}  {s['best']}"
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
