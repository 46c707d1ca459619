"""rmsnorm's pipelined kernel with the next chunk's arrival moved after the held chunk's store, against the shipped
kernel and a copy of the same bytes (GPU only; prints a markdown table).

The shipped kernel (``kernels/rmsnorm/cooperative.py``) loads the next ticket's chunk, sums its squares and counts it
in at its row, then waits for the row of the chunk it holds and stores that chunk: the load's latency is waited out
before the wait. Here the next chunk's sum and arrival come after the held chunk's store, so its load stays in flight
through the wait and the store. A chunk of the same row as the held one arrives before the wait (else a program would
wait for its own arrival); every other waiting program's unarrived chunk is of a later row than the one it waits
for, so the rows waited on cannot form a cycle, and the deadlock argument of the shipped kernel holds.

Run as ``python benchmarks/pipelined_arrival_order.py`` (results/rmsnorm-cooperative/arrival-order-2a1648d/)."""

import statistics

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching
from kprof.kernels.lib.split_rows import (
    cooperative_arrive,
    launch_meeting,
    pipelined_finish,
    pipelined_launch_args,
    take_ticket,
)
from kprof.kernels.rmsnorm import cooperative


@triton.jit
def _load(x_ptr, ticket, offs, x_row_stride, N, n_tickets, CHUNK: tl.constexpr, SPLITS: tl.constexpr):
    live = ticket < n_tickets
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    cols = part * CHUNK + offs
    return tl.load(
        x_ptr + row * x_row_stride + cols, mask=cols < tl.where(live, N, 0), other=0.0, eviction_policy="evict_first"
    )


@triton.jit
def _arrive(x, ws_ptr, sync_ptr, ticket, n_tickets, SPLITS: tl.constexpr):
    live = ticket < n_tickets
    row, part = (ticket // SPLITS).to(tl.int64), ticket % SPLITS
    xf = x.to(tl.float32)
    cooperative_arrive(ws_ptr, sync_ptr, row, part, tl.sum(xf * xf, axis=0), live, SPLITS)


@triton.jit(do_not_specialize=["ticket_base"])
def _reordered_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    ws_ptr,
    sync_ptr,
    ticket_base,
    x_row_stride,
    y_row_stride,
    N,
    n_tickets,
    eps,
    CHUNK: tl.constexpr,
    SPLITS: tl.constexpr,
    SPLITS_POW2: tl.constexpr,
    CVT_ASM: tl.constexpr,
):
    offs = tl.arange(0, CHUNK)
    ticket = take_ticket(sync_ptr, ticket_base)
    x = _load(x_ptr, ticket, offs, x_row_stride, N, n_tickets, CHUNK, SPLITS)
    _arrive(x, ws_ptr, sync_ptr, ticket, n_tickets, SPLITS)
    while ticket < n_tickets:
        after = take_ticket(sync_ptr, ticket_base)
        x_after = _load(x_ptr, after, offs, x_row_stride, N, n_tickets, CHUNK, SPLITS)
        same = (after // SPLITS) == (ticket // SPLITS)
        if same:
            _arrive(x_after, ws_ptr, sync_ptr, after, n_tickets, SPLITS)
        pipelined_finish(
            x, ticket, offs, w_ptr, y_ptr, y_row_stride, ws_ptr, sync_ptr, N, eps, CHUNK, SPLITS, SPLITS_POW2, CVT_ASM
        )
        if not same:
            _arrive(x_after, ws_ptr, sync_ptr, after, n_tickets, SPLITS)
        x, ticket = x_after, after


def reordered(x2d, w, y2d, eps, chunk, programs, num_warps):
    with launching.MEETING_LOCK:
        (ws, sync, base), meta, grid, n_tickets = pipelined_launch_args(x2d, chunk, programs, "rmsnorm")
        args = (x2d, w, y2d, ws, sync, base, x2d.stride(0), y2d.stride(0), x2d.shape[1], n_tickets, float(eps))
        return launch_meeting(
            _reordered_kernel, grid, args, {**meta, "CVT_ASM": True, "num_warps": num_warps}, sync, n_tickets + grid[0]
        )


def ref(x, w, eps):
    xf = x.double()
    return xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps) * w.double()


def time_all(fns, reps, rounds=7):
    out = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            f()
            torch.cuda.synchronize()
            s, e = torch.cuda.Event(True), torch.cuda.Event(True)
            s.record()
            for _ in range(reps):
                f()
            e.record()
            torch.cuda.synchronize()
            out[k].append(s.elapsed_time(e) * 1e3 / reps)
    return {k: statistics.median(v) for k, v in out.items()}


def main() -> None:
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    eps = 1e-6
    rows_out = []
    shapes = [(512, 65536), (2048, 65536), (8192, 65536), (512, 131072), (2048, 131072), (4096, 131072)]
    for dtype in (torch.bfloat16, torch.float16):
        for m, n in shapes if dtype == torch.bfloat16 else shapes[1:2] + shapes[4:5]:
            x = torch.randn(m, n, device="cuda", dtype=dtype)
            w = torch.randn(n, device="cuda", dtype=dtype)
            r = ref(x, w, eps)
            y_copy = torch.empty_like(x)
            fns = {"copy": lambda: y_copy.copy_(x)}
            for chunk, warps, pps in ((8192, 8, 4), (4096, 4, 8)):
                for name, launch in (("shipped", cooperative.launch_pipelined), ("reordered", reordered)):
                    y = torch.empty_like(x)
                    k = launch(x, w, y, eps, chunk, pps * sm, warps)
                    for _ in range(3):  # correctness, several launches on the same counters
                        y.fill_(float("nan"))
                        launch(x, w, y, eps, chunk, pps * sm, warps)
                    err = ((y.double() - r).abs() / (r.abs() + 1)).max().item()
                    regs = getattr(k, "n_regs", None)
                    fns[f"{name} {chunk}/{warps}w/{pps}"] = lambda L=launch, y=y, c=chunk, p=pps, wa=warps: L(
                        x, w, y, eps, c, p * sm, wa
                    )
                    print(
                        f"{dtype} {m}x{n} {name} {chunk}/{warps}w/{pps}pps regs={regs} spills={getattr(k, 'n_spills', None)} max_rel_err={err:.2e}",
                        flush=True,
                    )
            reps = max(5, int(2e4 / (m * n * 2 / 3e6)))  # ~20 ms a round
            t = time_all(fns, min(reps, 200))
            for k, v in t.items():
                rows_out.append((str(dtype).split(".")[-1], f"{m}x{n}", k, v, t["copy"] / v))
    print("\n| dtype | shape | kernel | µs | % of copy |\n|---|---|---|---:|---:|")
    for d, s, k, v, f in rows_out:
        print(f"| {d} | {s} | {k} | {v:.1f} | {100 * f:.1f} |")


if __name__ == "__main__":
    main()
