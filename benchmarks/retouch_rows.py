"""Wide rows whose chunks are read twice, the second time from L2, against the kernels that hold their chunk in
registers through the row's meeting.

    python benchmarks/retouch_rows.py --out DIR [--dtypes bf16] [--families rmsnorm,add_rmsnorm] \
        [--rounds 2] [--rep-ms 5] [--shapes 512x65536,...] [--budget-s 300]

The wide-row kernels (``kernels/lib/split_rows.py``) hold each program's chunk of a row in registers until the row's
programs have met, so the registers bound the bytes an SM has in flight. On an H200 the pipelined rmsnorm kernel
reached 79-85% of a device copy at 512-8192 rows of 64-128K columns, level with the same loads and stores without
the meeting (``benchmarks/results/rmsnorm-cooperative/``). Here a program holds nothing through the meeting: it
streams its chunk in blocks to sum the squares (rmsnorm's x loaded ``evict_last``; add_rmsnorm's h stored as it
is computed), meets its row, then streams the chunk again, from L2, to write y. DRAM sees x once, as in a copy;
the registers hold one block, so many programs fit an SM.

- ``rt cC bB wW``: one program per chunk of C elements, in blocks of B, W warps, meeting as the cooperative
  kernel (a ticket when it starts);
- ``prt cC bB wW pK``: K programs an SM taking chunks in turn, as the pipelined kernel: a program sums and
  counts in its next chunk before it waits for the row of the one before and writes it;
- ``[auto]``: the family's ``triton_tuned`` (the dispatch); ``[copy]``: a device copy of the bytes the op moves.

Every candidate is checked against the float64 oracle first; ``cold`` times, ``--rounds`` rounds in a fresh random
order. Writes DIR/times.csv and DIR/summary.csv.
"""

from __future__ import annotations

import random

import torch
import triton
import triton.language as tl
from bench_common import (
    checked,
    copy_of_op,
    race_shape,
    tuned_y,
    wide_row_args,
    wide_row_points,
    write_csv,
)

from kprof.kernels.lib.split_rows import (
    cooperative_arrive,
    cooperative_launch_args,
    cooperative_row_sum,
    cooperative_ticket,
    cooperative_wait_sum,
    launch_meeting,
    take_ticket,
)

COOPERATIVE = [(c, b, w) for c in (4096, 8192, 16384) for b in (1024, 2048) for w in (4, 8) if b <= c]
PIPELINED = [(c, 2048, 4, k) for c in (4096, 8192, 16384) for k in (8, 16)] + [(8192, 1024, 4, 16)]


