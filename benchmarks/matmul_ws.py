"""Experiment: can the TMA products of rmsnorm_linear and swiglu close the last gap to cuBLAS at 2048 rows?

The bar: <= 1.05x one cuBLAS product at 2048x4096x4096 (rmsnorm_linear) and 2048x2048x5504 (swiglu);
the shipped kernels reach about 1.10x. Three ideas are raced against the shipped kernels and cuBLAS:

* warp specialisation (``tl.range(..., warp_specialize=True)``: producer warps issue the TMA loads,
  consumer warp groups run the MMAs), on the persistent tile loop or on the K loop of one-tile programs;
* epilogue subtiling (the output tile stored in two halves, which frees shared memory for a 4th stage);
* rmsnorm_linear only: the row statistics computed inside the persistent product instead of by a kernel
  before it. Each program sums the squares of its own ``ceil(M / programs)`` rows with plain loads, one
  BLOCK_K slice per K step of its first tile; the programs then meet at a grid barrier before their first
  epilogue. All programs are resident (one per SM), so the barrier cannot deadlock on a whole GPU.

    python benchmarks/matmul_ws.py --out DIR [--shapes rl:2048x4096x4096,sw:2048x2048x5504] [--rounds 3]
        [--variants 1|2|3|4]  (1: the first ideas; 2: around 1's winners; 3: swiglu tiles; 4: barrier diagnosis)

``rl:`` shapes are rmsnorm_linear (M x K x N), ``sw:`` shapes swiglu (M x d x ff). Every variant is
checked against the float64 oracle first (a wrong or failing one is reported, not timed), then all are
timed in interleaved rounds (kprof.harness.race), bf16. Writes DIR/matmul_ws.csv. Under
TRITON_INTERPRET=1 it only checks the variants without the grid barrier (the interpreter runs programs
one after another, so a barrier would wait forever).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import checked, print_notes, print_race, race_rows, write_csv
from triton.tools.tensor_descriptor import TensorDescriptor

from kprof.harness import BenchSettings, race
from kprof.kernels import discover
from kprof.kernels.lib.tiles import dot_acc, grouped_tile, store_tile  # store_tile shipped with swiglu since 87bf3e9
from kprof.kernels.rmsnorm_linear.fused import folded_weight
from kprof.kernels.rmsnorm_linear.rstd_epilogue import row_rstd_kernel
from kprof.kernels.swiglu.tuned import interleaved_weights


@triton.jit
def _epilogue(
    acc,
    y_desc,
    r_ptr,
    off_m,
    off_n,
    M,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    EPI: tl.constexpr,
    SUBTILE: tl.constexpr,
):
    if EPI == 0:  # rmsnorm_linear: scale the rows by rstd
        rows = off_m + tl.arange(0, BLOCK_M)
        out = acc * tl.load(r_ptr + rows, mask=rows < M, other=0.0, cache_modifier=".cg")[:, None]
    else:  # swiglu: interleaved gate/up columns
        gate, up = tl.split(tl.reshape(acc, [BLOCK_M, BLOCK_N, 2]))
        out = gate * tl.sigmoid(gate) * up
    store_tile(y_desc, out, off_m, off_n, BLOCK_M, BLOCK_N, SUBTILE)


@triton.jit
def _grid_barrier(bar_ptr, PROGRAMS: tl.constexpr, VOLATILE_POLL: tl.constexpr):
    """All PROGRAMS programs meet here. bar_ptr: int32[2] = (arrived, epoch), zero before the first launch;
    the last program to arrive resets the count and advances the epoch, so no host reset is needed.
    Waiting programs poll the epoch with atomics, or (VOLATILE_POLL) with plain volatile loads."""
    tl.debug_barrier()  # every thread's stores are issued before the arrival is published
    epoch = tl.atomic_add(bar_ptr + 1, 0, sem="acquire")
    arrived = tl.atomic_add(bar_ptr, 1, sem="acq_rel")
    if arrived == PROGRAMS - 1:
        tl.atomic_xchg(bar_ptr, 0, sem="relaxed")
        tl.atomic_add(bar_ptr + 1, 1, sem="release")
    elif VOLATILE_POLL:
        while tl.load(bar_ptr + 1, volatile=True) == epoch:
            pass
        tl.atomic_add(bar_ptr + 1, 0, sem="acquire")
    else:
        while tl.atomic_add(bar_ptr + 1, 0, sem="acquire") == epoch:
            pass
    tl.debug_barrier()


@triton.jit
def _product_kernel(
    # TMA descriptors
    x_desc,  # x [M, K], blocks [BLOCK_M, BLOCK_K]
    w_desc,  # EPI 0: W' [K, N], blocks [BLOCK_K, BLOCK_N]; EPI 1: W_int [K, 2N], blocks [BLOCK_K, 2 BLOCK_N]
    y_desc,  # y [M, N], blocks [BLOCK_M, BLOCK_N] (or half as wide with SUBTILE)
    # pointers
    r_ptr,  # [M] fp32 rstd (EPI 0): read, or written first when RSTD_IN
    bar_ptr,  # int32[2] grid barrier state (RSTD_IN)
    x_ptr,  # x itself, for the in-kernel statistics (RSTD_IN)
    # sizes
    M,
    N,
    K,
    stride_xm,
    eps,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EPI: tl.constexpr,  # 0 rmsnorm_linear (rstd rows), 1 swiglu (interleaved gate/up)
    PROGRAMS: tl.constexpr,  # the grid: every tile (one each) or the SM count (persistent)
    FLATTEN: tl.constexpr,  # pipeline across the tiles of a persistent program
    WS: tl.constexpr,  # warp-specialise the tile loop
    WS_K: tl.constexpr,  # warp-specialise the K loop instead
    SUBTILE: tl.constexpr,
    RSTD_IN: tl.constexpr,  # compute rstd here (persistent, EPI 0): own rows during the first tile, then a grid barrier
    RSTD_ROWS: tl.constexpr,  # power of two >= ceil(M / PROGRAMS)
    IEEE: tl.constexpr,  # the interpreter, whose bf16 dot is wrong: fp32 products there
    BARRIER: tl.constexpr = 1,  # RSTD_IN: 1 atomic polling, 2 volatile-load polling, 0 none (diagnosis only:
    # correct only when r_ptr already holds rstd from an earlier call)
):
    W_N: tl.constexpr = BLOCK_N * (2 if EPI == 1 else 1)
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    pid = tl.program_id(0)
    first = pid
    if RSTD_IN:  # the first tile, peeled: its K loop also sums the squares of this program's rows
        pid_m, pid_n = grouped_tile(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        mine = pid * RSTD_ROWS + tl.arange(0, RSTD_ROWS)
        cols = tl.arange(0, BLOCK_K)
        ss = tl.zeros([RSTD_ROWS, BLOCK_K], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, W_N], dtype=tl.float32)
        for ki in range(k_tiles):
            a = x_desc.load([off_m, ki * BLOCK_K])
            b = w_desc.load([ki * BLOCK_K, off_n * (W_N // BLOCK_N)])
            c = ki * BLOCK_K + cols
            xr = tl.load(
                x_ptr + mine[:, None].to(tl.int64) * stride_xm + c[None, :],
                mask=(mine < M)[:, None] & (c < K)[None, :],
                other=0.0,
            ).to(tl.float32)
            ss += xr * xr
            acc = dot_acc(a, b, acc, IEEE)
        tl.store(r_ptr + mine, tl.rsqrt(tl.sum(ss, axis=1) / K + eps), mask=mine < M)
        if BARRIER > 0:
            _grid_barrier(bar_ptr, PROGRAMS, BARRIER == 2)
        _epilogue(acc, y_desc, r_ptr, off_m, off_n, M, BLOCK_M, BLOCK_N, EPI, SUBTILE)
        first = pid + PROGRAMS
    for tile in tl.range(first, tiles, PROGRAMS, flatten=FLATTEN, warp_specialize=WS):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros([BLOCK_M, W_N], dtype=tl.float32)
        for ki in tl.range(k_tiles, warp_specialize=WS_K):
            a = x_desc.load([off_m, ki * BLOCK_K])
            b = w_desc.load([ki * BLOCK_K, off_n * (W_N // BLOCK_N)])
            acc = dot_acc(a, b, acc, IEEE)
        _epilogue(acc, y_desc, r_ptr, off_m, off_n, M, BLOCK_M, BLOCK_N, EPI, SUBTILE)


@dataclass(frozen=True)
class Variant:
    name: str
    bm: int = 128
    bn: int = 256  # rmsnorm_linear's output tile; swiglu's output tile is half as wide (its weight tile this wide)
    bk: int = 64
    gm: int = 8
    warps: int = 8
    stages: int = 3
    persistent: bool = True
    flatten: bool = True
    ws: bool = False
    ws_k: bool = False
    subtile: bool = False
    rstd_in: bool = False  # rmsnorm_linear only
    coop: bool = False  # cooperative launch: the driver refuses a grid that cannot be resident at once
    barrier: int = 1  # with rstd_in: 1 atomic polling, 2 volatile-load polling, 0 none (diagnosis only)


ROUND_1 = [  # commit 04dc312, run 1 of the README
    Variant("shipped-like pers flat"),
    Variant("pers flat sub s4", stages=4, subtile=True),
    Variant("pers ws", flatten=False, ws=True),
    Variant("pers ws sub s4", stages=4, flatten=False, ws=True, subtile=True),
    Variant("pers ws 128x128 s4", bn=128, stages=4, flatten=False, ws=True),
    Variant("pers ws 128x128 w4 s4", bn=128, warps=4, stages=4, flatten=False, ws=True),
    Variant("tile ws_k", persistent=False, flatten=False, ws_k=True),
    Variant("tile ws_k 128x128 s4", bn=128, stages=4, persistent=False, flatten=False, ws_k=True),
    Variant("tile 128x128 s3", bn=128, persistent=False, flatten=False),
    Variant("pers flat 128x128 s4", bn=128, stages=4),
    Variant("pers rstd_in", rstd_in=True),
    Variant("pers rstd_in sub s4", stages=4, subtile=True, rstd_in=True),
]
ROUND_2 = [  # around round 1's winners: in-kernel statistics with subtiles and 4 stages; persistent subtiles
    Variant("shipped-like pers flat"),
    Variant("tile (swiglu shipped)", bn=256, persistent=False, flatten=False),
    Variant("pers flat sub s4", stages=4, subtile=True),
    Variant("pers flat sub s4 g4", stages=4, subtile=True, gm=4),
    Variant("pers flat sub s4 g16", stages=4, subtile=True, gm=16),
    Variant("pers sub s4 noflat", stages=4, subtile=True, flatten=False),
    Variant("pers flat sub 128x256x32 s8", bk=32, stages=8, subtile=True),
    Variant("pers rstd_in sub s4", stages=4, subtile=True, rstd_in=True),
    Variant("pers rstd_in sub s4 coop", stages=4, subtile=True, rstd_in=True, coop=True),
    Variant("pers rstd_in sub s4 g4", stages=4, subtile=True, rstd_in=True, gm=4),
    Variant("pers rstd_in sub s4 g16", stages=4, subtile=True, rstd_in=True, gm=16),
    Variant("pers rstd_in sub s4 noflat", stages=4, subtile=True, rstd_in=True, flatten=False),
]
ROUND_3 = [  # swiglu at 2048x2048x5504 after shipping round 2's winner (persistent, halves, 4 stages, g16)
    Variant("tile (swiglu shipped)", bn=256, persistent=False, flatten=False),
    Variant("pers flat sub s4 g16", stages=4, subtile=True, gm=16),
    Variant("pers flat sub s4 g32", stages=4, subtile=True, gm=32),
    Variant("pers flat sub bk128 s2 g16", bk=128, stages=2, subtile=True, gm=16),
    Variant("pers flat sub s4 g16 bm64", bm=64, stages=4, subtile=True, gm=16),
    Variant("pers flat sub bk32 s6 g16", bk=32, stages=6, subtile=True, gm=16),
    Variant("pers rstd_in sub s4", stages=4, subtile=True, rstd_in=True),
    Variant("pers rstd_in sub s4 coop", stages=4, subtile=True, rstd_in=True, coop=True),
]
ROUND_4 = [  # why the statistics-in product is 15% slower on some H100s: the barrier or the extra loads?
    Variant("shipped-like pers flat"),
    Variant("pers rstd_in sub s4", stages=4, subtile=True, rstd_in=True),
    Variant("pers rstd_in sub s4 poll", stages=4, subtile=True, rstd_in=True, barrier=2),
    Variant("pers rstd_in sub s4 NO barrier", stages=4, subtile=True, rstd_in=True, barrier=0),
    Variant("pers rstd_in s3", rstd_in=True),
    Variant("pers rstd_in s3 NO barrier", rstd_in=True, barrier=0),
]
ROUNDS = {"1": ROUND_1, "2": ROUND_2, "3": ROUND_3, "4": ROUND_4}


def variant_call(v: Variant, x, w, y, r, bar, eps, epi, sms, with_rstd_kernel):
    bm, bn, bk = v.bm, v.bn, v.bk
    if epi == 1:
        bn //= 2
    m, k = x.shape
    n = y.shape[1]
    w_n = bn * (2 if epi == 1 else 1)
    xd = TensorDescriptor.from_tensor(x, [bm, bk])
    wd = TensorDescriptor.from_tensor(w, [bk, w_n])
    yd = TensorDescriptor.from_tensor(y, [bm, bn // 2 if v.subtile else bn])
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    progs = min(sms, tiles) if v.persistent else tiles
    rstd_rows = triton.next_power_of_2(triton.cdiv(m, progs))
    extra = {"launch_cooperative_grid": True} if v.coop else {}

    def call():
        if with_rstd_kernel and not v.rstd_in:
            row_rstd_kernel[(triton.cdiv(m, 4),)](
                x,
                r,
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
        _product_kernel[(progs,)](
            xd,
            wd,
            yd,
            r,
            bar,
            x,
            m,
            n,
            k,
            x.stride(0),
            float(eps),
            BLOCK_M=bm,
            BLOCK_N=bn,
            BLOCK_K=bk,
            GROUP_M=v.gm,
            EPI=epi,
            PROGRAMS=progs,
            FLATTEN=v.flatten,
            WS=v.ws,
            WS_K=v.ws_k,
            SUBTILE=v.subtile,
            RSTD_IN=v.rstd_in,
            RSTD_ROWS=rstd_rows,
            IEEE=not x.is_cuda,
            BARRIER=v.barrier,
            num_warps=v.warps,
            num_stages=v.stages,
            **extra,
        )
        return y

    return call


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="rl:2048x4096x4096,sw:2048x2048x5504,rl:8192x4096x4096,sw:8192x4096x11008")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", choices=sorted(ROUNDS), default="2", help="which list of variants")
    args = ap.parse_args()
    interp = os.environ.get("TRITON_INTERPRET") == "1"
    dev = "cpu" if interp else "cuda"
    sms = 4 if interp else torch.cuda.get_device_properties(0).multi_processor_count
    variants = ROUNDS[args.variants]
    if interp:  # small tiles; no grid barrier; no warp specialisation (a compiler pass)
        variants = [
            replace(v, bm=16, bn=32, bk=32, gm=2, warps=4, stages=2, ws=False, ws_k=False, coop=False)
            for v in variants
            if not v.rstd_in
        ]
    rows = []
    for spec in args.shapes.split(","):
        fam_name, dims = spec.split(":")
        m, k, n = (int(d) for d in dims.split("x"))
        epi = {"rl": 0, "sw": 1}[fam_name]
        fam = discover()["rmsnorm_linear" if epi == 0 else "swiglu"]
        inputs = fam.make_inputs((m, k, n), "bf16", dev, seed=1)
        ref = fam.oracle(**inputs)
        x = inputs["x"]
        if epi == 0:
            g, w, b = inputs["g"], inputs["w"], inputs["b"]
            ref = ref - b.double()  # the variants leave the bias out (one vector add; not what is measured)
            w_op = folded_weight(g, w)
            peers = {"[cublas x@W]": lambda: x @ w}
            names = ("triton_rstd_epilogue", "torch_compile")
        else:
            wg, wu = inputs["w_gate"].contiguous(), inputs["w_up"].contiguous()
            w_op = interleaved_weights(wg, wu)
            w_cat = torch.cat([wg, wu], dim=1)
            peers = {"[cublas x@[Wg Wu]]": lambda: x @ w_cat}
            names = ("triton_tuned", "torch_compile")
        y = torch.empty(m, n, dtype=torch.bfloat16, device=dev)
        r = torch.empty(m, dtype=torch.float32, device=dev)
        bar = torch.zeros(2, dtype=torch.int32, device=dev)
        candidates = {}
        for v in variants:
            if epi == 1 and v.rstd_in:
                continue
            candidates[v.name] = (variant_call(v, x, w_op, y, r, bar, 1e-6, epi, sms, epi == 0), ref)
        fns, notes = checked(candidates, y)
        if interp:
            print(spec, sorted(fns), notes)
            continue
        fns.update(peers)
        for p in names:
            fns[f"[{p}]"] = lambda p=p: fam.providers[p].fn(**inputs)
        times = race(fns, BenchSettings(graph=False), rounds=args.rounds)
        print_race(spec, times, top=16)
        print_notes(notes)
        rows += race_rows(spec, times)
    if rows:
        write_csv(args.out / "matmul_ws.csv", rows)


if __name__ == "__main__":
    main()
