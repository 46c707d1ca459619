"""Latency-bound rmsnorm shapes: every (rows, warps, cache hints, index width) of the tuned kernel
against torch.compile, interleaved rounds with the guarded GPU timer; prints Inductor's kernel too.

    TORCH_LOGS=output_code python benchmarks/rmsnorm_small_shapes.py --out DIR 2> inductor.log
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import torch
import triton

from bench_common import print_race, race_rows, rmsnorm_case, write_csv
from kprof.harness import BenchSettings, race
from kprof.kernels import discover
from kprof.kernels.rmsnorm.tuned import _rmsnorm_rows_kernel

SHAPES = [(64, 4096), (4096, 1024), (1, 4096), (256, 4096), (4096, 4096)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    settings = BenchSettings(warmup_ms=10, rep_ms=40)
    out = []
    for shape in SHAPES:
        x, w, eps, ref, y = rmsnorm_case(fam, shape, "bf16", 5)
        block_n = triton.next_power_of_2(shape[1])
        fns = {}
        for rows, warps, hints, i64 in itertools.product([1, 2, 4], [2, 4, 8, 16], [True, False], [True, False]):
            if warps * 32 > rows * block_n:
                continue
            grid = (triton.cdiv(shape[0], rows),)

            def call(grid=grid, rows=rows, warps=warps, hints=hints, i64=i64):
                _rmsnorm_rows_kernel[grid](x, w, y, x.stride(0), y.stride(0), shape[0], shape[1], eps,
                                           BLOCK_N=block_n, ROWS=rows, HINTS=hints, I64=i64, num_warps=warps)
            y.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            assert float((y.double() - ref).norm() / ref.norm()) < 8e-3
            fns[f"r{rows} w{warps} {'hints' if hints else 'plain'} {'i64' if i64 else 'i32'}"] = call
        for peer in ("torch_compile", "triton_tuned", "triton_one_row"):
            fns[f"[{peer}]"] = (lambda fn=fam.providers[peer].fn: fn(x, w, eps))
        times = race(fns, settings, args.rounds)
        print_race(str(shape), times)
        out += race_rows("x".join(map(str, shape)), times)
    write_csv(args.out / "rmsnorm_small_shapes.csv", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
