"""Does swiglu's TMA kernel need the interleaved weight? A probe of the same kernel reading Wg and Wu as given.

The plain op (``ops.swiglu``: the weights as the caller holds them) runs the pointer-based tiled kernel from 1000 rows
where the prepared object runs the interleaved TMA kernel on its ``[Wg Wu]`` column pairs; at the widest prefill
points of the H200 grid the plain op took 1.023-1.045x the prepared object's time. ``swiglu_tma.py`` raced the
persistent two-accumulator kernel on an H100 before the interleaved layout existed; this probe writes the interleaved
kernel's tile loop with two weight descriptors (a [BLOCK_K, BLOCK_N] box of Wg and one of Wu per step, two products
from the same x tile), persistent or one tile per program, and times it cold (CUPTI, kprof's read-only flush before
each call) beside the interleaved kernel in the same launch shapes, the shipped interleaved launch, the plain op and
cuBLAS's ``x @ [Wg Wu]``. Outputs are checked against an fp32 reference first.

    python benchmarks/swiglu_paired_probe.py --out DIR [--shapes 5000x4096x14336,...] [--dtype bf16] [--rounds 5]
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from bench_common import candidate_rows, checked, print_notes, probe_points
from decode_tiles import race

from kprof.kernels import discover
from kprof.kernels.lib import launching, tiles
from kprof.kernels.lib.tiles import dot_acc, grouped_tile, store_tile
from kprof.kernels.swiglu import op_plan, tuned


@triton.jit
def _paired_tile(x_desc, g_desc, u_desc, y_desc, tile, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SUBTILE: tl.constexpr):  # fmt: skip
    pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    gate = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    up = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for ks in range(tl.cdiv(K, BLOCK_K)):
        a = x_desc.load([off_m, ks * BLOCK_K])
        bg = g_desc.load([ks * BLOCK_K, off_n])
        bu = u_desc.load([ks * BLOCK_K, off_n])
        gate = dot_acc(a, bg, gate, False)
        up = dot_acc(a, bu, up, False)
    store_tile(y_desc, gate * tl.sigmoid(gate) * up, off_m, off_n, BLOCK_M, BLOCK_N, SUBTILE)


@triton.jit
def _paired_kernel(x_desc, g_desc, u_desc, y_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr, SUBTILE: tl.constexpr):  # fmt: skip
    if PROGRAMS == 0:
        _paired_tile(x_desc, g_desc, u_desc, y_desc, tl.program_id(0), M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                     SUBTILE)  # fmt: skip
    else:
        count = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for tile in tl.range(tl.program_id(0), count, PROGRAMS, flatten=True):
            _paired_tile(x_desc, g_desc, u_desc, y_desc, tile, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SUBTILE)


def paired_fn(x, wg, wu, y, config, persistent):
    bm, bn, bk, gm, warps, stages = config
    m, k = x.shape
    n = wg.shape[1]
    desc = launching.TensorDescriptor.from_tensor
    subtile = persistent
    args = (desc(x, [bm, bk]), desc(wg, [bk, bn]), desc(wu, [bk, bn]), desc(y, [bm, bn // 2 if subtile else bn]))
    count = tiles.tile_count(m, n, bm, bn)
    programs = min(count, tiles.persistent_sms(x)) if persistent else 0
    grid = (programs or count,)

    def run():
        _paired_kernel[grid](*args, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, PROGRAMS=programs,
                             SUBTILE=subtile, num_warps=warps, num_stages=stages)  # fmt: skip
        return y

    return run


def run_point(shape: tuple[int, int, int], dtype: str, rounds: int) -> list[dict]:
    m, k, n = shape
    inputs = discover()["swiglu"].make_inputs(shape, dtype, "cuda", sum(shape))
    x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
    w_int = tuned.interleaved_weights(wg, wu)
    w_cat = torch.cat([wg, wu], dim=1)
    h = x.float() @ w_cat.float()
    ref = torch.nn.functional.silu(h[:, :n]) * h[:, n:]
    y = torch.empty((m, n), dtype=x.dtype, device="cuda")
    fns = {
        "[cublas x@[Wg Wu]]": lambda: torch.mm(x, w_cat),
        "[plain op]": lambda: op_plan.swiglu(x, wg, wu),
        "[interleaved shipped]": lambda: (tuned.launch_interleaved(x, w_int, y), y)[1],
        "interleaved persistent": lambda: (tuned.launch_interleaved(x, w_int, y, persistent=True, tail=False), y)[1],
        "interleaved one tile": lambda: (tuned.launch_interleaved(x, w_int, y, persistent=False), y)[1],
        "interleaved persistent s3": lambda: (
            tuned.launch_interleaved(x, w_int, y, persistent=True, tail=False, config=(128, 128, 64, 16, 8, 3)),
            y,
        )[1],
        "paired persistent": paired_fn(x, wg, wu, y, tuned.PERSISTENT_CONFIG, True),
        "paired persistent s3": paired_fn(x, wg, wu, y, (128, 128, 64, 16, 8, 3), True),
        "paired one tile": paired_fn(x, wg, wu, y, tuned.TMA_CONFIG, False),
        "paired one tile s4": paired_fn(x, wg, wu, y, (128, 128, 64, 8, 8, 4), False),
        "paired one tile 64x": paired_fn(x, wg, wu, y, (128, 64, 64, 8, 4, 4), False),
    }
    cublas = {n: fn for n, fn in fns.items() if n.startswith("[cublas")}  # x @ [Wg Wu] is not swiglu's output
    ok, notes = checked({n: (fn, ref) for n, fn in fns.items() if n not in cublas}, y)
    print_notes(notes)
    return candidate_rows(dtype, shape, race({**cublas, **ok}, rounds), notes)


def main() -> None:
    probe_points(
        __doc__,
        "5000x4096x14336,2048x4096x5504,2048x8192x28672,8192x8192x11008",
        5,
        run_point,
        "[interleaved shipped]",
        "paired_{dtype}.csv",
    )


if __name__ == "__main__":
    main()
