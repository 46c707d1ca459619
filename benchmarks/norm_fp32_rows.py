"""rmsnorm's and add_rmsnorm's launch configurations for float32 rows of 8-64 KB (2048-16384 columns) on this GPU,
against torch.compile, a copy of the op's bytes and the dispatch (``triton_tuned``).

    python benchmarks/norm_fp32_rows.py --out DIR [--shapes 2048x4096,16384x4096,2048x8192,16384x8192] [--rounds 8]

The float32 grid parts on an H200 found rmsnorm 16384x4096 a loss to torch.compile (126.7 against 121.7 µs, its
16-bit-measured config of 2 rows x 16 warps) and add_rmsnorm's dispatch 1.03-1.05x its own one-row kernel at 8192
columns (``benchmarks/results/grid/h200-fp32-parts/``). Every candidate below is checked against the float64 oracle,
then raced cold (``decode_tiles.race``, one CUPTI session a point): rmsnorm's rows kernel over rows a program x warps x
cache hints, its two-pass kernel over chunk x rows x warps (the width compiled in); add_rmsnorm's rows, one-row and
chunked kernels. The Triton kernels torch.compile ran and the launch configuration its autotuner kept are printed
(``inductor:`` lines). Writes DIR/times.csv (every round) and DIR/summary.csv (each candidate's median per point).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from pathlib import Path

import torch
import triton
from bench_common import checked as bench_checked
from bench_common import copy_of_op, inductor_configs, write_csv

from kprof.kernels import discover
from kprof.kernels.add_rmsnorm import tuned as add_tuned
from kprof.kernels.rmsnorm import tuned as rms_tuned


def rmsnorm_candidates(n: int) -> list[rms_tuned.Config]:
    """The rows kernel (a whole row in registers) and the two-pass kernel (chunks, the width compiled in)."""
    out, block = [], triton.next_power_of_2(n)
    for rows, warps, hints in itertools.product((1, 2, 4), (4, 8, 16, 32), (False, True)):
        if rows * block * 4 <= 64 * 1024:
            out.append(rms_tuned.Config("rows", block, rows, warps, hints=hints))
    for chunk, rows, warps in itertools.product((2048, 4096, 8192, 16384), (1, 2), (8, 16, 32)):
        # chunks no wider than the row's block; two rows a program only in chunks narrower than the row and under
        # 8192; 32 warps only in chunks of 8192 or more (torch.compile's launch at 16384 columns: one chunk, 32 warps)
        if (
            chunk <= block
            and (chunk < n or rows == 1)
            and (warps < 32 or chunk >= 8192)
            and (chunk < 8192 or rows == 1)
        ):
            out.append(rms_tuned.Config("two_pass", chunk, rows, warps, cols_const=True))
    return out


def add_candidates(n: int) -> list[add_tuned.Config]:
    """add_rmsnorm's rows kernel, triton_one_row's kernel and the chunked kernel (h read back from L2)."""
    block = triton.next_power_of_2(n)
    out = [add_tuned.Config("one_row", block, 1, w) for w in (4, 8, 16, 32)]
    out += [
        add_tuned.Config("rows", block, r, w)
        for r, w in itertools.product((1, 2), (8, 16, 32))
        if r * block * 4 <= 32768
    ]
    for chunk, warps, const in itertools.product((2048, 4096, 8192), (4, 8, 16), (False, True)):
        if chunk <= block:
            out.append(add_tuned.Config("looped", chunk, 1, warps, cols_const=const))
    return out


def name(cfg) -> str:
    extra = " hints" if getattr(cfg, "hints", False) else ""
    extra += " const" if getattr(cfg, "cols_const", False) else ""
    return f"{cfg.kernel} {cfg.block_n} x {cfg.rows} rows x {cfg.num_warps}w{extra}"


def race_point(fam_name: str, spec: str, rounds: int) -> tuple[list, list]:
    from decode_tiles import race

    fam = discover()[fam_name]
    shape = tuple(int(v) for v in spec.split("x"))
    inp = fam.make_inputs(shape, "fp32", "cuda", sum(shape))
    ref = fam.oracle(**inp)
    tol = fam.tolerances["fp32"]
    x = inp["x"]
    if fam_name == "rmsnorm":
        out = torch.empty_like(x)

        def launch(cfg):
            rms_tuned.launch_with_config(cfg, x, inp["weight"], out, inp["eps"])
            return out

        configs, copy_bytes = rmsnorm_candidates(shape[1]), copy_of_op(inp, out)
    else:
        out = (torch.empty_like(x), torch.empty_like(x))  # y and h

        def launch(cfg):
            add_tuned.launch_with_config(cfg, x, inp["residual"], inp["weight"], *out, inp["eps"])
            return out

        configs, copy_bytes = add_candidates(shape[1]), copy_of_op(inp, *out)
    checked, notes = bench_checked({name(cfg): (lambda cfg=cfg: launch(cfg), ref) for cfg in configs}, out, tol)
    checked["[copy of the bytes]"] = copy_bytes
    for prov in ("triton_tuned", "torch_compile", "liger"):
        p = fam.providers.get(prov)
        if p is not None and p.unavailable_reason() is None:
            checked[f"[{prov}]"] = lambda p=p: p.fn(**inp)
    times = race(checked, rounds)
    med = {k: statistics.median(v) for k, v in times.items()}
    copy = med["[copy of the bytes]"]
    point = f"{fam_name}/{spec}/fp32"
    print(f"== {point}: copy of the bytes {copy:.2f} us", flush=True)
    for n, v in sorted(med.items(), key=lambda kv: kv[1])[:14]:
        print(f"  {n:<44} {v:9.2f} us  {copy / v * 100:6.1f}% of the copy", flush=True)
    for n, why in notes.items():
        print(f"  left out {n}: {why}", flush=True)
    rows = [{"point": point, "candidate": k, "round": i, "us": t} for k, v in times.items() for i, t in enumerate(v)]
    summary = [{"point": point, "candidate": k, "median_us": v, "pct_of_copy": 100 * copy / v} for k, v in med.items()]
    return rows, summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--families", default="rmsnorm,add_rmsnorm")
    ap.add_argument("--shapes", default="2048x4096,16384x4096,2048x8192,16384x8192")
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    times, summary = [], []
    for fam_name in args.families.split(","):
        for spec in args.shapes.split(","):
            t, s = race_point(fam_name, spec, args.rounds)
            times += t
            summary += s
            torch.cuda.empty_cache()
    print("\n".join(f"inductor: {line}" for line in inductor_configs()))
    write_csv(args.out / "times.csv", times)
    write_csv(args.out / "summary.csv", summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
