"""Experiment: swiglu's two-accumulator product with TMA tensor descriptors (Hopper), one tile per program
or persistent (one program per SM walking the tiles), and with the two weights interleaved column by column
so that one product of twice the width gives gate and up (split in the epilogue), against cuBLAS's ``x @ [Wg Wu]``, swiglu's
``triton_tuned`` and torch.compile.

    python benchmarks/swiglu_tma.py --out DIR [--shapes 2048x2048x5504,8192x4096x11008] [--rounds 3]
    python benchmarks/swiglu_tma.py --out DIR --decode --shapes 16x2048x5504,16x2056x5512 --only-two-accumulators

``--decode`` races 16-row tiles (one tile per program) instead, in kprof's ``cold`` mode: whether TMA loads escape what ragged-8 weights
cost the pointer kernels at decode sizes (a W row of 5512 bf16 starts 16 bytes into a 128-byte line, so each
row of a pointer tile spans one line more; benchmarks/results/alignment-promises/).

Checked against the float64 oracle first (a wrong variant is reported, not timed), then timed in
interleaved rounds (kprof.harness.race), bf16. Writes DIR/swiglu_tma.csv.
"""

from __future__ import annotations

import argparse
import os
import random
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import checked, print_notes, print_race, race_rounds, race_rows, write_csv
from triton.tools.tensor_descriptor import TensorDescriptor

from kprof.harness import BenchSettings, race
from kprof.kernels import discover
from kprof.kernels.lib.tiles import dot_acc, grouped_tile
from kprof.kernels.swiglu.tuned import (  # shipped since 5a30176
    _swiglu_interleaved_kernel,
    interleaved_weights,
    launch_interleaved,
)


@triton.jit
def _swiglu_tma_kernel(
    x_desc,
    wg_desc,
    wu_desc,
    y_desc,  # x [M, K], Wg and Wu [K, N], y [M, N]
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    PROGRAMS: tl.constexpr,
    FLATTEN: tl.constexpr,
    IEEE: tl.constexpr,
):
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tiles, PROGRAMS, flatten=FLATTEN):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for ks in range(tl.cdiv(K, BLOCK_K)):
            a = x_desc.load([off_m, ks * BLOCK_K])
            bg = wg_desc.load([ks * BLOCK_K, off_n])
            bu = wu_desc.load([ks * BLOCK_K, off_n])
            acc_g = dot_acc(a, bg, acc_g, IEEE)
            acc_u = dot_acc(a, bu, acc_u, IEEE)
        y_desc.store([off_m, off_n], (acc_g * tl.sigmoid(acc_g) * acc_u).to(y_desc.dtype))


INTERLEAVED_CONFIGS = [  # BLOCK_M, BLOCK_N (output columns; the weight tile is twice as wide), BLOCK_K, GROUP_M, warps, stages
    (128, 128, 64, 8, 8, 3),
    (128, 64, 64, 8, 8, 4),
    (128, 64, 64, 8, 4, 4),
    (128, 128, 32, 8, 8, 4),
    (64, 128, 64, 8, 4, 4),
    (128, 64, 64, 8, 8, 5),
]


def interleaved_call(x, w_int, y, cfg):
    bm, bn, bk, gm, warps, stages = cfg
    m, k = x.shape
    n = y.shape[1]
    descs = (
        TensorDescriptor.from_tensor(x, [bm, bk]),
        TensorDescriptor.from_tensor(w_int, [bk, 2 * bn]),
        TensorDescriptor.from_tensor(y, [bm, bn]),
    )

    def call():
        _swiglu_interleaved_kernel[(triton.cdiv(m, bm) * triton.cdiv(n, bn),)](
            *descs,
            *descs,
            m,
            n,
            k,
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=gm,
            PROGRAMS=0,
            SUBTILE=False,
            TAIL_SPLIT=0,
            LOWER_M=0,
            IEEE=x.device.type == "cpu",
            num_warps=warps,
            num_stages=stages,
        )
        return y

    return call


CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages
    (128, 128, 64, 8, 8, 3),
    (128, 128, 64, 8, 8, 4),
    (128, 128, 32, 8, 8, 5),
    (128, 64, 64, 8, 4, 4),
    (128, 64, 64, 8, 8, 4),
    (128, 128, 64, 8, 4, 3),
    (256, 64, 64, 8, 8, 3),
    (64, 128, 64, 8, 4, 4),
]


