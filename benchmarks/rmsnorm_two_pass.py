"""One-block rows against the L2-resident two-pass design (Inductor's pattern; since 2026-11-22 the tuned
version's kernel for many 4096/8192-element rows) and torch.compile, on the large shapes, interleaved rounds
with the guarded GPU timer.

    python benchmarks/rmsnorm_two_pass.py --out DIR
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
from kprof.kernels.rmsnorm.tuned import rows_kernel, two_pass_kernel

SHAPES = [(32768, 8192), (16384, 4096), (4096, 4096), (8192, 5120)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    settings = BenchSettings(warmup_ms=10, rep_ms=60)
    out = []
    for shape in SHAPES:
        x, w, eps, ref, y = rmsnorm_case(fam, shape, "bf16", 11)
        m, n = shape
        fns = {}
        for chunk, rows, warps in itertools.product([512, 1024, 2048, 4096], [1, 2, 4], [4, 8, 16]):
            if chunk > triton.next_power_of_2(n) or rows * chunk * 2 > 16384 or warps * 32 * 8 > rows * chunk:
                continue
            grid = (triton.cdiv(m, rows),)

            def call(grid=grid, chunk=chunk, rows=rows, warps=warps):
                two_pass_kernel[grid](
                    x, w, y, x.stride(0), y.stride(0), m, n, eps, BLOCK_N=chunk, ROWS=rows, I64=False, num_warps=warps
                )

            fns[f"two_pass c{chunk} r{rows} w{warps}"] = call
        for rows, warps in [(1, 8), (1, 16), (2, 16)]:
            bn = triton.next_power_of_2(n)
            if rows * bn * 2 > 32768:
                continue

            def call1(rows=rows, warps=warps, bn=bn):
                rows_kernel[(triton.cdiv(m, rows),)](
                    x,
                    w,
                    y,
                    x.stride(0),
                    y.stride(0),
                    m,
                    n,
                    eps,
                    BLOCK_N=bn,
                    ROWS=rows,
                    HINTS=False,
                    I64=False,
                    num_warps=warps,
                )

            fns[f"one_block r{rows} w{warps}"] = call1
        for k, f in list(fns.items()):
            y.fill_(float("nan"))
            f()
            torch.cuda.synchronize()
            if not float((y.double() - ref).norm() / ref.norm()) < 8e-3:
                print("WRONG", k)
                del fns[k]
        for peer in ("torch_compile", "triton_tuned"):
            fns[f"[{peer}]"] = lambda fn=fam.providers[peer].fn: fn(x, w, eps)
        times = race(fns, settings, args.rounds)
        print_race(str(shape), times, always=("[", "one_block"))
        out += race_rows(f"{m}x{n}", times)
        del x, w, y, ref
        torch.cuda.empty_cache()
    write_csv(args.out / "rmsnorm_two_pass.csv", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
