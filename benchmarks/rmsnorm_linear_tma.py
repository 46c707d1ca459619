"""Experiment: rmsnorm_linear's product through TMA tensor descriptors (Hopper), plain and persistent, with
the rows' statistics read from memory (NORM=2, after the rstd kernel) or summed from the x tiles the K loop
already loads (NORM=1, one kernel), against cuBLAS's ``x @ W`` and kprof's current versions.

    python benchmarks/rmsnorm_linear_tma.py --out DIR [--shapes 2048x4096x4096,8192x4096x4096] [--rounds 3]
        [--configs N]  (the first N tile configs; 0: kprof's providers, cuBLAS and torch.compile only)
        [--small]  (tiles for a few hundred rows) [--norms 2]  (only the rstd epilogue kernel)

Every variant is checked against a float64 reference first (a wrong one is reported and not timed); each
(variant, tile config) is timed on its own, interleaved with the peers (kprof.harness.race), bf16.
Writes DIR/rmsnorm_linear_tma.csv and prints each shape's race.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import checked, print_notes, print_race, race_rows, write_csv
from triton.tools.tensor_descriptor import TensorDescriptor

from kprof.harness import BenchSettings, race
from kprof.kernels import discover
from kprof.kernels.lib.tiles import dot_acc, grouped_tile
from kprof.kernels.rmsnorm_linear.fused import folded_weight, launch_product
from kprof.kernels.rmsnorm_linear.rstd_epilogue import row_rstd_kernel


@triton.jit
def _tma_product_kernel(
    x_desc,
    w_desc,
    y_desc,  # descriptors of x [M, K], W' [K, N] (g folded in), y [M, N]
    r_ptr,  # [M] fp32 rstd (NORM == 2)
    b_ptr,  # [N] bias (HAS_BIAS)
    M,
    N,
    K,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    NORM: tl.constexpr,  # 0 plain, 1 sum of squares from the loop's x tiles, 2 rstd from r_ptr
    HAS_BIAS: tl.constexpr,
    PROGRAMS: tl.constexpr,  # grid size: number of tiles (one each) or the SM count (persistent)
    FLATTEN: tl.constexpr,  # let the compiler pipeline across tiles (persistent)
    IEEE: tl.constexpr,  # the interpreter: its bf16 dot is wrong, so fp32 products there
):
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=FLATTEN):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        ss = tl.zeros([BLOCK_M], dtype=tl.float32)
        for ki in range(k_tiles):
            a = x_desc.load([off_m, ki * BLOCK_K])
            b = w_desc.load([ki * BLOCK_K, off_n])
            if NORM == 1:
                af = a.to(tl.float32)
                ss += tl.sum(af * af, axis=1)
            acc = dot_acc(a, b, acc, IEEE)
        rows = off_m + tl.arange(0, BLOCK_M)
        if NORM == 1:
            acc = acc * tl.rsqrt(ss / K + eps)[:, None]
        if NORM == 2:
            acc = acc * tl.load(r_ptr + rows, mask=rows < M, other=0.0)[:, None]
        if HAS_BIAS:
            cols = off_n + tl.arange(0, BLOCK_N)
            acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
        y_desc.store([off_m, off_n], acc.to(y_desc.dtype))


CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages
    (128, 256, 64, 8, 8, 3),
    (128, 256, 64, 8, 8, 4),
    (128, 128, 64, 8, 4, 4),
    (128, 128, 64, 8, 8, 4),
    (128, 128, 64, 8, 4, 5),
    (256, 128, 64, 8, 8, 3),
    (128, 256, 32, 8, 8, 5),
]
# --small: tiles for a few hundred rows, where 128x256 tiles leave SMs idle (512 rows: 4 row tiles)
SMALL_CONFIGS = [
    (128, 256, 64, 8, 8, 3),
    (128, 128, 64, 8, 4, 4),
    (64, 256, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4),
    (128, 64, 64, 8, 4, 4),
    (64, 256, 64, 8, 8, 3),
]


def tma_call(x, wf, b, y, rstd, eps, cfg, norm, persistent, sms):
    bm, bn, bk, gm, warps, stages = cfg
    m, k = x.shape
    n = wf.shape[1]
    xd = TensorDescriptor.from_tensor(x, [bm, bk])
    wd = TensorDescriptor.from_tensor(wf, [bk, bn])
    yd = TensorDescriptor.from_tensor(y, [bm, bn])
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    progs = min(sms, tiles) if persistent else tiles

    def call():
        if norm == 2:
            row_rstd_kernel[(triton.cdiv(m, 4),)](
                x,
                rstd,
                m,
                k,
                x.stride(0),
                x.stride(1),
                float(eps),
                ROWS=4,
                BLOCK_K=min(1024, triton.next_power_of_2(k)),
                PDL=False,
                num_warps=4,
            )
        _tma_product_kernel[(progs,)](
            xd,
            wd,
            yd,
            rstd,
            b if b is not None else rstd,
            m,
            n,
            k,
            float(eps),
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=gm,
            NORM=norm,
            HAS_BIAS=b is not None,
            PROGRAMS=progs,
            FLATTEN=persistent,
            IEEE=x.device.type == "cpu",
            num_warps=warps,
            num_stages=stages,
        )
        return y

    return call


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="2048x4096x4096,8192x4096x4096")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--configs", type=int, default=len(CONFIGS), help="first N tile configs (0: only kprof's providers)"
    )
    ap.add_argument("--small", action="store_true", help="the tiles for a few hundred rows instead")
    ap.add_argument("--norms", default="0,1,2", help="which NORM modes to race (2: the shipped rstd epilogue)")
    args = ap.parse_args()
    interp = os.environ.get("TRITON_INTERPRET") == "1"
    dev = "cpu" if interp else "cuda"
    fam = discover()["rmsnorm_linear"]
    sms = 4 if interp else torch.cuda.get_device_properties(0).multi_processor_count
    settings = BenchSettings(graph=False)
    rows = []
    table = SMALL_CONFIGS if args.small else CONFIGS
    configs = [(16, 32, 32, 2, 4, 2)] if interp else table[: args.configs]  # --configs 0: providers only
    norms = [int(v) for v in args.norms.split(",")]
    for spec in args.shapes.split(","):
        m, k, n = (int(v) for v in spec.split("x"))
        inputs = fam.make_inputs((m, k, n), "bf16", dev, seed=1)  # rows at scales e^-2..e^2, random g, b
        x, g, w, b = inputs["x"], inputs["g"], inputs["w"], inputs["b"]
        ref = fam.oracle(**inputs)
        wf = folded_weight(g, w)
        rstd = torch.empty(m, dtype=torch.float32, device=dev)
        y = torch.empty(m, n, dtype=torch.bfloat16, device=dev)
        plain_ref = x.double() @ wf.double() + b.double()  # NORM=0: the product without the norm
        candidates = {}
        for cfg in configs:
            for norm in norms:
                for persistent in (False, True):
                    name = f"tma n{norm}{' pers' if persistent else ''} {cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[4]} s{cfg[5]}"
                    candidates[name] = (
                        tma_call(x, wf, b, y, rstd, 1e-6, cfg, norm, persistent, sms),
                        plain_ref if norm == 0 else ref,
                    )
        fns, notes = checked(candidates, y)
        if interp:
            print(spec, {k: "ok" for k in fns}, notes)
            continue
        ops = fam.providers
        fns["[cublas x@W]"] = lambda: x @ w
        for p in ("triton_rstd_epilogue", "triton_two_kernels", "triton_norm_cublas", "triton_fused", "torch_compile"):
            fns[f"[{p}]"] = lambda p=p: ops[p].fn(x, g, w, b)
        fns["[pointer product only]"] = lambda: launch_product(x, wf, b, y, 1e-6, norm=0)
        fns["[triton_rstd_epilogue, no bias]"] = lambda: ops["triton_rstd_epilogue"].fn(x, g, w, None)
        times = race(fns, settings, rounds=args.rounds)
        print_race(spec, times, top=12)
        print_notes(notes)
        rows += race_rows(spec, times)
    if rows:
        write_csv(args.out / "rmsnorm_linear_tma.csv", rows)


if __name__ == "__main__":
    main()