DECODE_CONFIGS = [  # 16-row tiles for a handful of rows; 32-wide tiles give 172 programs at 5504 columns
    (16, 32, 128, 1, 4, 4),
    (16, 32, 256, 1, 4, 3),
    (16, 64, 128, 1, 4, 4),
    (16, 64, 256, 1, 4, 3),
    (16, 128, 128, 1, 4, 4),
]


def tma_call(x, wg, wu, y, cfg, persistent, sms):
    bm, bn, bk, gm, warps, stages = cfg
    m, k = x.shape
    n = wg.shape[1]
    descs = (
        TensorDescriptor.from_tensor(x, [bm, bk]),
        TensorDescriptor.from_tensor(wg, [bk, bn]),
        TensorDescriptor.from_tensor(wu, [bk, bn]),
        TensorDescriptor.from_tensor(y, [bm, bn]),
    )
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    progs = min(sms, tiles) if persistent else tiles

    def call():
        _swiglu_tma_kernel[(progs,)](
            *descs,
            m,
            n,
            k,
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=gm,
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
    ap.add_argument("--shapes", default="2048x2048x5504,8192x4096x11008")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only-interleaved", action="store_true", help="skip the two-accumulator variants")
    ap.add_argument("--only-two-accumulators", action="store_true", help="skip the interleaved variants")
    ap.add_argument("--decode", action="store_true", help="16-row tiles, one per program (DECODE_CONFIGS)")
    args = ap.parse_args()
    interp = os.environ.get("TRITON_INTERPRET") == "1"
    dev = "cpu" if interp else "cuda"
    fam = discover()["swiglu"]
    sms = 4 if interp else torch.cuda.get_device_properties(0).multi_processor_count
    configs = [(16, 32, 32, 2, 4, 2)] if interp else DECODE_CONFIGS if args.decode else CONFIGS
    rows = []
    for spec in args.shapes.split(","):
        m, k, n = (int(v) for v in spec.split("x"))
        inputs = fam.make_inputs((m, k, n), "bf16", dev, seed=1)
        x, wg, wu = inputs["x"], inputs["w_gate"].contiguous(), inputs["w_up"].contiguous()
        ref = fam.oracle(**inputs)
        y = torch.empty(m, n, dtype=torch.bfloat16, device=dev)
        candidates = {}
        for cfg in [] if args.only_interleaved else configs:
            for persistent in (False,) if args.decode else (False, True):
                name = f"tma{' pers' if persistent else ''} {cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[4]} s{cfg[5]}"
                candidates[name] = (tma_call(x, wg, wu, y, cfg, persistent, sms), ref)
        w_int = interleaved_weights(wg, wu)  # column 2j: gate j, 2j + 1: up j
        for cfg in [] if args.only_two_accumulators else [(16, 16, 32, 2, 4, 2)] if interp else INTERLEAVED_CONFIGS:
            candidates[f"interleaved {cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[4]} s{cfg[5]}"] = (
                interleaved_call(x, w_int, y, cfg),
                ref,
            )
        fns, notes = checked(candidates, y)
        if interp:
            print(spec, sorted(fns), notes)
            continue
        w_cat = torch.cat([wg, wu], dim=1)
        fns["[cublas x@[Wg Wu]]"] = lambda: x @ w_cat
        for p in ("triton_tuned", "torch_compile"):
            fns[f"[{p}]"] = lambda p=p: fam.providers[p].fn(**{k_: v for k_, v in inputs.items()})
        for tail in () if args.decode else (False, True):  # the shipped persistent kernel, without / with its
            # last wave in parts
            fns[f"[persistent{', tail in parts' if tail else ''}]"] = lambda tail=tail: launch_interleaved(
                x, w_int, y, persistent=True, tail=tail
            )
        if args.decode:  # cold (CUPTI busy time), the yardstick of the decode races this compares with; race()
            # times CUDA events, about 3 us over CUPTI per call (benchmarks/results/timing-modes/events-fallback/)
            times = race_rounds(fns, args.rounds, 5.0, random.Random(0))
        else:
            times = race(fns, BenchSettings(graph=False), rounds=args.rounds)
        print_race(spec, times, top=12)
        print_notes(notes)
        rows += race_rows(spec, times)
    if rows:
        write_csv(args.out / "swiglu_tma.csv", rows)


if __name__ == "__main__":
    main()
