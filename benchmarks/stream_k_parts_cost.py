"""Experiment: where the ~17 us that rmsnorm_linear's stream-K last wave costs go, and a cheaper meeting for tiles of
two parts. A copy of the persistent TMA product (its whole waves by ``rstd_epilogue._scaled_tile``, as shipped) with
the last wave shared out along K by one of:

- ``shipped``: ``rstd_epilogue._stream_k_tail`` itself (every part stored, the last program adds them in slot order);
- ``no-meeting``: each program scales and stores its own part as if it were the tile (WRONG by design: the schedule's
  compute and pipeline fills with nothing of the meeting);
- ``no-reads``: parts stored and tickets taken as shipped, but the last program stores its own part without reading
  the others (WRONG by design: the meeting less its reads);
- ``two-parts``: where a tile has two parts, the ticket first: the first program stores its part and raises the tile's
  flag, the second waits for the flag and adds that part to its own registers, in column halves (its own part never
  goes through memory; a + b is the same bits whichever program is last); tiles of more parts as shipped;
- ``tma-stores``: as shipped, but each part stored through a TMA descriptor of the workspace, in column quarters
  (32 KB of fp32 staged in shared memory at a time), where shipped stores it from registers with pointers.

    python benchmarks/stream_k_parts_cost.py --out DIR [--points fp16:2048x2048x5504,...] [--rounds 5]

Against the shipped product with whole tiles (``[whole]``) and cuBLAS's ``x @ W`` (``[x@W]``). The correct variants
are checked against the float64 product first; the two wrong by design are only run once before timing. Cold
(kprof's flush, CUDA events), rounds interleaved in a random order."""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import checked_against, cold_rounds, print_notes, print_race, write_csv

from kprof.kernels.lib import launching, split_k, tiles
from kprof.kernels.lib.tiles import grouped_tile
from kprof.kernels.rmsnorm_linear import rstd_epilogue as re

