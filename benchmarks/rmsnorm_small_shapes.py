"""Latency-bound rmsnorm shapes: every (rows per program, warps, cache hints) of the tuned kernel, launched
through the same compiled launcher as ``triton_tuned`` (``launch_with_config``), against torch.compile,
F.rms_norm and Liger, in interleaved rounds with the guarded GPU timer; prints Inductor's kernel too.

    TORCH_LOGS=output_code python benchmarks/rmsnorm_small_shapes.py --out DIR [--shapes 64x4096,4096x1024]
        [--rounds 3] [--tag NAME] [--chunks] [--cold] 2> inductor.log

``--chunks`` adds the kernels that walk a row in chunks (``looped``, ``two_pass``: 512-2048 elements a step, 4-16
warps), for rows just past a power of two, where the whole-row block is nearly half masked (2056 columns: 4096);
``--op-tail`` races only the op's own config, with and without a tail block, against the providers (in
``--dtype``); ``--tail`` adds each row-block config as a power-of-two block and a second, smaller one for the rest of the row
(``tuned.head_and_tail``: 3072 columns as 2048 + 1024) where that covers fewer columns; ``--cold`` times every
candidate cold (kprof's L2 flush before each call, as the grids do) instead.

Before 2026-11-22 (second session) the variants went through ``kernel[grid](...)``; those launches read
0.4-0.7 us slower on the GPU than the same kernel through the compiled launcher in the same race
(``../results/rmsnorm-core-flow/rmsnorm_small_shapes.log``), so variants and provider were not comparable.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import triton
from bench_common import print_race, race_rounds, race_rows, rmsnorm_case, write_csv

from kprof.harness import BenchSettings, race
from kprof.kernels import discover
from kprof.kernels.rmsnorm.tuned import Config, config_for, head_and_tail, launch_with_config

SHAPES = "64x4096,4096x1024,1x4096,256x4096,4096x4096"


def checked_call(
    cfg: Config, x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, eps: float, ref: torch.Tensor, align: bool = True
) -> Callable[[], None]:
    """A call of ``cfg`` on the point's tensors, once run into a NaN-filled output and checked against ``ref``
    (``align``: as ``launch_with_config``'s)."""

    def call() -> None:
        launch_with_config(cfg, x, w, y, eps, align)

    y.fill_(float("nan"))
    call()
    torch.cuda.synchronize()
    assert float((y.double() - ref).norm() / ref.norm()) < 8e-3, cfg
    return call


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--tag", default="", help="suffix of the CSV name (one file per process)")
    ap.add_argument("--chunks", action="store_true", help="also the chunked kernels (looped, two_pass)")
    ap.add_argument("--cold", action="store_true", help="cold times (L2 flushed before each call)")
    ap.add_argument("--tail", action="store_true", help="also each row-block config as a head and a tail block")
    ap.add_argument("--op-tail", action="store_true", help="only the op's config, with and without a tail block")
    ap.add_argument("--dtype", default="bf16")
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    settings = BenchSettings(warmup_ms=10, rep_ms=40)
    out = []
    for spec in args.shapes.split(","):
        shape = tuple(int(v) for v in spec.split("x"))
        x, w, eps, ref, y = rmsnorm_case(fam, shape, args.dtype, 5)
        block_n = triton.next_power_of_2(shape[1])
        fns = {}
        head, tail = head_and_tail(shape[1])
        blocks = [(block_n, 0)] + ([(head, tail)] if args.tail and tail else [])
        grid = itertools.product([1, 2, 4], [1, 2, 4, 8, 16], [True, False], blocks)
        if args.op_tail:
            op = config_for(shape[1], x.element_size(), shape[0], x.device.index)
            grid = [(op.rows, op.num_warps, op.hints, b) for b in blocks + [(head, tail)] if op.kernel == "rows"]
        for rows, warps, hints, (block, rest) in grid:
            if warps * 32 > rows * (block + rest):
                continue
            cfg = Config("rows", block_n=block, rows=rows, num_warps=warps, hints=hints, tail=rest)
            name = f"r{rows} w{warps} {'hints' if hints else 'plain'}{f' tail {rest}' if rest else ''}"
            fns[name] = checked_call(cfg, x, w, y, eps, ref)
        chunked = itertools.product(["looped", "two_pass"], [512, 1024, 2048], [4, 8, 16]) if args.chunks else []
        for kernel, chunk, warps in chunked:
            if chunk >= block_n or warps * 32 > chunk:
                continue
            cfg = Config(kernel, block_n=chunk, rows=1, num_warps=warps)
            fns[f"{kernel} {chunk} w{warps}"] = checked_call(cfg, x, w, y, eps, ref)
        peers = (
            ("torch_compile", "triton_tuned")
            if args.op_tail
            else ("torch_compile", "triton_tuned", "triton_one_row", "torch_F", "liger")
        )
        for peer in peers:
            if peer in fam.providers and fam.providers[peer].unavailable_reason() is None:
                fns[f"[{peer}]"] = lambda fn=fam.providers[peer].fn: fn(x, w, eps)
        times = race_rounds(fns, args.rounds, 10.0, random.Random(0)) if args.cold else race(fns, settings, args.rounds)
        print_race(spec, times)
        out += race_rows(spec, times)
        write_csv(args.out / f"rmsnorm_small_shapes{args.tag}.csv", out)  # each shape's as it ends
    return 0


if __name__ == "__main__":
    sys.exit(main())
