"""Where rmsnorm_linear's split-K kernel loses to a plain product at decode sizes, and designs of its x path.

At 4x2048x5504 bf16 on an H100 (``results/split-k/race-251512a/``) the split-K kernel in the plain product's
own tiles (16x64x256, 3 stages, unsplit) took 14.8 us, where that product took 10.7 on the normalised rows:
the same weight stream, so the x path (x and g loaded a step ahead by hand, converted, scaled, squared and
summed every step) is what costs. This script times copies of the kernel that differ only there:

- ``X``: ``ahead`` loads x and g one step ahead by hand (as shipped); ``loop`` loads them in the step that
  uses them, so the compiler may pipeline them (it pipelines loads that reach the product); ``split`` loads x
  in the step for the product and again, one step ahead by hand, for the squares.
- ``SS``: ``step`` sums each tile's squares into [BLOCK_M] every step (as shipped); ``tile`` adds them into a
  [BLOCK_M, BLOCK_K] accumulator in x's layout, summed once after the loop; ``dot`` sums them on the tensor
  cores, ``(x * x) @ ones`` (the squares rounded to x's dtype in bf16); ``gram`` takes them from the diagonal of
  ``x @ x^T`` (the tensor cores' products are exact, their sums fp32); ``none`` leaves them out.
- ``G``: ``g`` scales the x tiles by g; ``scaled`` by g / max|g| of the step, in x's dtype, the step's product
  scaled back by max|g| (fp16 holds it: it stays within x's range); ``prescaled`` by g * s, s a power of two
  from max|g| of the program's share of K, read before the loop (``g_scale``), the
  product scaled back once after it; ``prescaled_k`` the same with the max read in BLOCK_K steps through the
  loop's own g pointers; ``unit`` multiplies the tiles by a scale of 1 from the launch, no pass over g (a
  bound: fp16 does not hold it); ``guarded`` scales them by g unscaled, then, after the loop, runs the loop
  again with fp32 tiles in TF32 where fp16 may not have held x * g: a product not finite (an overflow), or
  the smallest row rms times max|g| of the share under 2^-8 (products near fp16's subnormals);
  ``guard_inf`` and ``guard_rms`` check less (the product's finiteness; that and the rms alone under 2^-8), to
  find what the checks cost; ``checks_only`` makes all three checks and zeroes the tile where they trip, with
  no second loop (a bound: wrong where they trip); ``guarded_loop`` is ``guarded`` with max|g| kept per column
  of the step in the product's loop, not read again after it; ``guarded_norm`` is that with the overflow found
  from the rows' norms, not the product: |x g| <= ||x|| max|g|, so fp16 holds every x * g where that is
  <= 65504 (what the kernel ships for fp16, its PRECISION 3); ``guarded_pass`` is ``guarded_norm`` with max|g|
  read again after the loop instead; ``guarded_early`` with g's first G_CHUNK elements of the share loaded before
  the loop and reduced after it (the load's latency under the loop's), the rest, if any, read after it;
  ``guard_acc`` finds the overflow from the product (not finite) and passes the rms check with max|g| over the
  share's first BLOCK_K of g, loaded before the loop (a lower bound of max|g|), reading g over the whole share
  only where that fails; ``guard_acc_late`` is that with the unsplit tile stored before the check, which then
  runs while the stores drain (stored again where the share is computed again); ``guard_one`` makes
  ``guard_acc``'s checks in one reduction over the tile, with |g| at the share's first element as the bound
  (``_missed_one``); ``none`` does not scale them.
- ``B`` (optional fifth part): ``late`` loads the bias tile after the loop (the default, as the kernel did
  before it took ``early``); ``early`` before the loop, so its latency is under the loop's.
- ``R``: ``wrap`` reads rows of x past M again (modulo M, as shipped: at one row all 16 rows of a tile read the
  same addresses); ``mask`` masks them (zero-filled, not read).

Variants without the squares or g compute something else (their rstd is 1, or g is 1): they are bounds of
what the rest costs, not checked and not kernels to ship. Beside them: ``[shipped]`` (``triton_split_k``'s
config), ``[cublas]`` (addmm on rows normalised beforehand, the target's yardstick), ``[pinned product]``
(kprof's plain product on those rows, its pinned decode tiles) and ``[two kernels]``.

    python benchmarks/split_k_x_path.py --out DIR [--shapes 4x2048x5504,...] [--dtypes bf16,fp16]

Writes DIR/x_path.csv (one row per point and candidate: median and every round, us) and prints each point's
candidates in order, as a ratio to ``[cublas]``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import candidate_rows, checked, print_notes, write_csv
from decode_tiles import race

from kprof.kernels import discover
from kprof.kernels.lib import launching, tiles
from kprof.kernels.lib import split_k as lib_split_k
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear import fused, split_k, two_kernels
from kprof.kernels.rmsnorm_linear.split_k import _finish_tile as finish_tile  # the shipped kernel's own tail
from kprof.kernels.rmsnorm_linear.split_k import _fp16_missed as fp16_missed  # its fp16 checks and second loop
from kprof.kernels.rmsnorm_linear.split_k import _fp16_missed_product as fp16_missed_product
from kprof.kernels.rmsnorm_linear.split_k import _g_max as g_max_of
from kprof.kernels.rmsnorm_linear.split_k import _tf32_share as tf32_share

DEFAULT_SHAPES = "1x2048x5504,4x2048x5504,16x2048x5504,4x2048x11008,16x2048x11008,4x4096x5504"
# (BLOCK_N, BLOCK_K, stages, programs per SM; 0: unsplit): the shipped 5504 and 11008 classes' tiles, and the
# pinned product's own tiles (its decode table's 16-row entries)
TILES = [
    (64, 256, 3, 0),
    (128, 128, 4, 0),
    (128, 128, 3, 0),
    (64, 128, 4, 0),
    (64, 64, 3, 2),
    (128, 64, 3, 2),
    (64, 64, 4, 1),
    (128, 64, 3, 1),
]
PRECISION_OVERRIDE: dict = {}  # --fp16-native: fp16's products in fp16 (x * g rounded to fp16; unsafe unscaled)
X_MODES = {"ahead": 1, "loop": 0, "split": 2}
SS_MODES = {"step": 0, "tile": 1, "none": 2, "dot": 3, "gram": 4}
G_MODES = {
    "g": 1,
    "none": 0,
    "scaled": 2,
    "prescaled": 3,
    "prescaled_k": 4,
    "unit": 5,
    "guard_inf": 6,
    "guard_rms": 7,
    "guarded": 8,
    "checks_only": 9,
    "guarded_loop": 10,
    "guarded_norm": 11,
    "guarded_pass": 12,
    "guarded_early": 13,
    "guard_acc": 14,
    "guard_acc_late": 15,
    "guard_one": 16,
}
B_MODES = {"late": 0, "early": 1}
# (X, SS, G) raced: the shipped path, each change alone and together, and the bounds
VARIANTS = [
    ("ahead", "step", "g", "wrap"),
    ("loop", "gram", "g", "wrap"),
    ("ahead", "step", "g", "mask"),
    ("loop", "gram", "g", "mask"),
]


@triton.jit
def g_scale(g_ptr, k_start, k_end, CHUNK: tl.constexpr):
    """(s, 1 / s): the power of two that puts max|g * s| over ``g[k_start:k_end]`` in [1/2, 1). Then
    |x * g * s| <= |x| for every x, so fp16 holds the scaled x tiles, and where g is near its largest they round
    no coarser than x itself does. Read before the product's loop: a reduction of g inside it kept x off the
    pipelined path (1.34-1.91x cuBLAS, results/split-k/x-path/fp16-98bc1ce/). Multiplying the tiles by s, even
    s = 1 from the launch, took the same loop to 2.1-2.4x cuBLAS (results/split-k/x-path/fp16-guard/)."""
    # max|g| in [2^(E-127), 2^(E-126)) for its biased exponent E: s = 2^(126-E) (biased 253-E), 1/s biased E+1.
    # E is capped where max|g| is inf or NaN, so s stays a normal number; those values then reach the output as
    # they reach the reference's. E = 0 (g all zero): s = 2^126, and every product is zero anyway.
    e = tl.minimum((g_max_of(g_ptr, k_start, k_end, CHUNK).to(tl.int32, bitcast=True) >> 23) & 0xFF, 252)
    return ((253 - e) << 23).to(tl.float32, bitcast=True), ((e + 1) << 23).to(tl.float32, bitcast=True)


@triton.jit(do_not_specialize=["M"])
def _x_path_kernel(
    # pointers (as kernels/rmsnorm_linear/split_k.py)
    x_ptr,
    g_ptr,
    w_ptr,
    b_ptr,
    y_ptr,
    part_ptr,
    ss_ptr,
    count_ptr,
    # sizes and strides
    M,
    N,
    K,
    SPLIT_K,
    K_PER_SPLIT,
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    eps,
    unit,  # 1.0: the scale of G_MODE 5
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    PRECISION: tl.constexpr,
    ALIGNED: tl.constexpr,
    X_AHEAD: tl.constexpr,  # 1: x and g loaded one step ahead by hand; 0: in the step that uses them; 2: in the
    # step for the product, and again one step ahead for the squares
    SS_MODE: tl.constexpr,  # 0: summed per step; 1: accumulated per element, summed after the loop; 2: none;
    # 3: by the tensor cores, (x * x) @ ones; 4: the diagonal of x @ x^T
    G_MODE: tl.constexpr,  # 1: x tiles scaled by g; 0: not; 2: by g / max|g| of the step, in x's dtype (the
    # product scaled back by max|g|); 3: by g * s, s from max|g| of the program's share, before the loop
    # (``g_scale``); 4: the same, read in BLOCK_K steps through g_ptrs; 5: by g * 1 (a launch argument);
    # 6-12: by g, the share computed again in TF32 where fp16 may not have held x * g (``_guard``'s CHECKS are
    # G_MODE - 5; 9 is a bound)
    ROW_MASK: tl.constexpr,  # 1: rows of the tile past M masked; 0: wrapped (modulo M)
    G_CHUNK: tl.constexpr,  # elements of g per load of a pass over g after or before the loop
    B_EARLY: tl.constexpr,  # 1: the bias tile loaded before the loop; 0: in the epilogue, after it
):
    split, tile, pid_m, pid_n, k_start, k_end = lib_split_k.program_tile(SPLIT_K, K_PER_SPLIT, K, N, BLOCK_N)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if ROW_MASK:  # rows past M masked (zero-filled, nothing read)
        offs_m = rows
        rmask = rows < M
    else:  # wrapped: past M the tile reads rows it already has
        offs_m = rows % M
        rmask = rows >= 0
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    x_rows = offs_m[:, None].to(tl.int64) * stride_xm
    w_rows = (k_start + offs_k[:, None]) * stride_wk
    if ALIGNED:
        x_rows = tl.multiple_of(x_rows, [8, 8])
        w_rows = tl.multiple_of(w_rows, [8, 8])
        offs_n = tl.max_contiguous(tl.multiple_of(offs_n, 8), 8)
    x_ptrs = x_ptr + x_rows + (k_start + offs_k[None, :]) * stride_xk
    w_ptrs = w_ptr + w_rows + offs_n[None, :].to(tl.int64) * stride_wn
    g_ptrs = g_ptr + k_start + offs_k

    first = offs_k < k_end - k_start
    x_next = tl.load(x_ptrs, mask=rmask[:, None] & first[None, :], other=0.0)
    g_next = tl.load(g_ptrs, mask=first, other=0.0)
    ss = tl.zeros([BLOCK_M], dtype=tl.float32)
    ss_tile = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    ones = tl.full([BLOCK_K, 16], 1.0, tl.float32)
    ss_dot = tl.zeros([BLOCK_M, 16], dtype=tl.float32)
    ss_gram = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
    if G_MODE == 3:
        g_s, g_inv = g_scale(g_ptr, k_start, k_end, G_CHUNK)
    if G_MODE == 4:
        top = tl.zeros([BLOCK_K], dtype=tl.float32)
        for kk in range(k_start, k_end, BLOCK_K):
            gq = tl.load(g_ptrs + (kk - k_start), mask=offs_k < k_end - kk, other=0.0)
            top = tl.maximum(top, tl.abs(gq.to(tl.float32)))
        e = tl.minimum((tl.max(top, axis=0).to(tl.int32, bitcast=True) >> 23) & 0xFF, 252)
        g_s = ((253 - e) << 23).to(tl.float32, bitcast=True)
        g_inv = ((e + 1) << 23).to(tl.float32, bitcast=True)
    if G_MODE == 5:
        g_s = unit
        g_inv = unit
    g_top = tl.zeros([BLOCK_K], dtype=tl.float32)
    if G_MODE == 13:  # loaded now, reduced after the loop
        g_offs = tl.arange(0, G_CHUNK)
        g_early = tl.load(g_ptr + k_start + g_offs, mask=g_offs < k_end - k_start, other=0.0)
    if G_MODE == 14 or G_MODE == 15:  # the share's first BLOCK_K of g: max|g| over it is a lower bound of max|g|
        g_first = tl.load(g_ptrs, mask=first, other=0.0)
    if G_MODE == 16:  # the share's first element of g: |g| there is a lower bound of max|g|, with no reduction
        g_one = tl.abs(tl.load(g_ptr + k_start).to(tl.float32))
    bias = None
    if HAS_BIAS and B_EARLY:  # as the shipped kernel loads it
        bias = tl.load(b_ptr + offs_n).to(tl.float32)
    for k in range(k_start, k_end, BLOCK_K):
        here = offs_k < k_end - k
        if X_AHEAD == 1:
            xr = x_next
            gr = g_next
            ahead = offs_k < k_end - k - BLOCK_K
            x_next = tl.load(x_ptrs + BLOCK_K * stride_xk, mask=rmask[:, None] & ahead[None, :], other=0.0)
            g_next = tl.load(g_ptrs + BLOCK_K, mask=ahead, other=0.0)
        else:
            xr = tl.load(x_ptrs, mask=rmask[:, None] & here[None, :], other=0.0)
            gr = tl.load(g_ptrs, mask=here, other=0.0)
        xs = xr  # the tile whose squares are summed
        if X_AHEAD == 2:  # the squares from a load of their own, one step ahead; the product's x in the loop
            xs = x_next
            ahead = offs_k < k_end - k - BLOCK_K
            x_next = tl.load(x_ptrs + BLOCK_K * stride_xk, mask=rmask[:, None] & ahead[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=here[:, None], other=0.0)
        x = xr.to(tl.float32)
        xsf = xs.to(tl.float32)
        if SS_MODE == 0:
            ss += tl.sum(xsf * xsf, axis=1)
        elif SS_MODE == 1:
            ss_tile += xsf * xsf
        elif SS_MODE == 3:  # the squares summed by the tensor cores: (x * x) @ ones
            if PRECISION == 0:
                ss_dot = tl.dot((xsf * xsf).to(w.dtype), ones.to(w.dtype), ss_dot)
            else:
                ss_dot = tl.dot(xsf * xsf, ones, ss_dot, input_precision="ieee" if PRECISION == 2 else "tf32")
        elif SS_MODE == 4:  # the squares as the Gram matrix's diagonal, x @ x^T: exact products, fp32 sums
            if PRECISION == 2:
                ss_gram = tl.dot(xsf, tl.trans(xsf), ss_gram, input_precision="ieee")
            else:
                ss_gram = tl.dot(xs, tl.trans(xs), ss_gram)
        a = x
        if G_MODE == 1:
            a = x * gr.to(tl.float32)[None, :]
        if G_MODE >= 3 and G_MODE <= 5:  # s on the tile: s on g changed g's layout
            a = x * gr.to(tl.float32)[None, :] * g_s
        if G_MODE >= 6:
            a = x * gr.to(tl.float32)[None, :]
        if G_MODE == 10 or G_MODE == 11:
            g_top = tl.maximum(g_top, tl.abs(gr.to(tl.float32)))
        if G_MODE == 2:  # x * g / max|g| of the step: within x's range, so fp16 holds it; the product scaled back
            gf = gr.to(tl.float32)
            g_max = tl.maximum(tl.max(tl.abs(gf), axis=0), 1e-30)
            part = tl.dot((x * (gf / g_max)[None, :]).to(w.dtype), w)
            acc += part * g_max
        elif PRECISION == 0:
            acc = tl.dot(a.to(w.dtype), w, acc)
        elif PRECISION == 1:
            acc = tl.dot(a, w.to(tl.float32), acc, input_precision="tf32")
        else:
            acc = tl.dot(a, w.to(tl.float32), acc, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
        g_ptrs += BLOCK_K
    if G_MODE >= 3 and G_MODE <= 5:
        acc = acc * g_inv
    if SS_MODE == 3:
        ss = tl.max(ss_dot, axis=1)  # 16 equal columns
    if SS_MODE == 4:
        diag = tl.arange(0, BLOCK_M)[:, None] == tl.arange(0, BLOCK_M)[None, :]
        ss = tl.sum(tl.where(diag, ss_gram, 0.0), axis=1)
    if SS_MODE == 1:
        ss = tl.sum(ss_tile, axis=1)
    if SS_MODE == 2:
        ss = tl.full([BLOCK_M], 1.0, tl.float32) * K  # rstd ~ 1: a bound, not the op
    if G_MODE == 13:
        g_top = tl.abs(g_early.to(tl.float32))
        for kk in range(k_start + G_CHUNK, k_end, G_CHUNK):  # shares longer than G_CHUNK: the rest after the loop
            g_rest = tl.load(g_ptr + kk + g_offs, mask=g_offs < k_end - kk, other=0.0)
            g_top = tl.maximum(g_top, tl.abs(g_rest.to(tl.float32)))
    if HAS_BIAS and not B_EARLY:  # after the loop (the shipped kernel loaded it in its epilogue before)
        bias = tl.load(b_ptr + offs_n).to(tl.float32)
    if G_MODE >= 6 and G_MODE <= 13:
        acc = _guard(x_ptr, g_ptr, w_ptr, acc, ss, offs_m, rmask, offs_n, k_start, k_end, stride_xm,
                     stride_xk, stride_wk, stride_wn, g_top, BLOCK_M, BLOCK_N, G_CHUNK, G_MODE - 5)  # fmt: skip
    if G_MODE == 15 and SPLIT_K == 1:  # the tile stored first, so the check runs while the stores drain
        finish_tile(
            y_ptr, bias, part_ptr, ss_ptr, count_ptr, acc, ss, split, tile, pid_m, pid_n, M, N, K, SPLIT_K, eps,
            BLOCK_M, BLOCK_N,
        )  # fmt: skip
        if fp16_missed_product(acc, ss, rmask, tl.max(tl.abs(g_first.to(tl.float32)), axis=0), g_ptr, k_start, k_end):
            acc = tf32_share(x_ptr, g_ptr, w_ptr, offs_m, rmask, offs_n, k_start, k_end, stride_xm, stride_xk,
                             stride_wk, stride_wn, BLOCK_M, BLOCK_N)  # fmt: skip
            finish_tile(
                y_ptr, bias, part_ptr, ss_ptr, count_ptr, acc, ss, split, tile, pid_m, pid_n, M, N, K, SPLIT_K,
                eps, BLOCK_M, BLOCK_N,
            )  # fmt: skip
    else:
        if G_MODE == 16:
            if _missed_one(acc, ss, rmask, g_one, g_ptr, k_start, k_end):
                acc = tf32_share(x_ptr, g_ptr, w_ptr, offs_m, rmask, offs_n, k_start, k_end, stride_xm, stride_xk,
                                 stride_wk, stride_wn, BLOCK_M, BLOCK_N)  # fmt: skip
        if G_MODE == 14 or G_MODE == 15:
            g_low = tl.max(tl.abs(g_first.to(tl.float32)), axis=0)
            if fp16_missed_product(acc, ss, rmask, g_low, g_ptr, k_start, k_end):
                acc = tf32_share(x_ptr, g_ptr, w_ptr, offs_m, rmask, offs_n, k_start, k_end, stride_xm, stride_xk,
                                 stride_wk, stride_wn, BLOCK_M, BLOCK_N)  # fmt: skip
        finish_tile(
            y_ptr, bias, part_ptr, ss_ptr, count_ptr, acc, ss, split, tile, pid_m, pid_n, M, N, K, SPLIT_K, eps,
            BLOCK_M, BLOCK_N,
        )  # fmt: skip


@triton.jit
def _missed_one(acc, ss, rmask, g_one, g_ptr, k_start, k_end):
    """``fp16_missed_product``'s check in one reduction over the tile: a product not finite, or a row whose rms
    times ``g_one`` (|g| at one element of the share, at most max|g|) is under 2^-8. Only where that trips is the
    exact check made (``fp16_missed_product`` with no bound, so max|g| is read over the share)."""
    small = rmask & (tl.sqrt(ss / (k_end - k_start)) * g_one < 0.00390625)
    missed = tl.max(tl.where(small[:, None] | ~(tl.abs(acc) < float("inf")), 1, 0)) > 0  # NaN too
    if missed:
        missed = fp16_missed_product(acc, ss, rmask, 0.0, g_ptr, k_start, k_end)
    return missed


@triton.jit
def _guard(
    x_ptr, g_ptr, w_ptr, acc, ss, offs_m, rmask, offs_n, k_start, k_end, stride_xm, stride_xk, stride_wk,
    stride_wn, g_top, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, G_CHUNK: tl.constexpr, CHECKS: tl.constexpr,
):  # fmt: skip
    """``acc``, or the share's product again with fp32 tiles in TF32 where fp16's tiles may not have held it.
    CHECKS 1: the product not finite; 2: that and the smallest row rms under 2^-8 (i.e. max|g| taken as 1);
    3: that and the rms times max|g| of the share under 2^-8; 4: as 3, the tile zeroed where they trip (a bound);
    5: as 3, max|g| from ``g_top`` (max|g| per column of a step, kept by the product's loop); 6: as 5, with the
    overflow check the rows' norms times max|g| over 65504, not the product's finiteness; 7: as 6, max|g| read
    again after the loop; 8: as 6, ``g_top`` the share's |g| loaded before the loop."""
    g_max = 1.0
    if CHECKS == 5 or CHECKS == 6 or CHECKS == 8:
        g_max = tl.max(g_top, axis=0)
    elif CHECKS >= 3:  # 3, 4 and 7
        g_max = g_max_of(g_ptr, k_start, k_end, G_CHUNK)
    rms_min = float("inf")
    if CHECKS >= 2:
        rms_min = tl.min(tl.where(rmask, tl.sqrt(ss / (k_end - k_start)), float("inf")), axis=0)
    if CHECKS >= 6:  # the shipped check (PRECISION 3)
        bad = fp16_missed(ss, rmask, g_max, k_end - k_start)
    else:
        worst = tl.max(tl.max(tl.where(acc == acc, tl.abs(acc), float("inf")), axis=1), axis=0)  # NaN: inf
        bad = (worst == float("inf")) | (rms_min * g_max < 0.00390625)
    if CHECKS == 4:
        acc = tl.where(bad, 0.0, acc)
    elif bad:  # the shipped kernel's second loop (unpipelined since b416dc1; pipelined in the races before it)
        acc = tf32_share(x_ptr, g_ptr, w_ptr, offs_m, rmask, offs_n, k_start, k_end, stride_xm, stride_xk, stride_wk,
                         stride_wn, BLOCK_M, BLOCK_N)  # fmt: skip
    return acc


def launch_variant(
    x2d: torch.Tensor,
    g: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor | None,
    y: torch.Tensor,
    eps: float,
    tile: tuple[int, int, int, int],
    variant: tuple[str, ...],
) -> torch.Tensor:
    """One call of the variant kernel at ``tile`` (BLOCK_N, BLOCK_K, stages, programs per SM); returns ``y``."""
    m, k = x2d.shape
    n = w.shape[1]
    bn, bk, stages, per_sm = tile
    bm = 16
    wanted = 1 if per_sm == 0 else lib_split_k.split_count(m, k, n, bm, bn, bk, per_sm * launching.sm_count(x2d))
    splits, k_per_split = lib_split_k.k_ranges(k, wanted, bk)
    tile_count = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    parts, total = split_k.workspace_floats(m, n, bm, bn, splits)
    ws = torch.empty(total, dtype=torch.float32, device=x2d.device)
    options = {} if launching.interpreting() else {"num_warps": 4, "num_stages": stages}
    x_mode, ss_mode, g_mode, row_mode = variant[:4]
    args = split_k.kernel_args(x2d, g, w, b, y, ws[:parts], ws[parts:], launching.ticket_counters(x2d, tile_count),
                               splits, k_per_split, eps)  # fmt: skip
    _x_path_kernel[(tile_count * splits,)](
        *args,
        1.0,
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        HAS_BIAS=b is not None,
        PRECISION=PRECISION_OVERRIDE.get(x2d.dtype, split_k.precision_of(x2d.dtype)),
        ALIGNED=tiles.promise_aligned(x2d, w),
        X_AHEAD=X_MODES[x_mode],
        SS_MODE=SS_MODES[ss_mode],
        G_MODE=G_MODES[g_mode],
        ROW_MASK=row_mode == "mask",
        G_CHUNK=min(triton.next_power_of_2(k_per_split), 4096),
        B_EARLY=B_MODES[variant[4] if len(variant) > 4 else "late"],
        **options,
    )
    return y


def variant_name(tile: tuple[int, int, int, int], variant: tuple[str, ...]) -> str:
    bn, bk, stages, per_sm = tile
    name = f"{bn}x{bk} s{stages} p{per_sm} X={variant[0]} SS={variant[1]} G={variant[2]} R={variant[3]}"
    return name + (f" B={variant[4]}" if len(variant) > 4 else "")


def exact(variant: tuple[str, ...]) -> bool:
    """Whether the variant computes the op on the race's inputs (the others leave out the squares or g: bounds).
    ``unit`` and ``checks_only`` do there, though they are bounds too: unsafe where fp16 cannot hold x * g."""
    return variant[1] != "none" and variant[2] != "none"


def run_point(shape: tuple[int, int, int], dtype: str, rounds: int) -> list[dict]:
    inputs = discover()["rmsnorm_linear"].make_inputs(shape, dtype, "cuda", sum(shape))
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    xn = rmsnorm_tuned(x, g, eps)
    ref = (x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + eps) * g.double()) @ w.double()
    ref += b.double()
    y = torch.empty((x.shape[0], w.shape[1]), dtype=x.dtype, device="cuda")
    out = torch.empty_like(y)
    fns = {
        "[cublas]": lambda: torch.addmm(b, xn, w, out=out),
        "[pinned product]": lambda: fused.launch_product(xn, w, b, out, eps, norm=0),
        "[two kernels]": lambda: two_kernels.norm_then_triton(x, g, w, b, eps),
        "[shipped]": lambda: split_k.split_k_op(x, g, w, b, eps),
    }
    checks = {
        variant_name(t, v): (lambda t=t, v=v: launch_variant(x, g, w, b, y, eps, t, v), ref)
        for t in TILES
        for v in VARIANTS
        if exact(v)
    }
    ok, notes = checked(checks, y)
    for v in VARIANTS:  # how near each exact path comes to the float64 oracle (checked() only passes or fails)
        if exact(v) and variant_name(TILES[0], v) in ok:
            err = ((launch_variant(x, g, w, b, y, eps, TILES[0], v).double() - ref).norm() / ref.norm()).item()
            print(f"  rel err {err:.3e}  {variant_name(TILES[0], v)}", flush=True)
    for t in TILES:  # the bounds: timed where they compile, never checked (they compute something else)
        for v in VARIANTS:
            if not exact(v):
                try:
                    launch_variant(x, g, w, b, y, eps, t, v)
                    ok[variant_name(t, v) + " (bound)"] = lambda t=t, v=v: launch_variant(x, g, w, b, y, eps, t, v)
                except Exception as exc:  # noqa: BLE001 - reported, not timed
                    notes[variant_name(t, v)] = f"{type(exc).__name__}: {str(exc)[:100]}"
    print_notes(notes)
    return candidate_rows(dtype, shape, race({**fns, **ok}, rounds), notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument(
        "--tiles",
        default="",
        help="only these tiles, e.g. 64x256s3p0,64x64s4p1 (BLOCK_N x BLOCK_K, stages, programs per SM)",
    )
    ap.add_argument("--fp16-native", action="store_true", help="fp16's products in fp16 (PRECISION 0)")
    ap.add_argument("--variants", default="", help="only these variants, e.g. loop/gram/g/wrap,loop/gram/g/mask")
    args = ap.parse_args()
    if args.tiles:
        TILES[:] = [
            tuple(int(v) for v in re.fullmatch(r"(\d+)x(\d+)s(\d+)p(\d+)", t).groups()) for t in args.tiles.split(",")
        ]
    if args.fp16_native:
        PRECISION_OVERRIDE[torch.float16] = 0
    if args.variants:
        VARIANTS[:] = [tuple(v.split("/")) for v in args.variants.split(",")]
    rows: list[dict] = []
    for dtype in args.dtypes.split(","):
        for s in args.shapes.split(","):
            shape = tuple(int(v) for v in s.split("x"))
            point = run_point(shape, dtype, args.rounds)
            rows += point
            write_csv(args.out / "x_path.csv", rows)
            med = {r["candidate"]: r["median_us"] for r in point if r["median_us"] != ""}
            cub = med["[cublas]"]
            print(f"== {dtype} {s}: cublas {cub:.2f} us", flush=True)
            for name in sorted(med, key=med.get):
                print(f"   {med[name] / cub:6.3f}  {med[name]:7.2f}  {name}", flush=True)


if __name__ == "__main__":
    main()