@triton.jit
def _sum_chunk(x_ptr, r_ptr, h_ptr, row, start, x_stride, r_stride, N, CHUNK: tl.constexpr, BLOCK: tl.constexpr,
               ADD: tl.constexpr):  # fmt: skip
    """The chunk's sum of squares, streamed in blocks: rmsnorm's x kept in L2 for the second read; add_rmsnorm's
    h = x + residual stored as it is computed (the second read takes it from L2)."""
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in tl.range(0, CHUNK, BLOCK):
        cols = start + off + tl.arange(0, BLOCK)
        m = cols < N
        if ADD:
            x = tl.load(x_ptr + row * x_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
            r = tl.load(r_ptr + row * r_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
            h = (x.to(tl.float32) + r.to(tl.float32)).to(h_ptr.dtype.element_ty)
            tl.store(h_ptr + row * N + cols, h, mask=m)
            v = h.to(tl.float32)
        else:
            v = tl.load(x_ptr + row * x_stride + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
        acc += v * v
    return tl.sum(acc, axis=0)


@triton.jit
def _write_chunk(src_ptr, w_ptr, y_ptr, row, start, src_stride, y_stride, N, rstd, CHUNK: tl.constexpr,
                 BLOCK: tl.constexpr):  # fmt: skip
    """y = src * rstd * w over the chunk, src read the second time (from L2)."""
    for off in tl.range(0, CHUNK, BLOCK):
        cols = start + off + tl.arange(0, BLOCK)
        m = cols < N
        v = tl.load(src_ptr + row * src_stride + cols, mask=m, other=0.0, eviction_policy="evict_first")
        w = tl.load(w_ptr + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(y_ptr + row * y_stride + cols, (v.to(tl.float32) * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit(do_not_specialize=["ticket_base"])
def _retouch_kernel(
    x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, ws_ptr, sync_ptr, ticket_base, x_stride, r_stride, y_stride, N, eps,
    CHUNK: tl.constexpr, BLOCK: tl.constexpr, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, ADD: tl.constexpr,
):  # fmt: skip
    row, part = cooperative_ticket(sync_ptr, ticket_base, SPLITS)
    start = part * CHUNK
    s = _sum_chunk(x_ptr, r_ptr, h_ptr, row, start, x_stride, r_stride, N, CHUNK, BLOCK, ADD)
    total = cooperative_row_sum(ws_ptr, sync_ptr, row, part, s, SPLITS, SPLITS_POW2)
    rstd = tl.rsqrt(total / N + eps)
    if ADD:
        _write_chunk(h_ptr, w_ptr, y_ptr, row, start, N, y_stride, N, rstd, CHUNK, BLOCK)
    else:
        _write_chunk(x_ptr, w_ptr, y_ptr, row, start, x_stride, y_stride, N, rstd, CHUNK, BLOCK)


@triton.jit
def _take(x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, ticket, x_stride, r_stride, N, n_tickets, CHUNK: tl.constexpr,
          BLOCK: tl.constexpr, SPLITS: tl.constexpr, ADD: tl.constexpr):  # fmt: skip
    live = ticket < n_tickets
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    s = _sum_chunk(x_ptr, r_ptr, h_ptr, row, part * CHUNK, x_stride, r_stride, tl.where(live, N, 0), CHUNK, BLOCK, ADD)
    cooperative_arrive(ws_ptr, sync_ptr, row, part, s, live, SPLITS)


@triton.jit(do_not_specialize=["ticket_base"])
def _retouch_pipelined_kernel(
    x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, ws_ptr, sync_ptr, ticket_base, x_stride, r_stride, y_stride, N, n_tickets, eps,
    CHUNK: tl.constexpr, BLOCK: tl.constexpr, SPLITS: tl.constexpr, SPLITS_POW2: tl.constexpr, ADD: tl.constexpr,
):  # fmt: skip
    ticket = take_ticket(sync_ptr, ticket_base)
    _take(x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, ticket, x_stride, r_stride, N, n_tickets, CHUNK, BLOCK, SPLITS, ADD)
    while ticket < n_tickets:
        after = take_ticket(sync_ptr, ticket_base)
        _take(x_ptr, r_ptr, h_ptr, ws_ptr, sync_ptr, after, x_stride, r_stride, N, n_tickets, CHUNK, BLOCK, SPLITS, ADD)
        row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
        rstd = tl.rsqrt(cooperative_wait_sum(ws_ptr, sync_ptr, row, SPLITS, SPLITS_POW2) / N + eps)
        if ADD:
            _write_chunk(h_ptr, w_ptr, y_ptr, row, part * CHUNK, N, y_stride, N, rstd, CHUNK, BLOCK)
        else:
            _write_chunk(x_ptr, w_ptr, y_ptr, row, part * CHUNK, x_stride, y_stride, N, rstd, CHUNK, BLOCK)
        ticket = after


def candidates(inputs: dict, y: torch.Tensor, h: torch.Tensor | None, ref: torch.Tensor, sms: int) -> dict:
    x, w, eps = inputs["x"], inputs["weight"], float(inputs["eps"])
    r = inputs.get("residual", x)
    add = h is not None
    hh = h if add else y
    n_rows, n = x.shape
    out = {}
    for chunk, block, warps in COOPERATIVE:

        def run(chunk=chunk, block=block, warps=warps):
            splits = triton.cdiv(n, chunk)
            (ws, sync, base), meta = cooperative_launch_args(x, splits, "retouch")
            meta = {"CHUNK": chunk, "BLOCK": block, "SPLITS": splits, "SPLITS_POW2": meta["SPLITS_POW2"]}
            args = (x, r, w, y, hh, ws, sync, base, x.stride(0), r.stride(0), y.stride(0), n, eps)
            grid = (n_rows * splits,)
            launch_meeting(_retouch_kernel, grid, args, {**meta, "ADD": add, "num_warps": warps}, sync, grid[0])
            return y

        out[f"rt c{chunk} b{block} w{warps}"] = (run, ref)
    for chunk, block, warps, per_sm in PIPELINED:

        def run(chunk=chunk, block=block, warps=warps, per_sm=per_sm):
            splits = triton.cdiv(n, chunk)
            (ws, sync, base), meta = cooperative_launch_args(x, splits, "retouch")
            meta = {"CHUNK": chunk, "BLOCK": block, "SPLITS": splits, "SPLITS_POW2": meta["SPLITS_POW2"]}
            n_tickets = n_rows * splits
            grid = (min(per_sm * sms, n_tickets),)
            args = (x, r, w, y, hh, ws, sync, base, x.stride(0), r.stride(0), y.stride(0), n, n_tickets, eps)
            options = {**meta, "ADD": add, "num_warps": warps}
            launch_meeting(_retouch_pipelined_kernel, grid, args, options, sync, n_tickets + grid[0])
            return y

        out[f"prt c{chunk} b{block} w{warps} p{per_sm}"] = (run, ref)
    return out


def main() -> int:
    args = wide_row_args(__doc__, "bf16", 300.0).parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, summary = [], []
    for shape, family, _dtype, fam, inputs, ref in wide_row_points(args):
        y = torch.empty_like(inputs["x"])
        h = torch.empty_like(inputs["x"]) if family == "add_rmsnorm" else None
        fns, notes = checked({"[auto]": (tuned_y(fam, inputs), ref), **candidates(inputs, y, h, ref, sms)}, y)
        fns["[copy]"] = copy_of_op(inputs, y, h)
        raced, summ = race_shape(shape, fns, notes, args, rng, top=12)
        rows += raced
        copy_us = next(r["time_us"] for r in raced if r["variant"] == "[copy]")
        del summ["torch_compile_us"]  # not raced here
        summ.update(copy_us=copy_us, auto_of_copy=copy_us / summ["auto_us"], best_of_copy=copy_us / summ["best_us"])
        summary.append(summ)
        del y, h, fns
    write_csv(args.out / "times.csv", rows)
    write_csv(args.out / "summary.csv", summary)
    print(f"{'shape':<30} {'auto':>9} {'best':>9} {'copy':>9} {'auto%':>6} {'best%':>6}  best")
    for s in summary:
        print(
            f"{s['shape']:<30} {s['auto_us'] or 0:9.1f} {s['best_us']:9.1f} {s['copy_us']:9.1f} "
            f"{100 * (s['auto_of_copy'] or 0):6.1f} {100 * s['best_of_copy']:6.1f}  {s['best']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
