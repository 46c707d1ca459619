"""Tuning sweep for rmsnorm's tuned version: every (rows per program, num_warps) for narrow rows and
(chunk, num_warps) for wide rows, on the shapes the issue names; all times in one process.

    python benchmarks/rmsnorm_tune.py --out DIR [--dtypes bf16,fp32]

Writes DIR/rmsnorm_tune.csv (every config) and prints the best config per shape next to what
``choose_config`` picks today and the copy ceiling measured in the same process.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import torch
import triton
import triton.testing
from bench_common import rmsnorm_case, write_csv

from kprof.device import measure_copy_ceiling
from kprof.kernels import discover
from kprof.kernels.rmsnorm.tuned import Config, choose_config, launch_with_config

SHAPES = [(1, 4096), (64, 4096), (4096, 1024), (4096, 4096), (16384, 4096), (32768, 8192), (8192, 5120), (256, 131072)]


def candidates(n: int, es: int) -> list[Config]:
    block_n = triton.next_power_of_2(n)
    out = []
    if block_n * es <= 64 * 1024:
        for rows, warps in itertools.product([1, 2, 4, 8, 16], [1, 2, 4, 8, 16, 32]):
            if rows * block_n * es <= 64 * 1024 and warps * 32 <= rows * block_n:
                out.append(Config("rows", block_n, rows, warps))
    for chunk, warps in itertools.product([1024, 2048, 4096, 8192, 16384], [4, 8, 16, 32]):
        if chunk < block_n and chunk * es <= 32 * 1024:
            out.append(Config("looped", chunk, 1, warps))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--rep", type=int, default=60)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    fam = discover()["rmsnorm"]
    ceiling = measure_copy_ceiling()
    print(f"copy ceiling {ceiling.gbps:.0f} GB/s", flush=True)
    rows_out = []
    for dtype in args.dtypes.split(","):
        for shape in SHAPES:
            x, w, eps, ref, y = rmsnorm_case(fam, shape, dtype, 1234)
            nbytes = fam.bytes_model(shape, dtype)
            current = choose_config(shape[-1], x.element_size())
            for cfg in candidates(shape[-1], x.element_size()):
                try:
                    y.fill_(float("nan"))
                    launch_with_config(cfg, x, w, y, eps)
                    torch.cuda.synchronize()
                    err = float((y.double() - ref).norm() / ref.norm())
                    if not math.isfinite(err) or err > fam.tolerances[dtype]:
                        raise RuntimeError(f"wrong result: rel err {err}")
                    ms = triton.testing.do_bench(
                        lambda: launch_with_config(cfg, x, w, y, eps), warmup=10, rep=args.rep, return_mode="median"
                    )
                    status = "ok"
                except Exception as exc:  # noqa: BLE001 - record the failing config, keep sweeping
                    ms, status = math.nan, f"{type(exc).__name__}: {str(exc)[:120]}"
                gbps = nbytes / (ms * 1e-3) / 1e9 if ms == ms else math.nan
                rows_out.append(
                    {
                        "dtype": dtype,
                        "shape": "x".join(map(str, shape)),
                        "kernel": cfg.kernel,
                        "block_n": cfg.block_n,
                        "rows": cfg.rows,
                        "num_warps": cfg.num_warps,
                        "time_us": ms * 1e3,
                        "gbps": gbps,
                        "pct_ceiling": 100 * gbps / ceiling.gbps,
                        "current_choice": cfg == current,
                        "status": status,
                    }
                )
            del x, w, y, ref
            torch.cuda.empty_cache()
            best = min(
                (
                    r
                    for r in rows_out
                    if r["shape"] == "x".join(map(str, shape)) and r["dtype"] == dtype and r["status"] == "ok"
                ),
                key=lambda r: r["time_us"],
            )
            cur = [r for r in rows_out if r["shape"] == best["shape"] and r["dtype"] == dtype and r["current_choice"]]
            cur_s = f"{cur[0]['time_us']:.1f}us" if cur else "n/a"
            print(
                f"{dtype} {best['shape']:>12}: best {best['kernel']} BLOCK={best['block_n']} rows={best['rows']} "
                f"warps={best['num_warps']} {best['time_us']:.1f}us {best['pct_ceiling']:.1f}% | current {cur_s}",
                flush=True,
            )
    write_csv(args.out / "rmsnorm_tune.csv", rows_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
