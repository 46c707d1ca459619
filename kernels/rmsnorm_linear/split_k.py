"""One kernel for a handful of rows, nothing derived from the weights: ``g`` scales the x tiles as they are
loaded, the rows' sums of squares come from the same tiles, K is split over several programs per column
tile, and the last program of a column tile to finish adds the parts and scales each row by its rstd.

Why: at decode sizes the product streams W once and is over in 10-20 us, so the two-kernel route's separate
norm kernel (about 2 us with its launch gap) is what put 1x2048x5504 and 16x2048x5504 at 1.20-1.24x cuBLAS's
``x @ W`` on H100s (``benchmarks/results/decode-tiles/``, ncu: both moved 1.00x the bytes model). Folding
the norm into the product's loop needs no separate pass here: ``y = rstd * ((x * g) @ W)``, and the squares
are summed from the x tile already in registers. The earlier one-kernel design summed them in a loop of its
own before the product's, which waited for each load (``fused.py``, ``triton_one_kernel``). Splitting K
lets a narrow weight fill the GPU: 5504 columns in 64-wide tiles are 86 programs for 132 SMs, so without a
split a third of an H100 sits idle. On the H100s raced (``benchmarks/results/split-k/``) it took the x2048x5504
points to 1.10-1.14x cuBLAS's product (the two kernels: 1.13-1.17x); where the op uses it, see ``tuned.py``.

The parts meet as ``kernels/lib/split_k.py`` describes, with no program waiting for another: the last program
of a column tile adds the partial tiles and the partial sums of squares, applies rstd and the bias.

The x tiles times g are rounded to x's dtype before the product in bf16, whose range is fp32's. fp16 cannot
hold x * g where the rows are large (the two-kernel route normalises first), so in fp16 the tile stays fp32
and the product runs in TF32, whose 10-bit mantissa is fp16's: W's fp16 values convert exactly. With x
pipelined, fp16 rounds x * g to fp16 too, and checks afterwards that fp16 held it (``_fp16_missed``,
``_fp16_missed_product``): where it may not have, the program computes its share again the TF32 way.

On a weight with g folded in (``FOLDED``: ``diag(g) W``, which ``ops.PreparedRMSNormLinear`` keeps) the x tiles go
to the product as they are: no g is read and fp16 has nothing to check (``folded_serves`` says where the prepared
objects take it, with the figures).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import launching, split_k, tiles
from kprof.kernels.lib.checks import dense_vector
from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.rmsnorm_linear.fused import prepared_version


# M is not specialised: Triton compiles a separate binary for an integer argument equal to 1, and the
# one-row binary of the same tiles ran 1.5-2 us slower than the 4- and 16-row ones on an H100 (the pinned
# product at 1x2048x5504: 12.43 us against 10.82 at 4 rows and 10.69 at 16; benchmarks/results/decode-tiles/)
@triton.jit(do_not_specialize=["M"])
def _rmsnorm_linear_split_k_kernel(
    # pointers
    x_ptr,  # [M, K] input rows
    g_ptr,  # [K] norm weight
    w_ptr,  # [K, N] weight, any strides
    b_ptr,  # [N] bias (unused unless HAS_BIAS)
    y_ptr,  # [M, N] output, contiguous
    part_ptr,  # [SPLIT_K, M, N] fp32: each program's partial product
    ss_ptr,  # [programs, BLOCK_M] fp32: each program's partial sums of squares
    count_ptr,  # [row tiles x column tiles] int32 tickets, zero between calls
    # sizes and strides
    M,
    N,
    K,
    SPLIT_K,  # programs per column tile, each over K_PER_SPLIT columns of x (not a constexpr: one binary
    # serves every split count)
    K_PER_SPLIT,  # a multiple of BLOCK_K
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
    PRECISION: tl.constexpr,  # 0: (x * g) in x's dtype (bf16); 1: fp32 tile, TF32 product (fp16); 2: IEEE fp32;
    # 3: (x * g) in fp16, the share again as 1 where fp16 may not have held it (fp16 with x pipelined)
    ALIGNED: tl.constexpr,  # K, N and the row strides are multiples of 8 elements (see lib.tiles.aligned8)
    PIPELINED_X: tl.constexpr,  # x and g loaded in the step that uses them, the squares by the tensor cores
    # (``pipelined_x``); otherwise loaded one step ahead by hand, the squares summed in registers
    G_TOP: tl.constexpr,  # PRECISION 3: fp16's check from max|g| kept per step in the loop (True) or from the
    # product and the first step's g (False); see ``g_top_for``
    OUTLINED: tl.constexpr,  # PRECISION 3: the TF32 share again (and the product check's max|g|) as calls of their
    # own (``_tf32_share_outlined``), not code between the loop and the epilogue; see ``_tf32_share_outlined``
    FOLDED: tl.constexpr,  # w is ``diag(g) W`` (``ops.PreparedRMSNormLinear``): g is not read, x's tiles go to the
    # product as they are (PRECISION 0 or 2: in fp16 too, since nothing is formed that fp16 might not hold)
):
    split, tile, pid_m, pid_n, k_start, k_end = split_k.program_tile(SPLIT_K, K_PER_SPLIT, K, N, BLOCK_N)
    # rows past M masked where x moves as cp.async copies (x pipelined): wrapped, 1x2048x5504 took 1.23x cuBLAS
    # against 1.03x masked (H100); x loaded ahead by hand uses plain loads, which meet the repeats in L1
    offs_m, row_ok = split_k.tile_rows(pid_m, M, BLOCK_M, PIPELINED_X)
    offs_n = split_k.tile_cols(pid_n, N, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_rows = offs_m[:, None].to(tl.int64) * stride_xm
    w_rows = (k_start + offs_k[:, None]) * stride_wk
    if ALIGNED:  # promises kprof.kernels.lib.tiles.aligned8 checked; they must sit in the kernel body
        x_rows = tl.multiple_of(x_rows, [8, 8])
        w_rows = tl.multiple_of(w_rows, [8, 8])
        offs_n = tl.max_contiguous(tl.multiple_of(offs_n, 8), 8)
    x_ptrs = x_ptr + x_rows + (k_start + offs_k[None, :]) * stride_xk
    w_ptrs = w_ptr + w_rows + offs_n[None, :].to(tl.int64) * stride_wn
    g_ptrs = g_ptr + k_start + offs_k
    # the bias before the loop, its latency under the loop's: read in the epilogue after it, it cost up to 1.5 us
    # (3.5%) at 1-16 x 2048-4096 x 5504-14336 (H100: faster early in 52 of 56 pairs raced, bf16 and fp16, the other
    # 4 within 0.11 us; past N the columns wrap, and their stores are masked)
    bias = tl.load(b_ptr + offs_n).to(tl.float32) if HAS_BIAS else None

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if PIPELINED_X:
        # x and g loaded in the step that uses them, so the compiler pipelines them into shared memory as it does
        # W; the squares are the diagonal of x @ x^T on the tensor cores (exact products, fp32 sums). Summing
        # them from the x tile in registers instead (per step or per element) kept x off that path: 1.63-1.71x
        # cuBLAS where the same loop without the squares took 1.00-1.02x (H100, bf16, 4-16 x 2048 x 5504 in the
        # plain product's tiles)
        gram = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
        g_top = tl.zeros([BLOCK_K], dtype=tl.float32)  # max|g| per column of a step (PRECISION 3 with G_TOP)
        if PRECISION == 3 and not G_TOP:  # the share's first step of g: max|g| over it is at most max|g|
            g_first = tl.load(g_ptrs, mask=offs_k < k_end - k_start, other=0.0)
        for k in range(k_start, k_end, BLOCK_K):
            here = offs_k < k_end - k
            if ALIGNED:
                here = tl.max_constancy(here, 8)
            xr = tl.load(x_ptrs, mask=row_ok[:, None] & here[None, :], other=0.0)
            w = tl.load(w_ptrs, mask=here[:, None], other=0.0)
            if PRECISION == 2:
                xf = xr.to(tl.float32)
                gram = tl.dot(xf, tl.trans(xf), gram, input_precision="ieee")
            else:
                gram = tl.dot(xr, tl.trans(xr), gram)
            if FOLDED:
                acc = _product(xr, w, acc, PRECISION)
            else:
                gk = tl.load(g_ptrs, mask=here, other=0.0)
                acc = _scaled_product(xr, gk, w, acc, PRECISION)
                if PRECISION == 3 and G_TOP:
                    g_top = tl.maximum(g_top, tl.abs(gk.to(tl.float32)))
            x_ptrs += BLOCK_K * stride_xk
            w_ptrs += BLOCK_K * stride_wk
            g_ptrs += BLOCK_K
        diagonal = tl.arange(0, BLOCK_M)[:, None] == tl.arange(0, BLOCK_M)[None, :]
        ss = tl.sum(tl.where(diagonal, gram, 0.0), axis=1)
        if PRECISION == 3:
            # In 256-wide steps max|g| of the share is kept in the loop. In 64-wide ones keeping it took 1-16 x
            # 2048 x 14336 from 22.5-22.7 to 25.6-25.7 us, and reading it again after the loop cost 0.3-0.7 us
            # against the product's own check (H100), which reads g again only where a bound from its first step
            # does not settle the rms check.
            if G_TOP:
                missed = _fp16_missed(ss, row_ok, tl.max(g_top, axis=0), k_end - k_start)
            else:
                g_low = tl.max(tl.abs(g_first.to(tl.float32)), axis=0)
                missed = _fp16_missed_product(acc, ss, row_ok, g_low, g_ptr, k_start, k_end, OUTLINED)
            if missed and OUTLINED:  # the share into this program's slot of the parts, then read back from it
                part_at = part_ptr + split.to(tl.int64) * M * N
                _tf32_share_outlined(x_ptr, g_ptr, w_ptr, part_at, pid_m, pid_n, M, N, k_start, k_end, stride_xm,
                                     stride_xk, stride_wk, stride_wn, BLOCK_M, BLOCK_N)  # fmt: skip
                tl.debug_barrier()  # another thread of the program may have stored the element a thread reads
                _, out_mask, out_offs = split_k.output_tile(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
                acc = tl.load(part_at + out_offs, mask=out_mask, other=0.0)
            elif missed:
                acc = _tf32_share(x_ptr, g_ptr, w_ptr, offs_m, row_ok, offs_n, k_start, k_end, stride_xm, stride_xk,
                                  stride_wk, stride_wn, BLOCK_M, BLOCK_N)  # fmt: skip
    else:
        # x and g are loaded one step ahead by hand: the compiler pipelines only loads that feed the product
        # directly (W's), and a load of x used in the same step for the squares stalled every step on its latency
        first = offs_k < k_end - k_start
        if ALIGNED:  # K and each program's share are multiples of 8: the masks are constant over runs of 8
            first = tl.max_constancy(first, 8)
        x_next = tl.load(x_ptrs, mask=first[None, :], other=0.0)
        g_next = _g_step(g_ptrs, first, BLOCK_K, FOLDED)
        ss = tl.zeros([BLOCK_M], dtype=tl.float32)
        for k in range(k_start, k_end, BLOCK_K):
            x = x_next
            gk = g_next
            ahead = offs_k < k_end - k - BLOCK_K  # all false on the last step: nothing is read
            if ALIGNED:
                ahead = tl.max_constancy(ahead, 8)
            x_next = tl.load(x_ptrs + BLOCK_K * stride_xk, mask=ahead[None, :], other=0.0)
            g_next = _g_step(g_ptrs + BLOCK_K, ahead, BLOCK_K, FOLDED)
            w = tl.load(w_ptrs, mask=(offs_k < k_end - k)[:, None], other=0.0)
            xf = x.to(tl.float32)
            ss += tl.sum(xf * xf, axis=1)
            acc = _product(x, w, acc, PRECISION) if FOLDED else _scaled_product(x, gk, w, acc, PRECISION)
            x_ptrs += BLOCK_K * stride_xk
            w_ptrs += BLOCK_K * stride_wk
            g_ptrs += BLOCK_K

    _finish_tile(
        y_ptr, bias, part_ptr, ss_ptr, count_ptr, acc, ss, split, tile, pid_m, pid_n, M, N, K, SPLIT_K, eps,
        BLOCK_M, BLOCK_N,
    )  # fmt: skip


@triton.jit
def _finish_tile(
    y_ptr, bias, part_ptr, ss_ptr, count_ptr, acc, ss, split, tile, pid_m, pid_n, M, N, K, SPLIT_K, eps,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """The output tile from this program's partial product ``acc`` and partial sums of squares ``ss``: written
    directly where K is not split; otherwise stored as a part, and the program that draws its tile's last ticket
    adds the parts in slot order, scales the rows by rstd, adds ``bias`` (the tile's, fp32, or None) and puts the
    counter back to zero."""
    cols, mask, tile_offs = split_k.output_tile(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
    if SPLIT_K == 1:  # a constant where the launch has one program per tile (Triton specialises 1)
        _split_k_epilogue(y_ptr, bias, acc, ss, tile_offs, mask, K, eps)
    else:
        tl.store(part_ptr + split.to(tl.int64) * M * N + tile_offs, acc, mask=mask)
        slots = tl.arange(0, BLOCK_M)
        tl.store(ss_ptr + tl.program_id(0).to(tl.int64) * BLOCK_M + slots, ss)
        if split_k.take_ticket(count_ptr, tile) == SPLIT_K - 1:
            total = split_k.sum_parts(part_ptr + tile_offs, mask, M * N, SPLIT_K, BLOCK_M, BLOCK_N)
            ss_total = tl.zeros([BLOCK_M], dtype=tl.float32)
            ss_parts = ss_ptr + tile.to(tl.int64) * SPLIT_K * BLOCK_M + slots
            for _ in range(0, SPLIT_K):  # slot order, from L2 (see split_k.sum_parts)
                ss_total += tl.load(ss_parts, cache_modifier=".cg")
                ss_parts += BLOCK_M
            _split_k_epilogue(y_ptr, bias, total, ss_total, tile_offs, mask, K, eps)
            split_k.release(count_ptr, tile)


@triton.jit
def _g_step(g_ptrs, mask, BLOCK_K: tl.constexpr, FOLDED: tl.constexpr):
    """One step's g, loaded ahead; zeros that nothing reads where g is folded into w (the loop keeps no load)."""
    if FOLDED:
        return tl.zeros([BLOCK_K], dtype=g_ptrs.dtype.element_ty)
    return tl.load(g_ptrs, mask=mask, other=0.0)


@triton.jit
def _product(x, w, acc, PRECISION: tl.constexpr):
    """``acc + x @ w`` for one step's tiles where g is folded into w: x's own 16-bit values (PRECISION 0), or
    fp32 tiles and IEEE products (2: fp32, and the interpreter, whose bf16 dot is wrong)."""
    if PRECISION == 2:
        return tl.dot(x.to(tl.float32), w.to(tl.float32), acc, input_precision="ieee")
    return tl.dot(x, w, acc)


@triton.jit
def _scaled_product(x, gk, w, acc, PRECISION: tl.constexpr):
    """``acc + (x * g) @ w`` for one step's tiles, at the kernel's PRECISION."""
    a = x.to(tl.float32) * gk.to(tl.float32)[None, :]
    if PRECISION == 0 or PRECISION == 3:
        return tl.dot(a.to(w.dtype), w, acc)
    elif PRECISION == 1:
        return tl.dot(a, w.to(tl.float32), acc, input_precision="tf32")
    else:
        return tl.dot(a, w.to(tl.float32), acc, input_precision="ieee")


@triton.jit
def _fp16_missed(ss, row_ok, g_max, share):
    """Whether fp16 may not have held some x * g of a program's share, checked from the rows' sums of squares
    ``ss`` over the share and max|g| over it, so the product's loop does no reduction. It held them where
    |x g| <= ||x|| max|g| <= 65504 (no overflow) and each row's rms times max|g| is at least 2^-8: a product
    under fp16's smallest normal, 2^-14, is then 64x under the row's typical one, and its rounding error (at
    most 2^-25) under fp16's own relative step there. inf in x or g misses; NaN reaches the output on either
    path, as it reaches the reference's."""
    bound = tl.max(tl.sqrt(ss), axis=0) * g_max
    return (bound > 65504.0) | (_rms_min(ss, row_ok, share) * g_max < 0.00390625)


@triton.jit
def _fp16_missed_product(acc, ss, row_ok, g_low, g_ptr, k_start, k_end, OUTLINED: tl.constexpr = False):
    """``_fp16_missed``'s answer from the product ``acc`` and ``g_low``, max|g| over part of the share (so at most
    max|g|): an x * g over 65504 is inf in fp16, and inf times any w is inf or NaN, while fp32 sums of finite
    fp16 products cannot overflow, so fp16 held every x * g exactly where ``acc`` is finite (with finite inputs).
    The rms check passes where a row's rms times ``g_low`` is at least 2^-8; only where it does not is max|g| read
    over the whole share (``OUTLINED``: by a call of its own, ``_g_max_outlined``)."""
    nonfinite = tl.max(tl.max(tl.where(tl.abs(acc) < float("inf"), 0, 1), axis=1), axis=0)  # NaN too
    rms_min = _rms_min(ss, row_ok, k_end - k_start)
    missed = (nonfinite > 0) | (rms_min * g_low < 0.00390625)
    if missed and OUTLINED:  # rare: rows this small, or the first step's g
        missed = (nonfinite > 0) | (rms_min * _g_max_outlined(g_ptr, k_start, k_end) < 0.00390625)
    elif missed:
        missed = (nonfinite > 0) | (rms_min * _g_max(g_ptr, k_start, k_end, 2048) < 0.00390625)
    return missed


@triton.jit
def _rms_min(ss, row_ok, share):
    """The smallest rms over a share of ``share`` columns among the rows in the tile, from their sums of squares."""
    return tl.min(tl.where(row_ok, tl.sqrt(ss / share), float("inf")), axis=0)


@triton.jit
def _g_max(g_ptr, k_start, k_end, CHUNK: tl.constexpr):
    """max|g| over ``g[k_start:k_end]``, CHUNK at a time."""
    offs = tl.arange(0, CHUNK)
    top = tl.zeros([CHUNK], dtype=tl.float32)
    for k in range(k_start, k_end, CHUNK):
        top = tl.maximum(top, tl.abs(tl.load(g_ptr + k + offs, mask=offs < k_end - k, other=0.0).to(tl.float32)))
    return tl.max(top, axis=0)


@triton.jit(noinline=True)
def _g_max_outlined(g_ptr, k_start, k_end):
    """``_g_max`` in chunks of 2048 as a function of its own (``noinline``; see ``_tf32_share_outlined``)."""
    return _g_max(g_ptr, k_start, k_end, 2048)


@triton.jit
def _tf32_share(
    x_ptr, g_ptr, w_ptr, offs_m, row_ok, offs_n, k_start, k_end, stride_xm, stride_xk, stride_wk, stride_wn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """A program's share of ``(x * g) @ W`` with fp32 tiles and TF32 products (PRECISION 1), for the shares fp16
    may not have held. Not pipelined and in 64-wide steps: a rare path, kept out of the way of the fast one (its
    pipelined form in the same kernel cost the fast path 1.5-2 us at 1-16 x 2048 x 5504 on an H100)."""
    offs_k = tl.arange(0, 64)
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + (k_start + offs_k[None, :]) * stride_xk
    w_ptrs = w_ptr + (k_start + offs_k[:, None]) * stride_wk + offs_n[None, :].to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in tl.range(k_start, k_end, 64, num_stages=1):
        here = offs_k < k_end - k
        xr = tl.load(x_ptrs, mask=row_ok[:, None] & here[None, :], other=0.0)
        gk = tl.load(g_ptr + k + offs_k, mask=here, other=0.0)
        w = tl.load(w_ptrs, mask=here[:, None], other=0.0)
        acc = _scaled_product(xr, gk, w, acc, 1)
        x_ptrs += 64 * stride_xk
        w_ptrs += 64 * stride_wk
    return acc


@triton.jit(noinline=True)
def _tf32_share_outlined(
    x_ptr, g_ptr, w_ptr, part_at, pid_m, pid_n, M, N, k_start, k_end, stride_xm, stride_xk, stride_wk, stride_wn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """``_tf32_share`` as a function of its own (``noinline``), its tile stored at ``part_at`` (a contiguous [M, N]):
    its code is then not placed between the kernel's main loop and its epilogue. Never run on in-range inputs, that
    code still cost the fast path 1.0-1.4 us in 256-wide steps at 1-16 x 2048 x 5504 (H200); as a call it costs
    nothing measurable: the checked kernel 9.50-9.71 us against 10.66-10.74 inlined, 9.57-9.73 for the checks with
    no second loop at all (a bound, an earlier run) and 9.09-9.12 unchecked
    (benchmarks/results/split-k/h200-fp16-check/). Triton passes a call scalars only, and Triton 3.6
    returns no tile from one (3.9 does), so the tile's rows and columns are made again here, as the kernel makes
    them with x pipelined, and the tile goes back through memory."""
    offs_m, row_ok = split_k.tile_rows(pid_m, M, BLOCK_M, True)
    offs_n = split_k.tile_cols(pid_n, N, BLOCK_N)
    acc = _tf32_share(x_ptr, g_ptr, w_ptr, offs_m, row_ok, offs_n, k_start, k_end, stride_xm, stride_xk,
                      stride_wk, stride_wn, BLOCK_M, BLOCK_N)  # fmt: skip
    _, mask, tile_offs = split_k.output_tile(pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
    tl.store(part_at + tile_offs, acc, mask=mask)


@triton.jit
def _split_k_epilogue(y_ptr, bias, acc, ss, tile_offs, mask, K, eps):
    """y = acc * rstd (+ bias, unless None) for a tile whose whole product and sums of squares are in ``acc`` and
    ``ss``."""
    out = acc * tl.rsqrt(ss / K + eps)[:, None]
    if bias is not None:
        out += bias[None, :]
    tl.store(y_ptr + tile_offs, out.to(y_ptr.dtype.element_ty), mask=mask)


def g_top_for(block_k: int) -> bool:
    """The kernel's G_TOP (fp16's check with x pipelined) for steps of ``block_k`` columns: max|g| kept in the loop
    from 256-wide steps, the product's check in narrower ones (the choice measured on H100s, in the kernel's
    comment). On an H200 the product's check in 256-wide steps was slower at 1-16 x 2048-4096 x 5504 (11.0 against
    10.8 us at K 2048) and within 1.2% either way at 11008 and 14336 columns
    (benchmarks/results/split-k/h200-fp16-check/)."""
    return block_k >= 256


def precision_of(dtype: torch.dtype, pipelined: bool = False, folded: bool = False) -> int:
    """The kernel's PRECISION for inputs of ``dtype``, x pipelined or not, g folded into w or not (IEEE under the
    interpreter, whose bf16 dot is wrong; its fp16 dot is right, so fp16's guarded products run there too). Folded,
    fp16 multiplies x's own values, which it holds by definition: no check, no TF32."""
    if folded:
        return 2 if dtype == torch.float32 or (launching.interpreting() and dtype == torch.bfloat16) else 0
    if dtype == torch.float16 and pipelined:
        return 3
    if dtype == torch.float32 or launching.interpreting():
        return 2
    return 1 if dtype == torch.float16 else 0


def launch_split_k(
    x2d: torch.Tensor,
    g: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor | None,
    y: torch.Tensor,
    eps: float,
    config: triton.Config,
    folded: bool = False,
) -> tuple[dict, dict]:
    """``rmsnorm(x2d) * g @ w (+ b)`` into ``y`` [M, N] with ``config``'s BLOCK_M/N/K and SPLIT_K; ``folded``: ``w``
    is ``diag(g) W`` (``fused.folded_weight``) and g is not read. Returns the (meta-parameters, launch options) it ran
    with: every constexpr, and the SPLIT_K and K_PER_SPLIT passed."""
    m, k = x2d.shape
    n = w.shape[1]
    meta = dict(config.kwargs)
    bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
    splits, k_per_split = split_k.k_ranges(k, meta.pop("SPLIT_K"), bk)
    tile_count = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    parts, total = workspace_floats(m, n, bm, bn, splits)
    ws = torch.empty(total, dtype=torch.float32, device=x2d.device)
    part, ss = ws[:parts], ws[parts:]
    counts = launching.ticket_counters(x2d, tile_count)
    options = {} if launching.interpreting() else launching.config_options(config)
    meta.setdefault("PIPELINED_X", False)
    meta.setdefault("G_TOP", g_top_for(bk))
    meta.setdefault("OUTLINED", True)  # given False: a benchmark prices the second loop inlined
    meta.setdefault(
        "PRECISION", precision_of(x2d.dtype, meta["PIPELINED_X"], folded)
    )  # given: a benchmark prices a check
    meta.update(HAS_BIAS=b is not None, ALIGNED=tiles.promise_aligned(x2d, w), FOLDED=folded)
    args = kernel_args(x2d, g, w, b, y, part, ss, counts, splits, k_per_split, eps)
    _rmsnorm_linear_split_k_kernel[(tile_count * splits,)](*args, **meta, **options)
    return {**meta, "SPLIT_K": splits, "K_PER_SPLIT": k_per_split}, options


def kernel_args(
    x2d: torch.Tensor,
    g: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor | None,
    y: torch.Tensor,
    part: torch.Tensor,
    ss: torch.Tensor,
    counts: torch.Tensor,
    splits: int,
    k_per_split: int,
    eps: float,
) -> tuple:
    """The kernel's arguments before its meta-parameters, in its signature's order (``w`` stands in for a missing
    bias). The x-path benchmark's copy of the kernel takes the same ones first."""
    m, k = x2d.shape
    return (
        x2d, g, w, b if b is not None else w, y, part, ss, counts, m, w.shape[1], k, splits, k_per_split,
        x2d.stride(0), x2d.stride(1), w.stride(0), w.stride(1), float(eps),
    )  # fmt: skip


def workspace_floats(m: int, n: int, bm: int, bn: int, splits: int) -> tuple[int, int]:
    """(floats of the partial products, floats in all) of one call's fp32 workspace: the partial products, then
    each program's BLOCK_M partial sums of squares."""
    programs = triton.cdiv(m, bm) * triton.cdiv(n, bn) * splits
    return split_k.workspace_floats(splits * m * n, programs * bm)


# Tiles by column class: (BLOCK_N, BLOCK_K, stages, programs per SM the split aims at), 16-row tiles and 4 warps.
# Chosen from a cold race of 18 tiles x 5 split counts at 1, 4 and 16 rows x K 2048/4096/8192 x the four
# column classes, bf16 and fp16, on two H100s (benchmarks/results/split-k/): with these, the kernel is within
# 3.7% (bf16) and 5.0% (fp16) of the fastest candidate of every point of its class on both. fp32 takes fp16's,
# whose tiles are fp32 in registers too (not raced against other tiles; as shipped, 0.71-0.95x the two kernels
# at 4 and 16 rows on an H100, benchmarks/results/split-k/fp32-51cc417/).
SPLIT_TILES: dict[torch.dtype, dict[int, tuple[int, int, int, int]]] = {
    torch.bfloat16: {5504: (64, 64, 3, 2), 11008: (128, 64, 3, 2), 14336: (128, 64, 3, 2), 28672: (64, 64, 4, 1)},
    torch.float16: {5504: (64, 64, 3, 2), 11008: (128, 64, 3, 2), 14336: (128, 64, 3, 2), 28672: (128, 64, 3, 1)},
}


def column_class(n: int) -> int:
    """The measured column count nearest to ``n`` (the keys of ``SPLIT_TILES``' tables)."""
    return tiles.nearest(SPLIT_TILES[torch.bfloat16], n)


# With x pipelined (``PIPELINED_X``): (BLOCK_N, BLOCK_K, stages, programs per SM, largest K) by column class, bf16,
# 1 to 16 rows, 16-row tiles and 4 warps; 0 programs per SM: unsplit. Chosen from cold races of 8 tiles at 1, 4
# and 16 rows x K 2048/4096/8192 x the four column classes on H100s (benchmarks/results/split-k/x-path/), as a
# ratio to cuBLAS's product at 4 / 16 rows, against what the op ran before (this kernel with x loaded ahead, or
# the two kernels at 11008 columns): x2048x5504 1.038 / 1.020 (was 1.139 / 1.143), x4096x5504 1.038 / 0.990 (1.054
# / 1.046), x2048x11008 1.068 / 1.040 (1.103 / 1.071), x4096x11008 1.081 / 0.994 (1.078 / 1.014), x2048x14336
# 0.948 / 0.902 (1.045 / 1.022). At one row, with the rows past M masked: 1x2048x5504 0.997-1.030 (x loaded
# ahead 1.103-1.125), 1x2048x11008 1.049-1.063 (1.095-1.135), 1x4096x14336 0.884-0.909 (0.914-0.952). Past the
# largest K and at 28672 columns x loaded ahead was level or faster (4x8192x11008: 0.943 against 0.996).
# Squares summed as (x * x) @ ones ran 0.5-3% faster but round each square to bf16 first.
# fp16 (PRECISION 3: fp16 products, checked after the loop, the share again in TF32 where fp16 may not have held
# it) at 5504 and 14336 columns, in bf16's tiles (benchmarks/results/split-k/x-path/fp16-guard/, H100s): at
# 1/4/16 x 2048 x 5504 11.87-11.94 us, 1.09-1.11x cuBLAS, against 13.15-13.39 for the TF32 kernel and 12.40-13.14
# for the two kernels; at 1/16 x 2048/4096 x 14336 0.92-0.95x cuBLAS, against 0.95-1.05x for the TF32 kernel and
# 0.93-1.06x for the two kernels. At 11008 columns it was level with the two kernels until the 64-wide steps
# checked the product instead of reading max|g| again, and the bias was loaded before the loop: 1x2048x11008
# then 1.058x cuBLAS against 1.095x for the two kernels (benchmarks/results/split-k/x-path/fp16-product-check/).
PIPELINED_TILES: dict[torch.dtype, dict[int, tuple[int, int, int, int, int]]] = {
    torch.bfloat16: {5504: (64, 256, 3, 0, 8192), 11008: (64, 64, 4, 1, 4096), 14336: (64, 64, 4, 1, 4096)},
    torch.float16: {5504: (64, 256, 3, 0, 8192), 11008: (64, 64, 4, 1, 4096), 14336: (64, 64, 4, 1, 4096)},
}
PIPELINED_ROWS = (1, 16)

# On an H200 (``launching.fast_memory``): x pipelined in these tiles, per column class a list of (least K, largest K,
# (BLOCK_N, BLOCK_K, stages, programs per SM; 0: unsplit)), 1 to 16 rows. Raced there cold against every tile of
# ``rmsnorm_linear_split_k.py --pipelined`` (18 tiles x 5 split counts, x pipelined or loaded ahead) at 1, 4 and 16
# rows x K 2048, 4096 and 8192 x the four column classes, bf16 and fp16, each point on two GPUs
# (``benchmarks/results/split-k/h200-pipelined/``); a K between two raced takes the nearer one's tiles. In sample,
# each entry is within 2.1% of the fastest candidate at every point of its range, and took 0.81-1.01x the time of
# what the op ran there before (the H100's tables), e.g. 1x8192x5504 fp16 30.4-30.5 -> 24.9-25.1 us against
# cuBLAS's product's 25.7-26.5, 1x2048x28672 fp16 (TF32 steps before) 32.8-33.0 -> 29.1-29.8. The K 4096-8192
# entries were raced again after they shipped, on four more GPUs (the decode grids, and every decode class): the
# op within 1.10x cuBLAS at those K but at 4x4096x5504 fp16 (1.13x) and, in the grid, 1x4096x5504 fp16 (1.15x,
# its cases spread 12.7%). The K 2048 entries, raced again after they shipped in the decode grids on another H200
# (``benchmarks/results/grid/h200-407b653/``): the op within 1.02x of the best kprof version at 35 and 33 of 36
# points (bf16, fp16), within 1.10x cuBLAS but at fp16 x2048x5504 (1.22-1.24x; missed there before as well). The
# H200's memory streams the weight faster, so deeper splits (5504) and wider steps (11008) pay where the H100's did
# not. fp16's check at 5504 columns: with the TF32 loop it never runs placed between the loop and the epilogue, it
# cost 1.5-1.9 us in the 256-wide steps bf16 takes, where unchecked fp16 ran at bf16's 9.1 us, so fp16 took 64-wide
# steps there. With that loop a call of its own (``OUTLINED``) fp16 at K 2048 takes bf16's tiles: 9.50-9.71 against
# 10.13-10.34 us at 1/4/16 x 2048 x 5504 (unchecked 9.09-9.12), two H200s; from K 4096 the 64-wide steps stay,
# 0.1-0.4 us ahead of the 256-wide ones outlined (benchmarks/results/split-k/h200-fp16-check/outlined-*/).
# Left with the H100's tables: bf16 14336 and 28672 from K 4096, fp16 14336 at K 2048, where the op ran within 4.5% of
# the fastest candidate.
_FAST_MEMORY_PIPELINED: dict[torch.dtype, dict[int, tuple[tuple[int, int, tuple[int, int, int, int]], ...]]] = {
    torch.bfloat16: {
        5504: ((2048, 3072, (64, 256, 4, 0)), (3073, 8192, (64, 64, 4, 2))),
        11008: ((2048, 8192, (128, 256, 3, 0)),),
        28672: ((2048, 3072, (128, 64, 3, 0)),),
    },
    torch.float16: {
        5504: ((2048, 3072, (64, 256, 4, 0)), (3073, 8192, (64, 64, 4, 2))),
        11008: ((2048, 8192, (128, 256, 3, 0)),),
        14336: ((3073, 8192, (128, 256, 3, 0)),),
        28672: ((2048, 3072, (128, 64, 3, 0)), (3073, 8192, (256, 64, 4, 0))),
    },
}


# On an H200, the kernel on a folded weight (``FOLDED``, 16-bit) at 5504 columns: (least K, largest K, tiles) as above.
# With no check to make, bf16's 256-wide unsplit steps (the table's K 2048 entry) won from K 4096 as well: raced
# folded over every pipelined tile x split count at 1/4/16 rows x K 4096/6144/8192, both dtypes, on one H200
# (``benchmarks/results/split-k/h200-folded-tiles-a30e587/``), they were the fastest at all 18 points, 0.89-0.93x the
# table's 64-wide steps split 4 ways there (1x4096x5504 fp16 13.30 against 14.61 us, cuBLAS's product 13.62; x8192
# 23.04-23.12 against 24.34-25.31). At 14336 and 28672 columns (K 4096 and 8192) the fastest folded candidate of each
# point took 0.955-1.002x the plain op's time, in five different tiles: nothing there, and ``folded_serves`` holds.
_FAST_MEMORY_FOLDED: dict[int, tuple[tuple[int, int, tuple[int, int, int, int]], ...]] = {
    5504: ((2048, 8192, (64, 256, 4, 0)),),
}


def fast_memory_folded_tiles(m: int, k: int, n: int) -> tuple[int, int, int, int] | None:
    """The H200's tiles for the kernel on a folded 16-bit weight (``_FAST_MEMORY_FOLDED``) at M x K x N, or None."""
    if not PIPELINED_ROWS[0] <= m <= PIPELINED_ROWS[1]:
        return None
    return _tiles_at(_FAST_MEMORY_FOLDED.get(column_class(n), ()), k)


def fast_memory_pipelined_tiles(k: int, n: int, dtype: torch.dtype) -> tuple[int, int, int, int] | None:
    """The H200 table's (``_FAST_MEMORY_PIPELINED``) tiles at K and N's column class, or None where it has none."""
    return _tiles_at(_FAST_MEMORY_PIPELINED.get(dtype, {}).get(column_class(n), ()), k)


def _tiles_at(entries: tuple, k: int) -> tuple[int, int, int, int] | None:
    """The tiles of the (least K, largest K, tiles) entry whose K range holds ``k``, or None."""
    return next((tiles for least_k, largest_k, tiles in entries if least_k <= k <= largest_k), None)


def pipelined_tiles(
    m: int, k: int, n: int, dtype: torch.dtype, fast_memory: bool = False
) -> tuple[int, int, int, int] | None:
    """(BLOCK_N, BLOCK_K, stages, programs per SM) of the kernel with x pipelined at M x K x N, or None where x is
    loaded ahead (``SPLIT_TILES``). ``fast_memory``: on an H200 (``launching.fast_memory``), whose own table
    (:func:`fast_memory_pipelined_tiles`) comes first."""
    if not PIPELINED_ROWS[0] <= m <= PIPELINED_ROWS[1]:
        return None
    fast = fast_memory_pipelined_tiles(k, n, dtype) if fast_memory else None
    if fast is not None:
        return fast
    cls = PIPELINED_TILES.get(dtype, {}).get(column_class(n))
    return cls[:4] if cls is not None and k <= cls[4] else None


def pipelined_x(m: int, k: int, n: int, dtype: torch.dtype, fast_memory: bool = False) -> bool:
    """Whether the kernel runs with x pipelined (:func:`pipelined_tiles`) at M x K x N."""
    return pipelined_tiles(m, k, n, dtype, fast_memory) is not None


def config_for(x2d: torch.Tensor, n: int, folded: bool = False) -> triton.Config:
    """The split-K config of ``x2d`` [M, K] times an [K, n] weight: the column class's tiles, K split so the
    launch has about the class's programs per SM (none split where that is 0); x pipelined where
    :func:`pipelined_tiles` says (on an H200 its own table). ``folded`` (g in the weight): fp16 takes bf16's tiles,
    its loop then being bf16's with no check, and on an H200 the folded table (:func:`fast_memory_folded_tiles`)
    comes first."""
    m, k = x2d.shape
    dtype = torch.bfloat16 if folded and x2d.dtype == torch.float16 else x2d.dtype
    fast = launching.fast_memory(x2d)
    own = fast_memory_folded_tiles(m, k, n) if folded and fast and dtype == torch.bfloat16 else None
    piped = own or pipelined_tiles(m, k, n, dtype, fast)
    bn, bk, stages, per_sm = piped or SPLIT_TILES.get(dtype, SPLIT_TILES[torch.float16])[column_class(n)]
    splits = split_k.split_count(m, k, n, 16, bn, bk, per_sm * launching.sm_count(x2d)) if per_sm else 1
    return split_k.config(16, bn, bk, splits, 4, stages, PIPELINED_X=piped is not None)


# On an H200 the prepared objects (g folded into W) take this kernel on the fold at 1-16 16-bit rows where N lies
# between the column classes as well, where the plain op takes the norm then cuBLAS's product or kprof's (the classes'
# width, ``tuned.SPLIT_K_CLASS_WIDTH``, keeps the plain kernel out). Raced at the attention's fused QKV widths of public
# models (benchmarks/results/grid/h200-models/classes/split-k/, one H200, cold, 8 rounds): 1, 4 and 16 rows x K 3584,
# 4096 and 5120 x N 4608, 6144, 7168 and 8192, bf16 and fp16, the kernel on the fold in the nearest class's tiles (the
# 5504 class's, x pipelined) took 0.804-0.977x the prepared object's time (geometric mean 0.84-0.91 by N; 1x4096x6144
# bf16 14.43 against 15.94 µs, cuBLAS's product alone 15.68). The plain kernel there took 0.87-1.08x the norm then
# cuBLAS's product: the plain op keeps its route. With the rule, on other H200s (``h200-models/confirm/``,
# ``fp16/``), the prepared object ran this kernel at 2x3584x4608, 8x4096x6144, 12x5120x7168 and 1x4096x6144, the best
# kprof version there in both dtypes (0.80-0.91x torch.compile's time). At 3584 x 4608 no tile or split of the kernel
# does better than the class's (``h200-models/narrow/``): cuBLAS's product is 1.02-1.09x ahead there.
FAST_MEMORY_FOLDED_BETWEEN = ((3584, 5120), (4608, 8192))  # K (from, to), N (from, to)


def folded_between_classes(x2d: torch.Tensor, n: int) -> bool:
    """Whether an H200's prepared object takes this kernel on its fold for ``x2d`` [M, K] times [K, n] where the plain
    op does not (``FAST_MEMORY_FOLDED_BETWEEN``): 1-16 16-bit rows, K and N in the raced ranges, x pipelined."""
    m, k = x2d.shape
    (k_lo, k_hi), (n_lo, n_hi) = FAST_MEMORY_FOLDED_BETWEEN
    return (
        launching.fast_memory(x2d)
        and x2d.dtype in (torch.bfloat16, torch.float16)
        and PIPELINED_ROWS[0] <= m <= PIPELINED_ROWS[1]
        and k_lo <= k <= k_hi
        and n_lo <= n <= n_hi
        and folded_serves(x2d, n)
    )


def folded_serves(x2d: torch.Tensor, n: int) -> bool:
    """Whether ``ops.PreparedRMSNormLinear`` takes this kernel on its folded weight for ``x2d`` [M, K] times [K, n],
    where the plain op takes the split-K kernel: only where the folded config pipelines x.

    Why: against the plain kernel in the op's own configs (cold, one H200, 1/4/16 rows x K 2048/4096/8192 x the four
    column classes, bf16 and fp16; ``benchmarks/results/split-k/h200-folded-dc92576/``), folded with x pipelined took
    0.885-1.012x its time at 54 points, x2048x5504 0.885-0.934x (fp16 16x2048x5504 9.52 -> 8.54 us against cuBLAS's
    product's 8.90), since it reads no g and, in fp16, checks nothing. With x loaded ahead (K 8192 at 14336 and
    28672 columns) it took 0.977-1.107x at 18, and there the plain op runs."""
    return bool(config_for(x2d, n, folded=True).kwargs["PIPELINED_X"])


def split_k_op(
    x2d: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float, folded: bool = False
) -> torch.Tensor:
    """``rmsnorm(x2d) * g @ w (+ b)`` by the split-K kernel with the column class's config, for checked 2-D
    rows: [M, N] in x's dtype. ``folded``: ``w`` is ``diag(g) W`` (``fused.folded_weight``)."""
    n = w.shape[1]
    y = torch.empty((x2d.shape[0], n), dtype=x2d.dtype, device=x2d.device)
    launch_split_k(x2d, g.contiguous(), w, b, y, eps, config_for(x2d, n, folded), folded)
    return y


@FAMILY.provider(
    "triton_split_k",
    kind="triton",
    description="one kernel for a few rows: g on the x tiles, the squares summed from the same tiles, K split "
    "over programs, the last program of a column tile adds the parts and scales the rows by rstd",
)
def rmsnorm_linear_split_k(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    b = dense_vector(b)  # the kernels read the bias at unit stride
    x2d, n = check_inputs(x, g, w, b)
    return split_k_op(x2d, g, w, b, eps).view(*x.shape[:-1], n)


@FAMILY.provider(
    "triton_split_k_prepared",
    kind="triton",
    description="triton_split_k on prepared weights: g folded into W once per input set, before the timed calls "
    "(kernel time only), so x's tiles go to the product as they are (fp16 with no check); launched as "
    "ops.PreparedRMSNormLinear launches it at decode rows (a plan per signature after its first call), with the "
    "inputs checked on every call, which the ops object does only on a signature's first",
)
def rmsnorm_linear_split_k_prepared(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    b = dense_vector(b)  # the kernels read the bias at unit stride
    return prepared_version(x, g, w, b, eps, "split_k", lambda x2d, wf: split_k_op(x2d, g, wf, b, eps, folded=True))


# Public handle for op_plan (the ops API's launch plans).
split_k_kernel = _rmsnorm_linear_split_k_kernel
