"""Does kprof's cold time leave part of a call's writes outside the call?

kprof's ``cold`` mode times a call right after a read-only flush, so L2 holds only clean lines when the call starts.
The call's own stores land in L2 as dirty lines and reach DRAM when something evicts them: for an output smaller
than L2 (50 MB on an H100 or H200) much of that may happen after the call has ended, in the next flush, outside the
timed interval. A model's next kernel would pay it. This script measures how much, per call, in one CUPTI session a
case, each repetition queued behind a GPU spin so that its kernels run back to back:

* ``cold``: spin, flush, call, flush (``drain``), flush (``clean``). The drain flush writes back what the call left
  dirty; the clean flush runs after a flush and writes back nothing. ``drain - clean`` is the write-back the call
  left behind, in µs of the device's own time.
* ``dirty``: spin, a 256 MB ``zero_()`` (what ``triton.testing.do_bench`` does to clear L2), call, flush: the call
  starts with L2 full of another buffer's dirty lines and pays for writing them back.
* ``warm``: spin, flush, then the call back to back (the first three dropped).

Controls: a read-only call (``x.sum()``, nothing to write back) and a write-only one (``y.fill_()``). The calls:
``kprof.kernels.ops.rms_norm`` and ``fused_add_rms_norm`` (the ops API's Triton path, kprof's dispatch) and a
``copy_`` of the same bytes as each (the copy yardstick's kind of call), bf16, rows of 8192 columns from 4 MiB to
256 MiB a tensor, and rows of 65536.

    python benchmarks/write_back.py --out DIR [--reps 40] [--shapes 512x8192,...] [--set hints|consumers]
    ncu --cache-control all --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \\
        python benchmarks/write_back.py --ncu-once --shapes 2048x8192     # each call once, for ncu's DRAM bytes

Prints a table per call and writes ``write_back.csv`` (every repetition) and ``summary.csv`` (medians).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from bench_common import write_csv

from kprof.timing import FLUSH_KERNEL_NAME, busy_ns, collect_device_records, flush

SHAPES = "256x8192,512x8192,1024x8192,2048x8192,4096x8192,8192x8192,16384x8192,512x65536,2048x65536"
SPIN_CYCLES = 400_000  # ~0.2 ms at 2 GHz: covers a repetition's launches, so its kernels queue back to back
WARM_CALLS, WARM_SKIP = 23, 3


def calls(rows: int, cols: int) -> dict[str, Callable[[], object]]:
    """The timed calls at one shape, each over fresh random bf16 data (never zeros), the ops checked first."""
    from kprof.kernels import ops

    ops.use_triton(True)  # the ops API's Triton path is opt-in (KPROF_USE_TRITON=1)
    x, r = (torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    w = torch.rand(cols, device="cuda", dtype=torch.bfloat16) + 0.5
    x2 = torch.randn(2 * rows, cols, device="cuda", dtype=torch.bfloat16)  # add_rmsnorm's bytes: two tensors each way
    y, y2 = torch.empty_like(x), torch.empty_like(x2)
    ref = torch.nn.functional.rms_norm(x.float(), (cols,), w.float(), 1e-6)
    h = x.float() + r.float()
    ref_add = torch.nn.functional.rms_norm(h, (cols,), w.float(), 1e-6)
    got_add = ops.fused_add_rms_norm(x, r, w, 1e-6)[0].float()
    for name, got, want in (
        ("rms_norm", ops.rms_norm(x, w, 1e-6).float(), ref),
        ("fused_add_rms_norm", got_add, ref_add),
    ):
        err = float((got - want).norm() / want.norm())
        if not err < 2e-2:
            sys.exit(f"{name} at {rows}x{cols}: relative error {err:.3g}; not timed")
    return {
        "rms_norm": lambda: ops.rms_norm(x, w, 1e-6),
        "copy (rms_norm's bytes)": lambda: y.copy_(x),
        "fused_add_rms_norm": lambda: ops.fused_add_rms_norm(x, r, w, 1e-6),
        "copy (add's bytes)": lambda: y2.copy_(x2),
        "read (x.sum)": lambda: x.sum(dtype=torch.float32),
        "write (y.fill_)": lambda: y.fill_(1.5),
    }


def hint_calls(rows: int, cols: int) -> dict[str, Callable[[], object]]:
    """``--set hints``: rmsnorm's dispatch config at this shape as chosen (this GPU's table) and its twin with the
    cache hint flipped (x loaded ``evict_first`` or not), each launched through ``tuned.launch_with_config`` and
    checked first, beside a copy of the same bytes. Does a hint that wins the cold time do it by leaving more of
    the output dirty in L2?"""
    import dataclasses

    from kprof.kernels.rmsnorm import tuned

    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(cols, device="cuda", dtype=torch.bfloat16) + 0.5
    y, y_copy = torch.empty_like(x), torch.empty_like(x)
    ref = torch.nn.functional.rms_norm(x.float(), (cols,), w.float(), 1e-6)
    cfg = tuned.config_for(cols, x.element_size(), rows, x.device.index)
    out: dict[str, Callable[[], object]] = {"copy (rms_norm's bytes)": lambda: y_copy.copy_(x)}
    for hints in (cfg.hints, not cfg.hints):
        c = dataclasses.replace(cfg, hints=hints)
        y.fill_(float("nan"))
        tuned.launch_with_config(c, x, w, y, 1e-6)
        err = float((y.float() - ref).norm() / ref.norm())
        if not err < 2e-2:
            sys.exit(f"{c} at {rows}x{cols}: relative error {err:.3g}; not timed")
        label = f"rms_norm {c.kernel} r{c.rows} w{c.num_warps} {'hints' if hints else 'no hints'}"
        out[label + (" (dispatch)" if hints == cfg.hints else "")] = lambda c=c: (
            tuned.launch_with_config(c, x, w, y, 1e-6),
            y,
        )[1]
    return out


# ``--set consumers``: what runs after rmsnorm. A product reading its output (a projection of N columns), a
# memory-bound kernel reading it, and one reading other data of the same size
CONSUMER_COLUMNS = 1024


def consumer_calls(rows: int, cols: int) -> dict[str, Callable[[], object]]:
    """``--set consumers``: rmsnorm's dispatch config and its twin with x's hint flipped (as ``--set hints``), each
    alone and each followed by a kernel that pays or profits from what it left in L2: ``y @ W`` (W [cols, 1024],
    cuBLAS), ``y.sum()`` (reads the output), and a copy of another buffer of y's size (reads and writes other data).
    Each pair is one call: its cold time is the busy time of both kernels."""
    out = {}
    w = torch.randn(cols, CONSUMER_COLUMNS, device="cuda", dtype=torch.bfloat16) / cols**0.5
    other, other_out = (torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    for label, norm in hint_calls(rows, cols).items():
        if label.startswith("copy"):
            continue
        y = norm()
        out[label] = norm
        out[label + " -> y @ W"] = lambda norm=norm, y=y: (norm(), y @ w)
        out[label + " -> y.sum"] = lambda norm=norm, y=y: (norm(), y.sum(dtype=torch.float32))
        out[label + " -> other copy"] = lambda norm=norm: (norm(), other_out.copy_(other))
    return out


def session(fn: Callable[[], object], reps: int) -> list:
    """The records of one CUPTI session: ``reps`` x (cold block, dirty block), then the warm block."""
    fl, zero = flush(), torch.empty(256 * 10**6 // 4, dtype=torch.int32, device="cuda")

    def run() -> None:
        for _ in range(reps):
            torch.cuda._sleep(SPIN_CYCLES)
            fl()
            fn()
            fl()
            fl()
            torch.cuda._sleep(SPIN_CYCLES)
            zero.zero_()
            fn()
            fl()
        torch.cuda._sleep(SPIN_CYCLES)
        fl()
        for _ in range(WARM_CALLS):
            fn()
        torch.cuda._sleep(SPIN_CYCLES)  # ends the warm block

    fn()
    torch.cuda.synchronize()
    return collect_device_records(run)


def parse(records: list, reps: int) -> tuple[list[dict], list[float]]:
    """Per repetition: cold, drain, clean, dirty (µs) and the SM clock of the spin before it (MHz); the warm calls."""
    spin = records[0].name
    blocks, cur = [], None
    for r in records:
        if r.name == spin:
            cur = []
            blocks.append((r, cur))
        elif cur is not None:
            cur.append(r)
    if len(blocks) != 2 * reps + 2:
        raise RuntimeError(f"expected {2 * reps + 2} spins, found {len(blocks)}: a kernel name collides with the spin")
    out = []
    for i in range(reps):
        (s_cold, cold), (_, dirty) = blocks[2 * i], blocks[2 * i + 1]
        flushes = [j for j, r in enumerate(cold) if FLUSH_KERNEL_NAME in r.name]
        if len(flushes) != 3 or flushes[1:] != [len(cold) - 2, len(cold) - 1]:
            raise RuntimeError(f"repetition {i}: the cold block is not flush, call, flush, flush")
        call = cold[1:-2]
        out.append(
            {
                "rep": i,
                "clock_mhz": SPIN_CYCLES / s_cold.duration_ns * 1e3,
                "cold_us": busy_ns(call) / 1e3,
                "drain_us": cold[-2].duration_ns / 1e3,
                "clean_us": cold[-1].duration_ns / 1e3,
                "dirty_us": busy_ns(dirty[1:-1]) / 1e3,
                "zero_us": dirty[0].duration_ns / 1e3,
                "kernels": len(call),
            }
        )
    warm = blocks[-2][1][1:]
    k = out[0]["kernels"]
    per_call = [busy_ns(warm[j : j + k]) / 1e3 for j in range(0, len(warm) - k + 1, k)]
    return out, per_call[WARM_SKIP:]


def med(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--ncu-once", action="store_true", help="each call once after a flush, for ncu; no timing")
    ap.add_argument(
        "--set",
        choices=("ops", "hints", "consumers"),
        default="ops",
        help="hints: rmsnorm's config with x's hint flipped; consumers: the same, each followed by a kernel",
    )
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    if args.ncu_once:
        for rows, cols in shapes:
            for fn in calls(rows, cols).values():
                flush()()
                fn()
        torch.cuda.synchronize()
        return
    raw, summary = [], []
    make = {"ops": calls, "hints": hint_calls, "consumers": consumer_calls}[args.set]
    fns = {shape: make(*shape) for shape in shapes}
    cases = [(shape, name) for shape in shapes for name in fns[shape]]
    random.Random(7).shuffle(cases)  # no case always runs after the same one
    for (rows, cols), name in cases:
        reps, warm = parse(session(fns[(rows, cols)][name], args.reps), args.reps)
        mib = rows * cols * 2 / 2**20
        for r in reps:
            raw.append({"shape": f"{rows}x{cols}", "call": name, "mib_a_tensor": mib, **r})
        left = [r["drain_us"] - r["clean_us"] for r in reps]
        summary.append(
            {
                "shape": f"{rows}x{cols}",
                "call": name,
                "mib_a_tensor": mib,
                "cold_us": med(reps, "cold_us"),
                "left_behind_us": statistics.median(left),
                "left_behind_iqr_us": _iqr(left),
                "cold_plus_left_us": statistics.median(r["cold_us"] + r["drain_us"] - r["clean_us"] for r in reps),
                "dirty_us": med(reps, "dirty_us"),
                "warm_us": statistics.median(warm),
                "clean_flush_us": med(reps, "clean_us"),
                "clock_mhz": med(reps, "clock_mhz"),
            }
        )
    summary.sort(key=lambda s: (s["call"], s["mib_a_tensor"], s["shape"]))
    if args.out:
        write_csv(args.out / "write_back.csv", raw)
        write_csv(args.out / "summary.csv", summary)
    print(f"{torch.cuda.get_device_name()}; medians of {args.reps} repetitions; µs")
    print(f"{'call':56} {'shape':>11} {'MiB':>5} {'cold':>8} {'left':>7} {'iqr':>5} {'cold+left':>9} {'dirty':>8} "
          f"{'warm':>8} {'MHz':>5}")  # fmt: skip
    for s in summary:
        print(
            f"{s['call']:56} {s['shape']:>11} {s['mib_a_tensor']:5.0f} {s['cold_us']:8.2f} {s['left_behind_us']:7.2f} "
            f"{s['left_behind_iqr_us']:5.2f} {s['cold_plus_left_us']:9.2f} {s['dirty_us']:8.2f} {s['warm_us']:8.2f} "
            f"{s['clock_mhz']:5.0f}"
        )


def _iqr(values: list[float]) -> float:
    q = statistics.quantiles(values, n=4)
    return q[2] - q[0]


if __name__ == "__main__":
    main()
