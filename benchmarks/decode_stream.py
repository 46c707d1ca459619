"""How fast can a decode-size rmsnorm_linear stream its weight? A probe of designs against the read floor.

At 16x3584x4608 (Qwen2.5-7B's QKV projection, 16 tokens) the op reads a 33 MB weight and little else; kprof's split-K
kernel on the folded weight took 11.6-12.0 us against cuBLAS's 9.9-11.0 (H200), both far from what the weight's bytes
need at the device's read rate. This probe times, cold (a spin, kprof's read-only L2 flush, one call; CUPTI busy time),
in one session per point:

- ``[floor pPROGRAMS]``: a kernel that only reads the weight (each program a contiguous share, summed), the floor any
  product of the shape stands on;
- ``[cublas]``: ``addmm(b, xn, W)`` on rows normalised beforehand, the decode target's yardstick;
- ``[split-k shipped]``: the split-K kernel on the folded weight with the dispatch's config, what the prepared object
  runs;
- ``tma kn BNxBK sS splitP``: the folded weight [K, N] streamed by TMA in [BK, BN] boxes, ``acc[16, BN] += x @ w``;
- ``tma nk BNxBK sS splitP``: the folded weight stored transposed, [N, K], in [BN, BK] boxes, ``acc[BN, 16] += w @
  x^T`` (the weight as the product's left operand, so the tensor cores' 64-row instructions take it from shared
  memory, as cuBLAS's 64x16 decode tiles do).

Each probe kernel sums the rows' squares from its x tiles and scales by rstd where K is not split; split ones add
their fp32 parts with atomics into a zeroed buffer (the zeroing is in the time) and are not scaled: an upper bound on
what a split design gains. Every output is checked against an fp32 reference first.

    python benchmarks/decode_stream.py --out DIR [--shapes 16x3584x4608,...] [--dtype bf16] [--rounds 10]
"""

from __future__ import annotations

import zlib

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


@triton.jit
def _read_floor_kernel(w_ptr, out_ptr, n, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    """Program p sums elements [p * CHUNK, (p + 1) * CHUNK) of the flat weight (read only; one float written)."""
    start = tl.program_id(0).to(tl.int64) * CHUNK
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.range(0, CHUNK, BLOCK, num_stages=1):
        offs = start + i + tl.arange(0, BLOCK)
        acc += tl.load(w_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0))