POINTS = ",".join(
    f"{dt}:{s}" for dt in ("fp16", "bf16") for s in ("2048x2048x5504", "2048x4096x5504", "2048x8192x5504")
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
MODES = {"shipped": 0, "no-meeting": 1, "no-reads": 2, "two-parts": 3, "tma-stores": 4}
WRONG_BY_DESIGN = ("no-meeting", "no-reads")


@triton.jit
def _add_other_and_store(acc, other_ws, y_desc, r_ptr, off_m, off_n, M, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """``acc`` plus the other part (BLOCK_M x BLOCK_N fp32 at ``other_ws``), in column halves, scaled and stored."""
    HALF: tl.constexpr = BLOCK_N // 2
    left, right = tl.split(tl.permute(tl.reshape(acc, [BLOCK_M, 2, HALF]), (0, 2, 1)))
    local = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, HALF)[None, :]
    left += tl.load(other_ws + local, cache_modifier=".cg")
    right += tl.load(other_ws + HALF + local, cache_modifier=".cg")
    rows = off_m + tl.arange(0, BLOCK_M)
    scale = tl.load(r_ptr + rows, mask=rows < M, other=0.0)[:, None]
    y_desc.store([off_m, off_n], (left * scale).to(y_desc.dtype))
    y_desc.store([off_m, off_n + HALF], (right * scale).to(y_desc.dtype))


@triton.jit
def _store_quarters(ws_desc, acc, row, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """``acc`` (BLOCK_M x BLOCK_N fp32) into the workspace through its descriptor (blocks of BLOCK_N / 4 columns)."""
    Q: tl.constexpr = BLOCK_N // 4
    left, right = tl.split(tl.permute(tl.reshape(acc, [BLOCK_M, 2, 2 * Q]), (0, 2, 1)))
    a, b = tl.split(tl.permute(tl.reshape(left, [BLOCK_M, 2, Q]), (0, 2, 1)))
    c, d = tl.split(tl.permute(tl.reshape(right, [BLOCK_M, 2, Q]), (0, 2, 1)))
    ws_desc.store([row, 0], a)
    ws_desc.store([row, Q], b)
    ws_desc.store([row, 2 * Q], c)
    ws_desc.store([row, 3 * Q], d)


@triton.jit
def _variant_tail(
    x_desc, w_desc, y_desc, r_ptr, ws_ptr, ws_desc, count_ptr, flag_ptr, whole, tiles, M, N, K, PARTS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PROGRAMS: tl.constexpr, MODE: tl.constexpr,
):  # fmt: skip
    steps = tl.cdiv(K, BLOCK_K)
    total = (tiles - whole) * steps
    pid = tl.program_id(0)
    at = pid * total // PROGRAMS
    end = (pid + 1) * total // PROGRAMS
    while at < end:
        t, k_hi, off_m, off_n, first, last, acc = re._stream_k_piece(
            x_desc, w_desc, at, end, steps, total, whole, M, N, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, PROGRAMS, False
        )
        tile_ws = ws_ptr + (t * PARTS).to(tl.int64) * (BLOCK_M * BLOCK_N)
        local = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        if MODE == 1 or first == last:
            re._scale_and_store(acc, y_desc, r_ptr, r_ptr, off_m, off_n, M, N, BLOCK_M, BLOCK_N, False, True, False)
        elif MODE == 3 and last - first == 1:  # two parts: the ticket first, the second adds the first's part
            if tl.atomic_add(count_ptr + t, 1, sem="acq_rel") == 0:
                tl.store(tile_ws + local, acc)
                tl.debug_barrier()
                tl.atomic_xchg(flag_ptr + t, 1, sem="release")
            else:
                seen = tl.atomic_add(flag_ptr + t, 0, sem="acquire")
                while seen == 0:
                    seen = tl.atomic_add(flag_ptr + t, 0, sem="acquire")
                _add_other_and_store(acc, tile_ws, y_desc, r_ptr, off_m, off_n, M, BLOCK_M, BLOCK_N)
                tl.store(flag_ptr + t, 0)
                split_k.release(count_ptr, t)
        else:  # the shipped meeting (MODE 3 where a tile has three parts or more), its parts stored by TMA (4), or
            # without its reads (2)
            if MODE == 4:
                _store_quarters(ws_desc, acc, (t * PARTS + pid - first) * BLOCK_M, BLOCK_M, BLOCK_N)
            else:
                tl.store(tile_ws + (pid - first) * (BLOCK_M * BLOCK_N) + local, acc)
            if split_k.take_ticket(count_ptr, t) == last - first:
                if MODE == 2:
                    re._scale_and_store(
                        acc, y_desc, r_ptr, r_ptr, off_m, off_n, M, N, BLOCK_M, BLOCK_N, False, True, False
                    )
                else:
                    re._sum_parts_and_store(
                        tile_ws, last - first + 1, y_desc, r_ptr, r_ptr, off_m, off_n, M, N, BLOCK_M, BLOCK_N,
                        False, True, False,
                    )  # fmt: skip
                split_k.release(count_ptr, t)
        at = t * steps + k_hi


@triton.jit
def _variant_kernel(
    x_desc, w_desc, y_desc, r_ptr, ws_ptr, ws_desc, count_ptr, flag_ptr, M, N, K, PARTS,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    PROGRAMS: tl.constexpr, MODE: tl.constexpr,
):  # fmt: skip
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    whole = (tiles // PROGRAMS) * PROGRAMS
    for tile in tl.range(tl.program_id(0), whole, PROGRAMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        re._scaled_tile(
            x_desc, w_desc, y_desc, r_ptr, r_ptr, pid_m * BLOCK_M, pid_n * BLOCK_N, M, N, K,
            BLOCK_M, BLOCK_N, BLOCK_K, False, True, False, False,
        )  # fmt: skip
    if MODE == 0:
        re._stream_k_tail(
            x_desc, w_desc, y_desc, r_ptr, r_ptr, ws_ptr, count_ptr, whole, tiles, M, N, K, PARTS,
            BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, PROGRAMS, False, True, False, False,
        )  # fmt: skip
    else:
        _variant_tail(
            x_desc, w_desc, y_desc, r_ptr, ws_ptr, ws_desc, count_ptr, flag_ptr, whole, tiles, M, N, K, PARTS,
            BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, PROGRAMS, MODE,
        )  # fmt: skip


def variant(x: torch.Tensor, wf: torch.Tensor, y: torch.Tensor, rstd: torch.Tensor, mode: int):
    """One call of the copy with the last wave shared out as ``mode`` says (the shipped tiles, no bias)."""
    (m, k), n = x.shape, wf.shape[1]
    plan = re.tma_plan(m, k, n, tiles.persistent_sms(x), stream_k=False)
    (bm, bn, bk), programs = plan.tiles, plan.programs
    count = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    parts = tiles.stream_k_parts(count, programs, triton.cdiv(k, bk), re.STREAM_K_MIN_STEPS)
    if not parts or not plan.subtile:
        raise ValueError(f"{m}x{k}x{n}: no last wave to share (parts {parts}, halves {plan.subtile})")
    x_desc, w_desc, y_desc = tiles.tile_descriptors(x, wf, y, plan.tiles, plan.subtile, 0)[:3]
    last = count % programs

    def run() -> torch.Tensor:
        ws = x.new_empty((last * parts * bm * bn,), dtype=torch.float32)
        ws_desc = launching.TensorDescriptor.from_tensor(ws.view(last * parts * bm, bn), [bm, bn // 4])
        counters = launching.ticket_counters(x, 2 * last)
        _variant_kernel[(programs,)](
            x_desc, w_desc, y_desc, rstd, ws, ws_desc, counters, counters[last:], m, n, k, parts,
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=plan.group_m, PROGRAMS=programs, MODE=mode,
            num_warps=plan.warps, num_stages=plan.stages,
        )  # fmt: skip
        return y

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--points", default=POINTS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args()
    rng = random.Random(0)
    torch.manual_seed(0)
    rows, table = [], []
    for point in args.points.split(","):
        dt, shape = point.split(":")
        m, k, n = (int(v) for v in shape.split("x"))
        x = torch.randn(m, k, device="cuda", dtype=DTYPES[dt])
        wf = torch.randn(k, n, device="cuda", dtype=DTYPES[dt]) / k**0.5
        rstd = torch.rsqrt(x.float().pow(2).mean(dim=1) + 1e-6)
        y = torch.empty(m, n, device="cuda", dtype=DTYPES[dt])
        ref = (x.double() @ wf.double()) * rstd.double()[:, None]
        every = {name: variant(x, wf, y, rstd, mode) for name, mode in MODES.items()}
        every["[whole]"] = lambda: re.tma_product(x, wf, None, y, rstd, stream_k=False) or y
        fns, notes = checked_against({k_: f for k_, f in every.items() if k_ not in WRONG_BY_DESIGN}, ref)
        for name in WRONG_BY_DESIGN:
            every[name]()
            fns[name] = every[name]
        cublas, why = checked_against({"[x@W]": lambda: x @ wf}, x.double() @ wf.double())
        fns.update(cublas)
        notes.update(why)
        times = cold_rounds(fns, args.rounds, rng, args.calls)
        counters = launching.ticket_counters(x, 1024)
        print_race(f"{dt} {shape}", times, top=8)
        print_notes(notes)
        print(f"  counters back at zero: {bool((counters == 0).all())}", flush=True)
        med = {name: statistics.median(v) for name, v in times.items()}
        rows += [
            {"dtype": dt, "shape": shape, "candidate": name, "median_us": med[name],
             "rounds": " ".join(f"{u:.2f}" for u in v)}
            for name, v in times.items()
        ]  # fmt: skip
        table.append((dt, shape, med))
    write_csv(args.out / "stream_k_parts_cost.csv", rows)
    names = ("[whole]", "shipped", "no-meeting", "no-reads", "two-parts", "tma-stores", "[x@W]")
    print("\n| dtype | point | " + " | ".join(names) + " |\n|---|---|" + "---:|" * len(names))
    for dt, shape, med in table:
        print(f"| {dt} | {shape} | " + " | ".join(f"{med.get(n, float('nan')):.2f}" for n in names) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
