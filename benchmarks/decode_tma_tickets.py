"""Would rmsnorm_linear's split-K kernel gain from loading the folded weight by TMA? A probe with the real reduction.

``decode_stream.py`` found the folded weight [K, N] streamed by TMA slow unsplit (27-52 us at 16x3584x4608: a box of
64 columns is 128-byte pieces 9 KB apart, and 72 programs cannot keep enough of them in flight) but 10.8 us split
four ways, against 11.6 for the shipped kernel; those split times added fp32 parts with atomics and left out the
rstd scaling. This probe gives the TMA weight stream the shipped kernel's own ending (``split_k._finish_tile``: each
program's part and partial sums of squares, the last program of a tile adding them in slot order, scaling by rstd)
and its squares (x @ x^T on the tensor cores), so the two differ in how W is loaded alone. Timed cold (CUPTI, kprof's
read-only flush, rotating rounds in one session per point) beside the shipped kernel on the fold, the prepared object
and cuBLAS's product; every output checked against an fp32 reference first.

    python benchmarks/decode_tma_tickets.py --out DIR [--shapes 16x3584x4608,...] [--dtype bf16] [--rounds 10]
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from bench_common import candidate_rows, checked, print_notes, probe_points
from decode_tiles import race

from kprof.kernels import discover, ops
from kprof.kernels.lib import launching
from kprof.kernels.lib import split_k as lib_split_k
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear import split_k
from kprof.kernels.rmsnorm_linear.fused import folded_weight
from kprof.kernels.rmsnorm_linear.split_k import _finish_tile


@triton.jit(do_not_specialize=["M"])
def _tma_split_k_kernel(
    x_ptr,  # [M, K] rows
    w_desc,  # folded weight [K, N], boxes [BLOCK_K, BLOCK_N]
    y_ptr,  # [M, N] output
    part_ptr,  # [SPLIT_K, M, N] fp32 parts
    ss_ptr,  # [programs, BLOCK_M] fp32 partial sums of squares
    count_ptr,  # tickets, zero between calls
    M,
    N,
    K,
    SPLIT_K,
    K_PER_SPLIT,
    stride_xm,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    STAGES: tl.constexpr,
):
    split, tile, pid_m, pid_n, k_start, k_end = lib_split_k.program_tile(SPLIT_K, K_PER_SPLIT, K, N, BLOCK_N)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    row_ok = offs_m < M
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    gram = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
    for k in tl.range(k_start, k_end, BLOCK_K, num_stages=STAGES):
        x = tl.load(
            x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + (k + offs_k)[None, :],
            mask=row_ok[:, None] & ((k + offs_k) < k_end)[None, :],
            other=0.0,
        )
        w = w_desc.load([k, pid_n * BLOCK_N])  # past K the box reads zeros; x is masked to the share
        gram = tl.dot(x, tl.trans(x), gram)
        acc = tl.dot(x, w, acc)
    diagonal = tl.arange(0, BLOCK_M)[:, None] == tl.arange(0, BLOCK_M)[None, :]
    ss = tl.sum(tl.where(diagonal, gram, 0.0), axis=1)
    _finish_tile(
        y_ptr, None, part_ptr, ss_ptr, count_ptr, acc, ss, split, tile, pid_m, pid_n, M, N, K, SPLIT_K, eps,
        BLOCK_M, BLOCK_N,
    )  # fmt: skip


def tma_fn(x, wf, y, eps, bn, bk, stages, splits):
    m, k = x.shape
    n = wf.shape[1]
    bm = 16
    splits, k_per = lib_split_k.k_ranges(k, splits, bk)
    desc = launching.TensorDescriptor.from_tensor(wf, [bk, bn])
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    parts, total = split_k.workspace_floats(m, n, bm, bn, splits)

    def run():
        ws = torch.empty(total, dtype=torch.float32, device=x.device)
        counts = launching.ticket_counters(x, tiles)
        _tma_split_k_kernel[(tiles * splits,)](
            x, desc, y, ws[:parts], ws[parts:], counts, m, n, k, splits, k_per, x.stride(0), eps,
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, STAGES=stages, num_warps=4, num_stages=stages,
        )  # fmt: skip
        return y

    return run, splits


def run_point(shape: tuple[int, int, int], dtype: str, rounds: int) -> list[dict]:
    m, k, n = shape
    inputs = discover()["rmsnorm_linear"].make_inputs(shape, dtype, "cuda", sum(shape))
    x, g, w, eps = inputs["x"], inputs["g"], inputs["w"], inputs["eps"]
    xn = rmsnorm_tuned(x, g, eps)
    wf = folded_weight(g, w)
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)) @ wf.float()
    out = torch.empty((m, n), dtype=x.dtype, device="cuda")
    y = torch.empty((m, n), dtype=x.dtype, device="cuda")
    prepared = ops.PreparedRMSNormLinear(g, w)
    cfg = split_k.config_for(x, n, True)
    fns = {
        "[cublas mm]": lambda: torch.mm(xn, w, out=out),
        "[prepared op]": lambda: prepared(x, None, eps),
        "[split-k shipped]": lambda: (split_k.launch_split_k(x, g, wf, None, y, eps, cfg, folded=True), y)[1],
    }
    sms = launching.sm_count(x)
    probes = {}
    for bn in (64, 128):
        for bk in (64, 128, 256):
            for stages in (3, 4, 6):
                if stages * bk * bn * 2 > 200 * 1024:
                    continue
                for per_sm in (1, 2, 4):
                    splits = lib_split_k.split_count(m, k, n, 16, bn, bk, per_sm * sms)
                    run, splits = tma_fn(x, wf, y, eps, bn, bk, stages, splits)
                    name = f"tma tickets {bn}x{bk} s{stages} split{splits}"
                    if name in probes:
                        continue
                    probes[name] = (run, ref)
    ok, notes = checked(probes, y)
    print_notes(notes)
    return candidate_rows(dtype, shape, race({**fns, **ok}, rounds), notes)


def main() -> None:
    probe_points(
        __doc__,
        "16x3584x4608,1x3584x4608,4x3584x4608,16x4096x4608,16x4096x6144,16x2048x5504",
        10,
        run_point,
        "[split-k shipped]",
        "tma_tickets_{dtype}.csv",
        top=8,
    )


if __name__ == "__main__":
    main()