@triton.jit
def _stream_kernel(
    x_ptr,  # [M, K] rows
    w_desc,  # folded weight: [K, N] boxes [BLOCK_K, BLOCK_N] (NK False), or [N, K] boxes [BLOCK_N, BLOCK_K] (NK True)
    y_ptr,  # [M, N] output (SPLIT 1), or [M, N] fp32 zeroed (SPLIT > 1: parts added, no rstd)
    M,
    N,
    K,
    K_PER_SPLIT,
    stride_xm,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    SPLIT: tl.constexpr,
    NK: tl.constexpr,
    STAGES: tl.constexpr,
):
    pid = tl.program_id(0)
    pid_n = pid // SPLIT
    split = pid % SPLIT
    k0 = split * K_PER_SPLIT
    k1 = tl.minimum(k0 + K_PER_SPLIT, K)
    offs_m = tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = offs_m < M
    ss = tl.zeros([BLOCK_M], dtype=tl.float32)
    if NK:
        acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
    else:
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in tl.range(k0, k1, BLOCK_K, num_stages=STAGES):
        x = tl.load(
            x_ptr + offs_m[:, None] * stride_xm + (k + offs_k)[None, :],
            mask=row_ok[:, None] & ((k + offs_k) < k1)[None, :],
            other=0.0,
        )
        xf = x.to(tl.float32)
        ss += tl.sum(xf * xf, axis=1)
        if NK:
            w = w_desc.load([pid_n * BLOCK_N, k])
            acc = tl.dot(w, tl.trans(x), acc)
        else:
            w = w_desc.load([k, pid_n * BLOCK_N])
            acc = tl.dot(x, w, acc)
    if NK:
        acc = tl.trans(acc)
    mask = row_ok[:, None] & (offs_n < N)[None, :]
    offs = offs_m[:, None] * N + offs_n[None, :]
    if SPLIT == 1:
        rstd = tl.rsqrt(ss / K + eps)
        tl.store(y_ptr + offs, (acc * rstd[:, None]).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        tl.atomic_add(y_ptr + offs, acc, mask=mask, sem="relaxed")


def floor_fn(w: torch.Tensor, programs: int):
    n = w.numel()
    block = 4096
    chunk = triton.cdiv(triton.cdiv(n, programs), block) * block
    out = torch.empty(triton.cdiv(n, chunk), dtype=torch.float32, device=w.device)
    grid = (triton.cdiv(n, chunk),)
    return lambda: _read_floor_kernel[grid](w, out, n, CHUNK=chunk, BLOCK=block, num_warps=8)


def stream_fn(x, wf, wf_nk, eps, bn, bk, stages, splits, nk):
    m, k = x.shape
    n = wf.shape[1]
    splits, k_per = lib_split_k.k_ranges(k, splits, bk)
    desc = (
        launching.TensorDescriptor.from_tensor(wf_nk, [bn, bk])
        if nk
        else launching.TensorDescriptor.from_tensor(wf, [bk, bn])
    )
    grid = (triton.cdiv(n, bn) * splits,)
    bm = 16
    warps = 4

    def run():
        if splits == 1:
            y = torch.empty((m, n), dtype=x.dtype, device=x.device)
        else:
            y = torch.zeros((m, n), dtype=torch.float32, device=x.device)
        _stream_kernel[grid](
            x, desc, y, m, n, k, k_per, x.stride(0), eps, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, SPLIT=splits, NK=nk,
            STAGES=stages, num_warps=warps, num_stages=stages,
        )  # fmt: skip
        return y

    return run, splits


def run_point(shape: tuple[int, int, int], dtype: str, rounds: int, shard: tuple[int, int] | None = None) -> list[dict]:
    """One point's race (``shard`` (i, n): only compile the i-th of n shares of the probe kernels, no race)."""
    m, k, n = shape
    inputs = discover()["rmsnorm_linear"].make_inputs(shape, dtype, "cuda", sum(shape))
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    xn = rmsnorm_tuned(x, g, eps)
    wf = folded_weight(g, w)
    wf_nk = wf.t().contiguous()
    xs = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    ref = xs @ wf.float()
    raw = x.float() @ wf.float()
    out = torch.empty((m, n), dtype=x.dtype, device="cuda")
    prepared = ops.PreparedRMSNormLinear(g, w)
    y = torch.empty((m, n), dtype=x.dtype, device="cuda")
    cfg = split_k.config_for(x, n, True)
    fns = {
        "[cublas]": lambda: torch.addmm(b, xn, w, out=out),
        "[cublas mm]": lambda: torch.mm(xn, w, out=out),
        "[prepared op]": lambda: prepared(x, b, eps),
        "[split-k shipped]": lambda: split_k.launch_split_k(x, g, wf, b, y, eps, cfg, folded=True),
    }
    for p in (132, 264, 528, 1056):
        fns[f"[floor p{p}]"] = floor_fn(wf, p)
    probes = {}
    sms = launching.sm_count(x)
    for nk in (False, True):
        for bn in (32, 64, 128, 256):
            if nk and bn < 64:
                continue
            for bk in (64, 128, 256):
                for stages in (3, 4, 6):
                    if stages * bk * bn * 2 > 200 * 1024 or bn * bk < 4096:
                        continue
                    for per_sm in (0, 1, 2):
                        splits = 1 if per_sm == 0 else lib_split_k.split_count(m, k, n, 16, bn, bk, per_sm * sms)
                        run, splits = stream_fn(x, wf, wf_nk, eps, bn, bk, stages, splits, nk)
                        name = f"tma {'nk' if nk else 'kn'} {bn}x{bk} s{stages} split{splits}"
                        if name in fns or name in probes:
                            continue
                        if shard and zlib.crc32(name.encode()) % shard[1] != shard[0]:
                            continue  # another process compiles it
                        probes[name] = (run, ref if splits == 1 else raw)
    ok, notes = checked(probes, out)  # each run writes an output of its own; ``out`` is only poisoned
    if shard:
        return []
    print_notes(notes)
    return candidate_rows(dtype, shape, race({**fns, **ok}, rounds), notes)


def main() -> None:
    probe_points(
        __doc__,
        "16x3584x4608,1x3584x4608,16x4096x6144,16x2048x5504",
        10,
        run_point,
        "[cublas]",
        "decode_stream.csv",
        shards=True,
    )


if __name__ == "__main__":
    main()
