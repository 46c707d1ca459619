"""Design experiments for rmsnorm's tuned version, timed against F.rms_norm, torch.compile and Liger
in the same process (interleaved rounds, so drift hits every variant alike).

    python benchmarks/rmsnorm_variants.py --out DIR [--rounds 3]

Variants of the block-of-rows kernel:
  hints   - x loaded evict_first, weight evict_last (what tuned.py shipped first)
  plain   - no cache hints
  cs      - hints + streaming store (cache_modifier=".cs")
  persist - persistent grid (k programs per SM) looping over row blocks; the weight is loaded once per
            program instead of once per row block; tl.range pipelining depth STAGES
Writes DIR/rmsnorm_variants.csv and prints the best variant per shape next to the peers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import rmsnorm_case, write_csv

from kprof.harness import BenchSettings, race
from kprof.kernels import discover


@triton.jit
def _rows_variant(
    x_ptr,
    w_ptr,
    y_ptr,
    xs,
    ys,
    n_rows,
    N,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    HINTS: tl.constexpr,
    CS: tl.constexpr,
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    cm = cols < N
    mask = (rows < n_rows)[:, None] & cm[None, :]
    r64 = rows.to(tl.int64)[:, None]
    if HINTS:
        x = tl.load(x_ptr + r64 * xs + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(
            tl.float32
        )
        w = tl.load(w_ptr + cols, mask=cm, other=0.0, eviction_policy="evict_last").to(tl.float32)
    else:
        x = tl.load(x_ptr + r64 * xs + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cm, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
    y = (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty)
    if CS:
        tl.store(y_ptr + r64 * ys + cols[None, :], y, mask=mask, cache_modifier=".cs")
    else:
        tl.store(y_ptr + r64 * ys + cols[None, :], y, mask=mask)


@triton.jit
def _rows_persistent(
    x_ptr, w_ptr, y_ptr, xs, ys, n_rows, N, eps, BLOCK_N: tl.constexpr, ROWS: tl.constexpr, STAGES: tl.constexpr
):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    cm = cols < N
    w = tl.load(w_ptr + cols, mask=cm, other=0.0).to(tl.float32)
    n_blocks = tl.cdiv(n_rows, ROWS)
    for rb in tl.range(pid, n_blocks, nprog, num_stages=STAGES):
        rows = rb * ROWS + tl.arange(0, ROWS)
        mask = (rows < n_rows)[:, None] & cm[None, :]
        r64 = rows.to(tl.int64)[:, None]
        x = tl.load(x_ptr + r64 * xs + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(
            tl.float32
        )
        rstd = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
        tl.store(
            y_ptr + r64 * ys + cols[None, :], (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask
        )


SHAPES = [(4096, 4096), (16384, 4096), (32768, 8192), (4096, 1024), (64, 4096), (1, 4096), (8192, 5120)]


def variants(n_rows: int, n: int, sms: int):
    block_n = triton.next_power_of_2(n)
    out = []
    for rows, warps in [(1, 4), (1, 8), (2, 8), (2, 16), (4, 4), (4, 16)]:
        if rows * block_n * 2 > 64 * 1024:
            continue
        grid = (triton.cdiv(n_rows, rows),)
        for name, hints, cs in [("hints", True, False), ("plain", False, False), ("cs", True, True)]:
            out.append(
                (
                    f"{name} r{rows} w{warps}",
                    _rows_variant,
                    grid,
                    dict(BLOCK_N=block_n, ROWS=rows, HINTS=hints, CS=cs, num_warps=warps),
                )
            )
        if (rows, warps) in [(1, 8), (2, 16), (1, 4)]:
            for k in (2, 4, 8):
                for stages in (1, 2):
                    g = (min(triton.cdiv(n_rows, rows), sms * k),)
                    out.append(
                        (
                            f"persist k{k} s{stages} r{rows} w{warps}",
                            _rows_persistent,
                            g,
                            dict(BLOCK_N=block_n, ROWS=rows, STAGES=stages, num_warps=warps),
                        )
                    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep", type=int, default=50)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    fam = discover()["rmsnorm"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    settings = BenchSettings(warmup_ms=10, rep_ms=args.rep)
    results = []
    for shape in SHAPES:
        x, w, eps, ref, y = rmsnorm_case(fam, shape, "bf16", 99)
        nbytes = fam.bytes_model(shape, "bf16")
        fns = {}
        for name, kern, grid, meta in variants(*shape, sms):

            def call(kern=kern, grid=grid, meta=meta):
                kern[grid](x, w, y, x.stride(0), y.stride(0), shape[0], shape[1], eps, **meta)

            y.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            err = float((y.double() - ref).norm() / ref.norm())
            if not err < fam.tolerances["bf16"]:
                print(f"{shape} {name}: WRONG rel err {err}")
                continue
            fns[name] = call
        for peer in ("torch_F", "torch_compile", "liger", "triton_tuned", "triton_one_row"):
            p = fam.providers[peer]
            if p.unavailable_reason() is None:
                fns["[" + peer + "]"] = lambda fn=p.fn: fn(x, w, eps)
        times = race(fns, settings, args.rounds)
        for name in fns:
            t = statistics.median(times[name])
            results.append(
                {
                    "shape": "x".join(map(str, shape)),
                    "variant": name,
                    "time_us": t,
                    "gbps": nbytes / (t * 1e-6) / 1e9,
                    "rounds": " ".join(f"{v:.2f}" for v in times[name]),
                }
            )
        rows = sorted((r for r in results if r["shape"] == "x".join(map(str, shape))), key=lambda r: r["time_us"])
        print(f"== {shape}")
        for r in rows[:6] + [r for r in rows[6:] if r["variant"].startswith("[")]:
            print(f"  {r['variant']:<28} {r['time_us']:8.2f} us {r['gbps']:7.0f} GB/s  [{r['rounds']}]")
        del x, w, y, ref, fns
        torch.cuda.empty_cache()
    write_csv(args.out / "rmsnorm_variants.csv", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
