"""A few rows times a folded weight (``diag(g) W``), the weight's K steps shared evenly over every program (stream-K):
each program takes a run of (column tile, K step) units, so every SM streams the same share of the weight whatever
the tile count. A program finishes the column tiles its run covers whole; a tile shared between programs meets as
the split-K kernel's do (``kernels/lib/split_k.py``): partial products and sums of squares stored, the program that
draws the tile's last ticket adds them in program order and scales the rows by rstd.

Why: the split-K kernel gives every column tile the same number of programs, so the launch fills the GPU only where
the tile count does. At 16 x 3584 x 4608 on an H200 its fastest tiles (64 x 256, unsplit) are 72 programs for 132
SMs: both it and cuBLAS's product read exactly the weight's bytes (ncu), with 46% of the SMs busy, and it took
1.141-1.175x cuBLAS's product; split in two the 144 programs run as two waves. The figures of this kernel against
both are in ``benchmarks/results/stream-k-decode/``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching, split_k, tiles

ROWS = 16  # the one row tile: M <= ROWS


@triton.jit
def _program_of(unit, UNITS, P):
    """The program whose run holds ``unit`` (runs ``[p * UNITS // P, (p + 1) * UNITS // P)``)."""
    return ((unit + 1) * P - 1) // UNITS


@triton.jit(do_not_specialize=["M"])
def _rmsnorm_linear_stream_k_kernel(
    # pointers
    x_ptr,  # [M, K] input rows, M <= BLOCK_M
    w_ptr,  # [K, N] weight with g folded in (``fused.folded_weight``), any strides
    b_ptr,  # [N] bias (unused unless HAS_BIAS)
    y_ptr,  # [M, N] output, contiguous
    part_ptr,  # [programs, 2, BLOCK_M, BLOCK_N] fp32: a program's partial tiles, at the start and end of its run
    ss_ptr,  # [programs, 2, BLOCK_M] fp32: their partial sums of squares
    count_ptr,  # [column tiles] int32 tickets, zero between calls
    # sizes and strides
    M,
    N,
    K,
    STEPS,  # K steps of BLOCK_K per column tile
    UNITS,  # column tiles x STEPS
    stride_xm,
    stride_xk,
    stride_wk,
    stride_wn,
    # parameters
    eps,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    IEEE: tl.constexpr,  # fp32 tiles and IEEE products (fp32 inputs; the interpreter, whose bf16 dot is wrong)
    ALIGNED: tl.constexpr,  # K, N and the row strides are multiples of 8 elements (see lib.tiles.aligned8)
):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    start = pid * UNITS // programs
    end = (pid + 1) * UNITS // programs
    offs_m, row_ok = split_k.tile_rows(0, M, BLOCK_M, True)
    offs_k = tl.arange(0, BLOCK_K)
    x_rows = offs_m[:, None].to(tl.int64) * stride_xm
    if ALIGNED:  # promises kprof.kernels.lib.tiles.aligned8 checked; they must sit in the kernel body
        x_rows = tl.multiple_of(x_rows, [8, 8])
    for tile in range(start // STEPS, (end - 1) // STEPS + 1):
        first_unit = tile * STEPS
        u0 = tl.maximum(start, first_unit)
        u1 = tl.minimum(end, first_unit + STEPS)
        k_start = (u0 - first_unit) * BLOCK_K
        k_end = tl.minimum((u1 - first_unit) * BLOCK_K, K)
        offs_n = split_k.tile_cols(tile, N, BLOCK_N)
        w_rows = (k_start + offs_k[:, None]) * stride_wk
        if ALIGNED:
            w_rows = tl.multiple_of(w_rows, [8, 8])
            offs_n = tl.max_contiguous(tl.multiple_of(offs_n, 8), 8)
        x_ptrs = x_ptr + x_rows + (k_start + offs_k[None, :]) * stride_xk
        w_ptrs = w_ptr + w_rows + offs_n[None, :].to(tl.int64) * stride_wn
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        gram = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
        for k in range(k_start, k_end, BLOCK_K):
            here = offs_k < k_end - k
            if ALIGNED:
                here = tl.max_constancy(here, 8)
            xr = tl.load(x_ptrs, mask=row_ok[:, None] & here[None, :], other=0.0)
            w = tl.load(w_ptrs, mask=here[:, None], other=0.0)
            if IEEE:
                xf = xr.to(tl.float32)
                gram = tl.dot(xf, tl.trans(xf), gram, input_precision="ieee")
                acc = tl.dot(xf, w.to(tl.float32), acc, input_precision="ieee")
            else:  # the squares as the diagonal of x @ x^T on the tensor cores, as the split-K kernel sums them
                gram = tl.dot(xr, tl.trans(xr), gram)
                acc = tl.dot(xr, w, acc)
            x_ptrs += BLOCK_K * stride_xk
            w_ptrs += BLOCK_K * stride_wk
        diagonal = tl.arange(0, BLOCK_M)[:, None] == tl.arange(0, BLOCK_M)[None, :]
        ss = tl.sum(tl.where(diagonal, gram, 0.0), axis=1)
        _, out_mask, out_offs = split_k.output_tile(0, tile, M, N, BLOCK_M, BLOCK_N)
        if (u0 == first_unit) & (u1 == first_unit + STEPS):
            _finish(y_ptr, b_ptr, acc, ss, offs_n, out_offs, out_mask, K, eps, HAS_BIAS)
        else:
            _meet(
                y_ptr, b_ptr, part_ptr, ss_ptr, count_ptr, acc, ss, pid, start, tile, first_unit, STEPS, UNITS,
                programs, offs_n, out_offs, out_mask, K, eps, BLOCK_M, BLOCK_N, HAS_BIAS,
            )  # fmt: skip


@triton.jit
def _meet(
    y_ptr, b_ptr, part_ptr, ss_ptr, count_ptr, acc, ss, pid, start, tile, first_unit, STEPS, UNITS, programs, offs_n,
    out_offs, out_mask, K, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr,
):  # fmt: skip
    """A tile shared between programs: this program's part stored in its slot (0: its run's first tile, 1: its
    last), then a ticket; the program drawing the last one adds the parts in program order and finishes the tile."""
    local = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    rows = tl.arange(0, BLOCK_M)
    slot = pid * 2 + tl.where(first_unit <= start, 0, 1)
    tl.store(part_ptr + slot.to(tl.int64) * BLOCK_M * BLOCK_N + local, acc)
    tl.store(ss_ptr + slot.to(tl.int64) * BLOCK_M + rows, ss)
    first = _program_of(first_unit, UNITS, programs)
    last = _program_of(first_unit + STEPS - 1, UNITS, programs)
    if split_k.take_ticket(count_ptr, tile) == last - first:
        # the first program's part sits in its last slot unless its run starts at this tile; every later one's
        # in its first. Program order: the sum does not depend on which program finished last.
        first_slot = first * 2 + tl.where(first * UNITS // programs == first_unit, 0, 1)
        total = tl.load(part_ptr + first_slot.to(tl.int64) * BLOCK_M * BLOCK_N + local, cache_modifier=".cg")
        ss_total = tl.load(ss_ptr + first_slot.to(tl.int64) * BLOCK_M + rows, cache_modifier=".cg")
        parts = part_ptr + ((first + 1) * 2).to(tl.int64) * BLOCK_M * BLOCK_N + local
        ss_parts = ss_ptr + ((first + 1) * 2).to(tl.int64) * BLOCK_M + rows
        for _ in range(first + 1, last + 1):  # each later program's first slot
            total += tl.load(parts, cache_modifier=".cg")
            ss_total += tl.load(ss_parts, cache_modifier=".cg")
            parts += 2 * BLOCK_M * BLOCK_N
            ss_parts += 2 * BLOCK_M
        _finish(y_ptr, b_ptr, total, ss_total, offs_n, out_offs, out_mask, K, eps, HAS_BIAS)
        split_k.release(count_ptr, tile)


@triton.jit
def _finish(y_ptr, b_ptr, acc, ss, offs_n, out_offs, out_mask, K, eps, HAS_BIAS: tl.constexpr):
    """y = acc * rstd (+ bias) for a tile whose whole product and sums of squares are in ``acc`` and ``ss``."""
    out = acc * tl.rsqrt(ss / K + eps)[:, None]
    if HAS_BIAS:
        out += tl.load(b_ptr + offs_n).to(tl.float32)[None, :]
    tl.store(y_ptr + out_offs, out.to(y_ptr.dtype.element_ty), mask=out_mask)


def config(bn: int, bk: int, stages: int, per_sm: int, warps: int = 4) -> triton.Config:
    """A config of the kernel: BLOCK_N x BLOCK_K tiles, ``stages`` pipelined steps, ``per_sm`` programs per SM."""
    return triton.Config({"BLOCK_N": bn, "BLOCK_K": bk, "PER_SM": per_sm}, num_warps=warps, num_stages=stages)


def launch_stream_k(
    x2d: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None, y: torch.Tensor, eps: float, cfg: triton.Config
) -> dict:
    """``rmsnorm(x2d) * g @ W (+ b)`` into ``y`` [M, N] from the folded weight ``wf`` (``diag(g) W``), ``x2d`` [M, K]
    with M <= ROWS, in ``cfg``'s tiles. Returns the meta-parameters and program count it ran with."""
    m, k = x2d.shape
    n = wf.shape[1]
    if m > ROWS:
        raise ValueError(f"the stream-K kernel takes at most {ROWS} rows, got {m}: use the split-K kernel")
    meta = dict(cfg.kwargs)
    bn, bk, per_sm = meta.pop("BLOCK_N"), meta.pop("BLOCK_K"), meta.pop("PER_SM")
    steps = triton.cdiv(k, bk)
    tiles_n = triton.cdiv(n, bn)
    units = tiles_n * steps
    programs = min(units, per_sm * launching.sm_count(x2d))
    part_floats, total = split_k.workspace_floats(programs * 2 * ROWS * bn, programs * 2 * ROWS)
    ws = torch.empty(total, dtype=torch.float32, device=x2d.device)
    counts = launching.ticket_counters(x2d, tiles_n)
    ieee = x2d.dtype == torch.float32 or launching.interpreting()
    options = {} if launching.interpreting() else launching.config_options(cfg)
    # fmt: off
    _rmsnorm_linear_stream_k_kernel[(programs,)](
        x2d, wf, b if b is not None else wf, y, ws[:part_floats], ws[part_floats:], counts,
        m, n, k, steps, units, x2d.stride(0), x2d.stride(1), wf.stride(0), wf.stride(1), float(eps),
        BLOCK_M=ROWS, BLOCK_N=bn, BLOCK_K=bk, HAS_BIAS=b is not None, IEEE=ieee,
        ALIGNED=tiles.promise_aligned(x2d, wf), **options,
    )
    # fmt: on
    return {"BLOCK_N": bn, "BLOCK_K": bk, "programs": programs, "units": units}
