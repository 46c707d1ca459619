"""One Triton kernel for all seeds, without branching on the state: every program loads its seed's
lifecycle, blueprint id and alpha from device memory, turns them into one blend coefficient
(0 dormant, 1 active, alpha grafting) and computes ``y = x + coef * (x @ W[id] + b[id] - x)``.

Dormant seeds still run their (tiny, C x C) product: a uniform branch would save FLOPs nobody is
short of, while the kernel is bound by moving x and y (2 x B x S x C elements). The exception is fp32 with
telemetry from 256 rows (``by_state_for``): there one branch per program copies a dormant seed's x and folds
the others' blend into the blueprint (``y = x @ (coef W + (1 - coef) I) + coef b``), which drops the copy of x
the blend keeps in the product's layout: 6-23% faster there on an H100. No state ever reaches
the host, so a forward pass makes no host<->device transfer. A blueprint id outside the registry
(negative, or at least its size) is clamped to blueprint 0 for the loads, so nothing is read out of
bounds, and flagged: that seed's outputs (its y columns and telemetry) are NaN.

Telemetry in this version is a PyTorch reduction after the kernel (a second pass over y);
``triton_telemetry`` fuses it into the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kprof.kernels.kasmina.family import FAMILY, check_inputs
from kprof.kernels.lib import launching, split_k
from kprof.kernels.lib.checks import dense_vector


@triton.jit
def _kasmina_forward_kernel(
    # pointers
    x_ptr,  # [rows, S*C] activations, rows `x_row_stride` apart
    y_ptr,  # [rows, S*C] output, contiguous
    lifecycle_ptr,  # [S] int8: 0 dormant, 1 active, 2 grafting
    blueprint_id_ptr,  # [S] int32
    alpha_ptr,  # [S] float32
    w_ptr,  # [NB, C, C] blueprint weights, contiguous
    b_ptr,  # [NB, C] blueprint biases, contiguous
    telemetry_ptr,  # [S, 2] float32 (mean, variance); only written when TELEMETRY
    part_ptr,  # [S, row programs, 3, BLOCK_C] float32: each program's (count, mean, M2) per column, when its
    # seed's rows are split over several programs with TELEMETRY
    count_ptr,  # [S] int32 tickets, zero between calls (used as part_ptr is)
    # sizes and strides
    n_rows,
    C,
    NB,  # blueprints in the registry: ids outside [0, NB) are flagged, never read
    x_row_stride,
    y_row_stride,
    # meta-parameters
    BLOCK_B: tl.constexpr,  # rows per tile (>= 16: tl.dot's minimum)
    BLOCK_C: tl.constexpr,  # power of two >= C (>= 16)
    TELEMETRY: tl.constexpr,  # accumulate each seed's output mean and variance
    PRECISION: tl.constexpr,  # 0: the inputs' dtype (bf16, fp16); 1: IEEE fp32 (the interpreter: its bf16 dot is
    # wrong); 2: fp32 as three TF32 products (tf32x3)
    K_CHUNK: tl.constexpr,  # rows of the blueprint per product step: BLOCK_C (all of it, loaded once) or fewer,
    # reloaded per row tile, where a whole fp32 blueprint does not fit shared memory (C > 128)
    BY_STATE: tl.constexpr,  # dormant seeds copy x; the others fold the blend into the blueprint (by_state_for)
    STATS: tl.constexpr,  # how a program sums its rows' statistics (TELEMETRY): see _walk
    EVEN: tl.constexpr,  # every row tile full and C == BLOCK_C: no row or column masks (see _walk)
    EARLY: tl.constexpr,  # 0: x loaded in the walk; 1: its first row tile before the seed's state; 2: and each next
    # tile a step ahead (see below)
):
    seed = tl.program_id(0)
    n_progs = tl.num_programs(1)
    cols = tl.arange(0, BLOCK_C)
    cmask = cols < C
    if EVEN:  # a constant mask, which the compiler drops from every load, store and select
        cmask = tl.full([BLOCK_C], True, tl.int1)
    col0 = seed.to(tl.int64) * C
    # With EARLY, the program's first row tile of x is loaded before its state: its address does not depend on it, so
    # its trip to memory overlaps the chain (the state, then the blueprint) that comes before the first product; with
    # EARLY 2 each next tile is loaded a step ahead too (_walk). Offline for sm_90 at 11 of the table's launches, 1
    # repeats the loop's body for the first tile (up to 432 bytes spilled, where 0 spilled at most 56) and 2 keeps one
    # body (0-46 registers more than 0, up to 184 bytes spilled): offline.md in benchmarks/results/kasmina-copy/
    # h200-branch-early/. On H200s each was faster in some classes and slower in others: the table
    # (FastMemoryTile.early) says which.
    x0 = cols  # a placeholder, not read with EARLY 0
    if EARLY:  # the first tile is always there: a program has at least one (clamp_row_programs)
        first_row = tl.program_id(1) * BLOCK_B
        x_tile = _row_offsets(x_row_stride, BLOCK_B)
        x0 = _x_tile(x_ptr, first_row, col0, x_tile, cols, cmask, n_rows, x_row_stride, BLOCK_B, EVEN)
    lifecycle = tl.load(lifecycle_ptr + seed).to(tl.int32)
    bid = tl.load(blueprint_id_ptr + seed).to(tl.int64)
    # clamp-and-flag: an id outside the registry reads blueprint 0 (in bounds) and the seed's outputs
    # (y and telemetry) become NaN, whatever its state; the eager path of kprof.kernels.ops does the same
    valid = (bid >= 0) & (bid < NB)
    bid = tl.where(valid, bid, 0)
    alpha = tl.load(alpha_ptr + seed)
    coef = tl.where(lifecycle == 1, 1.0, tl.where(lifecycle == 2, alpha, 0.0))
    # a flagged seed's blend coefficient is NaN, which makes every y of its product NaN: no select per element
    coef = tl.where(valid, coef, float("nan"))

    w_seed = w_ptr + bid * C * C
    if BY_STATE:  # a branch uniform over the program: dormant seeds copy x, the others run the folded product
        bias = tl.load(b_ptr + bid * C + cols, mask=cmask, other=0.0).to(tl.float32)
        if lifecycle == 0:
            cnt, mean, m2 = _walk(  # a copy: the blueprint argument (bias here) is not read
                x_ptr,
                y_ptr,
                w_seed,
                bias,
                bias,
                coef,
                valid,
                col0,
                cols,
                cmask,
                C,
                n_rows,
                x_row_stride,
                y_row_stride,
                BLOCK_B,
                BLOCK_C,
                TELEMETRY,
                PRECISION,
                K_CHUNK,
                2,
                STATS,
                EVEN,
                x0,
                EARLY,
            )
        else:
            folded = bias  # not read where the blueprint is stepped through (K_CHUNK < BLOCK_C)
            if K_CHUNK == BLOCK_C:
                folded = tl.load(
                    w_seed + cols[:, None] * C + cols[None, :], mask=cmask[:, None] & cmask[None, :], other=0.0
                )
                folded = _fold(folded, cols, cols, coef)
            cnt, mean, m2 = _walk(
                x_ptr,
                y_ptr,
                w_seed,
                folded,
                bias,
                coef,
                valid,
                col0,
                cols,
                cmask,
                C,
                n_rows,
                x_row_stride,
                y_row_stride,
                BLOCK_B,
                BLOCK_C,
                TELEMETRY,
                PRECISION,
                K_CHUNK,
                1,
                STATS,
                EVEN,
                x0,
                EARLY,
            )
    else:
        w = w_seed  # not read where the blueprint is stepped through (K_CHUNK < BLOCK_C)
        if K_CHUNK == BLOCK_C:
            w = tl.load(w_seed + cols[:, None] * C + cols[None, :], mask=cmask[:, None] & cmask[None, :], other=0.0)
        bias = tl.load(b_ptr + bid * C + cols, mask=cmask, other=0.0).to(tl.float32)
        cnt, mean, m2 = _walk(
            x_ptr,
            y_ptr,
            w_seed,
            w,
            bias,
            coef,
            valid,
            col0,
            cols,
            cmask,
            C,
            n_rows,
            x_row_stride,
            y_row_stride,
            BLOCK_B,
            BLOCK_C,
            TELEMETRY,
            PRECISION,
            K_CHUNK,
            0,
            STATS,
            EVEN,
            x0,
            EARLY,
        )
    if TELEMETRY:
        if n_progs == 1:
            _store_telemetry(telemetry_ptr, seed, cnt, mean, m2, cmask)
        else:  # the seed's rows are split: the program that draws the last ticket merges every program's part
            slot = part_ptr + (seed.to(tl.int64) * n_progs + tl.program_id(1)) * 3 * BLOCK_C + cols
            tl.store(slot, cnt)
            tl.store(slot + BLOCK_C, mean)
            tl.store(slot + 2 * BLOCK_C, m2)
            if split_k.take_ticket(count_ptr, seed) == n_progs - 1:
                first = part_ptr + seed.to(tl.int64) * n_progs * 3 * BLOCK_C + cols
                cnt, mean, m2 = _merge_parts(first, n_progs, BLOCK_C)
                _store_telemetry(telemetry_ptr, seed, cnt, mean, m2, cmask)
                split_k.release(count_ptr, seed)


@triton.jit
def _walk(
    x_ptr,
    y_ptr,
    w_seed,
    w,  # the whole blueprint (folded with MODE 1) where K_CHUNK == BLOCK_C; not read otherwise
    bias,
    coef,
    valid,
    col0,
    cols,
    cmask,
    C,
    n_rows,
    x_row_stride,
    y_row_stride,
    BLOCK_B: tl.constexpr,
    BLOCK_C: tl.constexpr,
    TELEMETRY: tl.constexpr,
    PRECISION: tl.constexpr,
    K_CHUNK: tl.constexpr,
    MODE: tl.constexpr,  # 0: y = x + coef (x W + b - x); 1: y = x (coef W + (1 - coef) I) + coef b; 2: y = x
    STATS: tl.constexpr,  # 0: each tile's (count, mean, M2) merged with Chan's formula; 1: sums of y and y^2
    # shifted by the program's first row, reduced over each tile's rows; 2: the same sums kept per element of the tile
    # and reduced over rows once, after the walk
    EVEN: tl.constexpr,  # every row tile full (rows a multiple of BLOCK_B; cmask then constant too)
    x0,  # the program's first row tile of x, loaded already where EARLY
    EARLY: tl.constexpr,
):
    """This program's row tiles of one seed: y written, and the per-column (count, mean, M2) of its rows."""
    n_progs = tl.num_programs(1)
    cnt = tl.zeros([BLOCK_C], dtype=tl.float32)
    mean = tl.zeros([BLOCK_C], dtype=tl.float32)
    m2 = tl.zeros([BLOCK_C], dtype=tl.float32)
    first = tl.program_id(1) * BLOCK_B
    step = BLOCK_B * n_progs
    walked = 0  # rows of this program (STATS 1 and 2)
    shift = tl.zeros([BLOCK_C], dtype=tl.float32)  # the program's first row of y (STATS 1 and 2)
    v1 = tl.zeros([BLOCK_C], dtype=tl.float32)  # STATS 1: per column, the sum of y - shift
    v2 = tl.zeros([BLOCK_C], dtype=tl.float32)  # and of its squares
    s1 = tl.zeros([BLOCK_B, BLOCK_C], dtype=tl.float32)  # STATS 2: the same per element of the tile
    s2 = tl.zeros([BLOCK_B, BLOCK_C], dtype=tl.float32)
    # a tile's addresses: its first row's, one scalar the walk advances (uniform registers), plus offsets fixed over
    # the walk; 64-bit row offsets per element and tile took 7-33 more instructions a tile (offline, sm_90)
    x_tile = _row_offsets(x_row_stride, BLOCK_B)
    y_tile = _row_offsets(y_row_stride, BLOCK_B)
    if EARLY == 1:  # the first tile, then the loop over the rest
        cnt, mean, m2, walked, shift, v1, v2, s1, s2 = _step(
            x0, first, first, x_ptr, y_ptr, w_seed, w, bias, coef, valid, col0, cols, cmask, C, n_rows,
            x_row_stride, y_row_stride, x_tile, y_tile, cnt, mean, m2, walked, shift, v1, v2, s1, s2,
            BLOCK_B, BLOCK_C, TELEMETRY, PRECISION, K_CHUNK, MODE, STATS, EVEN,
        )  # fmt: skip
    if EARLY == 2:  # each tile's x carried from the step before, which loaded it ahead of its own product
        x = x0
        for start in range(first, n_rows, step):
            # the rows past the last keep their mask (even where EVEN): the walk's last load moves no bytes
            x_next = _x_tile(x_ptr, start + step, col0, x_tile, cols, cmask, n_rows, x_row_stride, BLOCK_B, False)
            cnt, mean, m2, walked, shift, v1, v2, s1, s2 = _step(
                x, start, first, x_ptr, y_ptr, w_seed, w, bias, coef, valid, col0, cols, cmask, C, n_rows,
                x_row_stride, y_row_stride, x_tile, y_tile, cnt, mean, m2, walked, shift, v1, v2, s1, s2,
                BLOCK_B, BLOCK_C, TELEMETRY, PRECISION, K_CHUNK, MODE, STATS, EVEN,
            )  # fmt: skip
            x = x_next
    else:
        for start in range(first + EARLY * step, n_rows, step):
            x = _x_tile(x_ptr, start, col0, x_tile, cols, cmask, n_rows, x_row_stride, BLOCK_B, EVEN)
            cnt, mean, m2, walked, shift, v1, v2, s1, s2 = _step(
                x, start, first, x_ptr, y_ptr, w_seed, w, bias, coef, valid, col0, cols, cmask, C, n_rows,
                x_row_stride, y_row_stride, x_tile, y_tile, cnt, mean, m2, walked, shift, v1, v2, s1, s2,
                BLOCK_B, BLOCK_C, TELEMETRY, PRECISION, K_CHUNK, MODE, STATS, EVEN,
            )  # fmt: skip
    if TELEMETRY and STATS != 0:
        n = walked.to(tl.float32)
        sum1, sum2 = v1, v2
        if STATS == 2:
            sum1 = tl.sum(s1, axis=0)
            sum2 = tl.sum(s2, axis=0)
        cnt = tl.full([BLOCK_C], 0.0, tl.float32) + n
        mean = shift + sum1 / n
        m2 = tl.maximum(sum2 - sum1 * sum1 / n, 0.0)
    return cnt, mean, m2


@triton.jit
def _row_offsets(row_stride, BLOCK_B: tl.constexpr):
    """Each tile row's offset from the tile's first row, as a column (64-bit: a row may be past 2^31 elements)."""
    return (tl.arange(0, BLOCK_B).to(tl.int64) * row_stride)[:, None]


@triton.jit
def _x_tile(x_ptr, start, col0, x_tile, cols, cmask, n_rows, x_row_stride, BLOCK_B: tl.constexpr, EVEN: tl.constexpr):
    """The seed's row tile of x from row ``start`` (rows past ``n_rows`` read as 0 unless EVEN)."""
    rmask = (start + tl.arange(0, BLOCK_B)) < n_rows
    if EVEN:  # constant: the load loses its mask
        rmask = tl.full([BLOCK_B], True, tl.int1)
    x_rows = x_ptr + (tl.cast(start, tl.int64) * x_row_stride + col0) + x_tile
    return tl.load(x_rows + cols[None, :], mask=rmask[:, None] & cmask[None, :], other=0.0)


@triton.jit
def _step(
    x,  # the tile's x, loaded
    start,  # its first row
    first,  # the program's first row
    x_ptr,
    y_ptr,
    w_seed,
    w,
    bias,
    coef,
    valid,
    col0,
    cols,
    cmask,
    C,
    n_rows,
    x_row_stride,
    y_row_stride,
    x_tile,
    y_tile,
    cnt,
    mean,
    m2,
    walked,
    shift,
    v1,
    v2,
    s1,
    s2,
    BLOCK_B: tl.constexpr,
    BLOCK_C: tl.constexpr,
    TELEMETRY: tl.constexpr,
    PRECISION: tl.constexpr,
    K_CHUNK: tl.constexpr,
    MODE: tl.constexpr,
    STATS: tl.constexpr,
    EVEN: tl.constexpr,
):
    """One row tile of ``_walk`` (its arguments): y stored, and the walk's statistics with the tile's rows added."""
    rows = start + tl.arange(0, BLOCK_B)
    rmask = rows < n_rows
    if EVEN:  # constant: the store and the statistics' selects lose their masks
        rmask = tl.full([BLOCK_B], True, tl.int1)
    mask = rmask[:, None] & cmask[None, :]
    if MODE == 2:
        y = x.to(tl.float32)
    else:
        if K_CHUNK == BLOCK_C:
            bp = _product(x, w, tl.zeros([BLOCK_B, BLOCK_C], dtype=tl.float32), PRECISION)
        else:
            x_rows = x_ptr + (tl.cast(start, tl.int64) * x_row_stride + col0) + x_tile
            bp = tl.zeros([BLOCK_B, BLOCK_C], dtype=tl.float32)
            for kc in range(0, BLOCK_C, K_CHUNK):
                ks = kc + tl.arange(0, K_CHUNK)
                kmask = ks < C
                xk = tl.load(x_rows + ks[None, :], mask=rmask[:, None] & kmask[None, :], other=0.0)
                wk = tl.load(w_seed + ks[:, None] * C + cols[None, :], mask=kmask[:, None] & cmask[None, :], other=0.0)
                if MODE == 1:
                    wk = _fold(wk, ks, cols, coef)
                bp = _product(xk, wk, bp, PRECISION)
        if MODE == 1:
            y = bp + coef * bias[None, :]
        else:
            xf = x.to(tl.float32)
            y = xf + coef * (bp + bias[None, :] - xf)
    if MODE == 2:  # the copy has no coefficient to carry the flag
        y = tl.where(valid, y, float("nan"))
    y_rows = y_ptr + (tl.cast(start, tl.int64) * y_row_stride + col0) + y_tile
    tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    if TELEMETRY:
        if STATS == 0:
            n_b = tl.sum(rmask.to(tl.float32), axis=0)
            mean_b = tl.sum(tl.where(mask, y, 0.0), axis=0) / n_b
            d = tl.where(mask, y - mean_b[None, :], 0.0)
            cnt, mean, m2 = _chan(cnt, mean, m2, n_b, mean_b, tl.sum(d * d, axis=0))
        else:
            # Shifted by a value of the data, the sums keep fp32's precision where the mean is far from zero:
            # M2 = S2 - S1^2 / n cancels in proportion to (mean - shift)^2 / variance, not mean^2 / variance.
            if start == first:
                shift = tl.sum(tl.where(rows[:, None] == first, y, 0.0), axis=0)
            walked += tl.minimum(n_rows - start, BLOCK_B)
            d = tl.where(mask, y - shift[None, :], 0.0)
            if STATS == 1:
                v1 += tl.sum(d, axis=0)
                v2 += tl.sum(d * d, axis=0)
            else:
                s1 += d
                s2 += d * d
    return cnt, mean, m2, walked, shift, v1, v2, s1, s2


@triton.jit
def _fold(w, rows, cols, coef):
    """``coef * w + (1 - coef) * I`` for the blueprint rows ``rows`` and columns ``cols``, in w's dtype."""
    eye = tl.where(rows[:, None] == cols[None, :], 1.0 - coef, 0.0)
    return (coef * w.to(tl.float32) + eye).to(w.dtype)


@triton.jit
def _merge_parts(ptrs, n_parts, BLOCK_C: tl.constexpr):
    """Per column (count, mean, M2) of ``n_parts`` programs' parts, merged in slot order with Chan's formula
    (the result does not depend on which program finished last). ``.cg``: from L2, never a stale L1 line."""
    cnt = tl.zeros([BLOCK_C], dtype=tl.float32)
    mean = tl.zeros([BLOCK_C], dtype=tl.float32)
    m2 = tl.zeros([BLOCK_C], dtype=tl.float32)
    for _ in range(0, n_parts):
        c_p = tl.load(ptrs, cache_modifier=".cg")
        mean_p = tl.load(ptrs + BLOCK_C, cache_modifier=".cg")
        m2_p = tl.load(ptrs + 2 * BLOCK_C, cache_modifier=".cg")
        cnt, mean, m2 = _chan(cnt, mean, m2, c_p, mean_p, m2_p)
        ptrs += 3 * BLOCK_C
    return cnt, mean, m2


@triton.jit
def _chan(cnt, mean, m2, cnt_b, mean_b, m2_b):
    """(count, mean, M2) of two sets of values from each set's own (Chan's parallel-variance formula); a set
    without values changes nothing."""
    total = cnt + cnt_b
    share = tl.where(total > 0, cnt_b / tl.maximum(total, 1.0), 0.0)
    delta = mean_b - mean
    return total, mean + delta * share, m2 + m2_b + delta * delta * cnt * share


@triton.jit
def _store_telemetry(telemetry_ptr, seed, cnt, mean, m2, cmask):
    """The seed's (mean, variance) over all its columns, from per-column (count, mean, M2)."""
    cnt = tl.where(cmask, cnt, 0.0)
    n = tl.sum(cnt, axis=0)
    seed_mean = tl.sum(cnt * mean, axis=0) / n
    dm = tl.where(cmask, mean - seed_mean, 0.0)
    seed_m2 = tl.sum(tl.where(cmask, m2, 0.0) + cnt * dm * dm, axis=0)
    tl.store(telemetry_ptr + seed * 2, seed_mean)
    tl.store(telemetry_ptr + seed * 2 + 1, seed_m2 / n)


@triton.jit
def _product(x, w, acc, PRECISION: tl.constexpr):
    """``acc + x @ w`` in fp32 at the kernel's PRECISION."""
    if PRECISION == 1:
        return tl.dot(x.to(tl.float32), w.to(tl.float32), acc, input_precision="ieee")
    elif PRECISION == 2:
        return tl.dot(x, w, acc, input_precision="tf32x3")
    else:
        return tl.dot(x, w, acc)


def block_c(c: int) -> int:
    """The kernel's BLOCK_C for ``c`` channels: a power of two, at least 16 (tl.dot's minimum)."""
    return max(16, triton.next_power_of_2(c))


def precision_of(dtype: torch.dtype) -> int:
    """The kernel's PRECISION for inputs of ``dtype``: IEEE under the interpreter (its bf16 dot is wrong), tf32x3
    for fp32 on a GPU, the inputs' dtype otherwise. Why tf32x3 (benchmarks/results/kasmina-copy/, H100): in the
    same 16 x 4 tiles IEEE products took 1.21-1.25x as long (33.7 against 26.9 us at 64x1000x64, 213.6 against
    176.0 at 512x1000x64), and 117-612 us in 64-row tiles and 32-row tiles of 4 warps at 64x1000x64, where tf32x3
    runs fp32's fastest tiles; three TF32 products keep fp32's accuracy."""
    if launching.interpreting():
        return 1
    return 2 if dtype == torch.float32 else 0


def tile_for(n_rows: int, c: int, dtype: torch.dtype, telemetry: bool) -> tuple[int, int, int]:
    """(rows per tile, warps, blueprint rows per product step) for ``n_rows`` rows of ``c`` channels, raced on
    H100s (benchmarks/results/kasmina-copy/; benchmarks/results/catalog/tune_memory_bound.csv for 64 channels); an
    H200 takes ``fast_memory_tile``'s rows and warps first, where it has them.
    The blueprint is one product (all ``block_c(c)`` rows, loaded once) but in fp32 beyond 128 channels, whose
    256 x 256 fp32 blueprint needed 544-606 KB of shared memory as one product (an H100 has 227 KB).

    Independent tiles (no telemetry): 64 rows x 8 warps (13.0 us at 64x1000x64 against 13.4 us with 4 warps,
    14.0 us with 32-row tiles). With telemetry each program walks its seed's rows:
    - up to 64 channels in bf16/fp16: 16-row tiles x 2 warps below 256 rows (15.0 us at 64x1000x64 against 24.6
      for one 64-row tile x 4 warps), 64-row tiles x 2 warps from there (58.8 us at 512x1000x64 against 62.4);
    - 65-128 channels: 32-row tiles x 2 warps from 256 rows (124.9 us at 512x1000x128 against 196.9 with 64-row
      tiles); below, 16 x 2 as before: at 48x333x100 the fastest tile differed between two H100s (16 x 8 at 17.5
      us, 16 x 4 at 14.3; 16 x 2 took 18.8 and 17.8);
    - more than 128 channels: 32-row tiles x 8 warps (20.7-21.2 us at 64x250x256 against 67.7 with 16 x 2,
      which spilled: 255 registers and 428 bytes of spills against 142 and none, offline ptxas for sm_90);
    - fp32 (tf32x3 products), up to 64 channels: 32-row tiles x 2 warps (24.7 us at 64x1000x64, 148.3 at
      512x1000x64), 16 x 4 for one to 16 rows (10.1 us at 1x1000x64 against 11.3 as shipped before). From 64
      rows, where the kernel branches on the seeds' state (``by_state_for``): 16 x 2 up to 32 channels
      (64x1000x32 9.8-10.0 us against 17.0-17.1 in 32 x 2 without the branch, as the rule was; 512x1000x32
      59.6-60.0 against 76.5-77.3 in 32 x 2 with it; three H100s), 16 x 4 for 33-64 channels under 256 rows
      (64x1000x64 22.4-22.7 against 24.0-24.4, 64x4000x64 79.3-79.6 against 87.2-88.0 without the branch;
      benchmarks/results/kasmina-copy/by-state-tiles/); 65-128
      channels: 16 x 8 below 256 rows (36.2 us at 48x333x100 against 46.8 with 16 x 4), 32 x 4 stepping 32
      blueprint rows at a time from 256 rows (543.9 us at 512x1000x128 against 941.4 with 16 x 4 and the whole
      blueprint); beyond 128 channels 32 x 8, 32 blueprint rows a step (72.8 us at 64x250x256 against 94.1 with
      16 x 8)."""
    whole = block_c(c)
    if not telemetry:
        return (
            max(16, min(64, triton.next_power_of_2(n_rows))),
            8,
            (32 if dtype == torch.float32 and whole > 128 else whole),
        )
    if dtype == torch.float32:
        if c > 128:
            return 32, 8, 32
        if c > 64:
            return (16, 8, whole) if n_rows < 256 else (32, 4, 32)
        if n_rows <= 16:
            return 16, 4, whole
        if n_rows >= 64 and c <= 32:
            return 16, 2, whole
        return (16, 4, whole) if 64 <= n_rows < 256 else (32, 2, whole)
    if c > 128:
        return 32, 8, whole
    if n_rows < 256:
        return 16, 2, whole
    return (64, 2, whole) if c <= 64 else (32, 2, whole)


def row_programs_for(n_rows: int, n_seeds: int, c: int, dtype: torch.dtype, block_b: int, sms: int) -> int:
    """Programs per seed with telemetry, raced on an H100 (benchmarks/results/kasmina-copy/, two races of 1-8
    programs per seed at the shipped tiles). With at least as many seeds as SMs, one program per seed walks its
    rows: splitting them cost 0.5-66% at 250-1000 seeds. With fewer seeds, their rows are split over about four
    programs each: at 100 seeds that took bf16 512x100x32 from 15.6 to 8.6 us, 512x100x128 from 42.4 to 21.9,
    64x100x64 from 6.8 to 5.7; fp32 512x100x64 from 53.3 to 22.3. Not fp32's 16-row tiles of 65-128 channels
    (under 256 rows), where one program stayed fastest (64x100x128: 15.5 us, 19.6 with two)."""
    if n_seeds >= sms or (dtype == torch.float32 and 64 < c <= 128 and n_rows < 256):
        return 1
    return clamp_row_programs(4, n_rows, block_b)


def clamp_row_programs(row_programs: int, n_rows: int, block_b: int) -> int:
    """``row_programs`` within 1 and one per row tile."""
    return max(1, min(row_programs, triton.cdiv(n_rows, block_b)))


def by_state_for(n_rows: int, c: int, dtype: torch.dtype, telemetry: bool) -> bool:
    """Whether the kernel branches on each seed's state (dormant seeds copy x, the others fold the blend into the
    blueprint): fp32 with telemetry, up to 64 channels, from 64 rows. Raced on H100s at the shipped tiles
    (benchmarks/results/kasmina-copy/by-state-*/): 512x1000x64 146.0 -> 121.6 us, 512x1000x32 99.4 -> 76.7,
    64x4000x64 87.8 -> 80.1, 512x100x64 22.1 -> 20.7; at 64 rows, in 32-row tiles, 24.2 -> 24.4 (64x1000x64) and
    6.2 -> 6.3 (64x100x32), but in 16-row tiles 22.6 and 5.4 (``tile_for``); in bf16/fp16 slower at all 10
    default points (64x250x256 21.5 -> 28.6, 48x333x100 18.2 -> 43.3), so not there (on an H200, without masks, the
    table takes it in 16-bit at 128 channels from 256 rows: ``FastMemoryTile.by_state``). Under 64 rows not raced.
    Dormant seeds stay bit for bit x: they are copied, never multiplied by I in tf32x3."""
    return telemetry and dtype == torch.float32 and c <= 64 and n_rows >= 64


@dataclass(frozen=True)
class FastMemoryTile:
    """One row of the H200's table: the class it covers and the launch it takes there."""

    fp32: bool
    channels: tuple[int, int]  # least and most channels
    rows: tuple[int, int]  # least and most rows
    block_b: int
    num_warps: int
    stats: int  # the kernel's STATS
    k_chunk: int = 0  # blueprint rows per product step; 0: tile_for's
    seeds_per_sm: tuple[float, float] = (0.0, float("inf"))  # seeds per SM: at least the first, under the second
    channel_step: int = 1  # only where the channels are a multiple of it: other counts compile to other kernels
    maxnreg: int = 0  # registers a thread at most (ptxas's .maxnreg); 0: the compiler's choice
    by_state: bool = False  # the BY_STATE branch (dormant seeds copied, the blend folded), beside by_state_for's
    early: int = 0  # row tiles of x loaded before the seed's state (the kernel's EARLY)


_ANY = 1 << 30
_MANY = (1.0, float("inf"))  # at least as many seeds as SMs: one program per seed
# On an H200 (``launching.fast_memory``), with telemetry: the first row that covers a call is its launch. Raced there
# with every tile at each STATS (benchmarks/results/kasmina-copy/h200-stats/ and h200-seeds/, µs, 16-bit bf16 / fp16;
# "before" is the row's launch before it, the H100's rule unless said):
# - 16-bit 48 or 64 channels from 17 rows, a program per seed: 16 x 2, per-element sums, 128 registers at most
#   (h200-seeds/race4-maxnreg/: 64x1000x64 8.9 / 8.9 against 11.2 / 11.1, 64x500x64 6.1 / 6.2 against 7.7 / 7.6,
#   32x1000x64 6.9 / 6.8 against 7.7 / 7.6, 128x1000x64 12.9 / 12.8 against 15.3 / 15.1, bf16 512x1000x64 38.6
#   against 42.8, 64x4000x64 29.3 against 33.3). Uncapped, per-element sums took 138 / 134 registers (offline for
#   sm_90), which leaves 6 programs of 2 warps an SM resident against Chan's 8 (128; kprof.occupancy): at 64x1000x64
#   they took 12.2-12.9 against Chan's 11.1-11.2 (and at 900 seeds), and won only from 8 seeds an SM (64x1100x64
#   12.9 against 14.2) or at up to 6 (500 seeds). Capped at 128 (no spill in the row loop, 8 bytes of stack) 8 fit,
#   and the fewer instructions win at every such point raced. Channels not a multiple of 16 compile to another kernel
#   (offline at 33, 40, 56: 570 row-loop instructions and 178 registers uncapped; capped, 639 with 28 spilling), not
#   raced: the cap is not taken there.
# - 16-bit up to 64 channels from 128 rows otherwise (up to 32 channels, or fewer seeds than SMs): 32 x 2 with
#   per-element sums. bf16 512x1000x32 19.2-19.3 against 37.6, 512x100x32 (rows split over 4 programs) 6.4-6.5
#   against 8.3; 128x1000x32 7.6 / 7.4 against 10.9 / 11.0.
# - 16-bit up to 32 channels, 33-127 rows, one program per seed: 16 x 2, per-element sums (64x1000x32 5.8 / 5.8
#   against 7.2 / 7.2; capped at 128 registers the same 5.7).
# - 16-bit up to 64 channels, 2-15 rows, one program per seed: 16 x 2, sums per tile (8x1000x64 5.4 / 5.4 against
#   5.8 / 5.7, 2x1000x64 5.4 / 5.3 against 5.7 / 5.7, 8x4000x64 16.9 / 17.2 against 17.5 / 17.4; at 16 rows they lost:
#   16x4000x64 20.8 against 17.2 in bf16).
# - 16-bit up to 64 channels, 17-64 rows, fewer seeds than SMs: one tile of all the rows, one program per seed, sums
#   per tile: 64 x 8 from 33 rows (64x100x64 4.8 / 4.9 against 5.6 / 5.6, 48x100x64 4.9 / 4.9 against 5.6 / 5.6,
#   64x100x32 3.9 / 4.0 against 4.9 / 4.9), 32 x 4 to 32 (32x100x64 3.8 / 3.7 against 5.2 / 5.1).
# - 16-bit, 65-128 channels: from 256 rows 16 x 2 with per-element sums (512x4000x128 368.3-368.8 / 370.9 against
#   434.6-435.5); below, 16 x 2 with sums per tile (48x333x100 16.1 / 16.0-16.1 against 18.4 / 18.3).
#   At 128 channels (65-128 where a multiple of 64), with the kernel's masks dropped where every tile is full (EVEN;
#   benchmarks/results/kasmina-copy/h200-even/): from 256 rows the same tile with the BY_STATE branch (512x1000x128
#   86.0-86.5 / 84.9-85.2 against 89.9-90.8 / 89.8-90.0, 512x4000x128 327.4-331.2 / 326.8-327.9 against 349.1-350.5 /
#   347.4-348.6, 256x1000x128 46.6 / 46.4 against 49.1 / 49.4, 512x100x128 16.1-16.2 / 15.7-15.8 against 16.7 / 16.7;
#   three machines; at 64 rows it lost, 20.6 against 19.4); from 64 to 255 rows with a program per seed, per-element
#   sums (64x1000x128 19.4 / 19.1 against 22.0 / 21.7, 64x4000x128 70.4 / 69.6 against 79.9 / 79.4).
# - 16-bit, more than 128 channels: 32 x 8 with sums per tile (64x250x256 19.7-19.8 / 19.5 against 21.0 / 21.0).
# - fp32 up to 32 channels (with the BY_STATE branch), the H100's 16 x 2 tile with per-element sums from 64 rows with
#   a program per seed and from 512 rows otherwise (the same folder; two machines: 512x1000x32 39.0 / 38.9 against
#   51.7 / 51.8; one: 64x1000x32 8.2 against 8.7, 512x4000x32 159.7 against 182.4, 64x4000x32 23.7 against 27.5,
#   128x1000x32 12.1 against 13.9, 512x100x32 9.3 against 11.6; not at 64x100x32, 5.4 against 5.2).
# - fp32, 33-64 channels, from 64 rows (with the BY_STATE branch): 16 x 2 with per-element sums (512x1000x64
#   101.7-102.1 against 121.6-121.7, 64x1000x64 20.5-20.7 against 22.3-22.6, 64x4000x64 67.4 against 78.2).
# - fp32, 128 channels (65-128 where a multiple of 64), one program per seed: 32 blueprint rows a step, from 32 rows
#   in 32 x 4 with Chan per tile (32x1000x128 43.4 against 66.3, 64x1000x128 75.5 against 110.4, 128x1000x128 143.5
#   against 198.2, 64x250x128 21.7 against 29.5), 2-31 rows in 16 x 4 with per-element sums (8x1000x128 31.3 against
#   43.7, 8x4000x128 112.8 against 162.6, 16x250x128 9.3 against 12.5). Not at 100 channels, whose last step is 4
#   rows padded to 32 (48x333x100: 80-83 against 36.8 with the whole blueprint).
# - fp32, 33-128 channels, one row, from 1.5 seeds an SM: 16 x 2 stepping 32 blueprint rows (1x1000x64 8.1-8.3
#   against 10.1-10.2 on four machines; 1x1000x128 20.3-20.5 against 40.5 and 1x4000x128 70.2-70.6 against 149.1 on
#   two; 1x250x128 8.3 against 11.5; at 132 seeds 7.9 against 6.5, and at 100 7.8 against 6.3).
# x before the state (EARLY; benchmarks/results/kasmina-copy/h200-branch-early/, two H200s, µs, EARLY 0 / 1 / 2 over
# each row's launch as it was; 1 reads the program's first tile of x before the seed's state, 2 also each next tile a
# step ahead; y within the oracle's tolerance, bit for bit but the BY_STATE branch in fp32):
# - 16-bit up to 32 channels, 2-15 rows, 1-16 seeds an SM: 1 (8x1000x32 3.90-3.92 / 3.65-3.66, 4x1000x32 3.86 /
#   3.57, 8x2000x32 5.10 / 4.99); not at 64 channels (8x1000x64 5.31 / 5.41-5.44, with 2 7.23-7.33).
# - 16-bit up to 64 channels, 2-15 rows, fewer seeds than SMs, the H100's 16 x 2 tile with Chan per tile: 1 (8x100x32
#   3.09-3.14 / 2.69-2.74, 8x100x64 3.79-3.84 / 3.36-3.39, 2x100x32 3.02 / 2.53, 15x100x64 3.82 / 3.38).
# - 16-bit 65-128 channels under 256 rows (the row of 65-128 channels from one row): 2 (48x333x100 15.01-15.20 /
#   14.10-14.18, 128x333x100 26.88 / 24.86, 1x1000x100 23.90 / 16.74, 8x100x128 5.02-5.04 / 4.64-4.70, 8x1000x128
#   11.97-12.13 / 11.74-11.78, 16x1000x128 11.60 / 11.31); but 128 channels from 17 rows stays at 0 (32x1000x128 15.30 /
#   15.62, 64x100x128 7.86-8.00 / 7.87-8.00), and 1 took 0.98-1.20x there.
# - fp32 33-64 channels from 128 rows, 4-16 seeds an SM, with the BY_STATE branch: 1 (512x1000x64 96.40-96.73 /
#   90.13-90.22, 256x1000x64 51.95 / 48.64, 1024x1000x64 185.53 / 170.22, 128x1000x64 30.35 / 29.02); not at 250 seeds
#   (512x250x64 31.57 / 32.21), 4000 (512x4000x64 339.87 / 334.84, 64x4000x64 62.00 / 64.26) or 64 rows (64x1000x64
#   19.18 / 19.02), where the edges between are not measured.
# - fp32 128 channels, a program per seed: 1 (16x1000x128 31.55 / 27.47, 8x4000x128 115.49 / 109.06, 32x1000x128 43.23
#   / 38.74, 64x1000x128 73.23-73.26 / 69.57-69.60, 128x1000x128 138.77 / 133.49); 2 lost (1.02-1.10x).
# - fp32 65-127 channels under 256 rows with a program per seed, the H100's 16 x 8 tile: 2 (48x333x100 35.68-35.92 /
#   31.50-31.54, 128x333x100 77.25 / 65.33, 32x1000x100 69.90 / 63.92, 16x333x100 18.70 / 18.05).
# Elsewhere the H100's rule stays: 16-bit up to 64 channels at one row or 16, up to 32 channels at 17-32 rows with a
# program per seed, 33-64 channels at 65-127 rows with fewer seeds than SMs or at 17-127 rows where not a multiple
# of 16; fp32 up to 32 channels under 64 rows (or under 512 with fewer seeds than SMs), 65-127 channels from 256 rows
# (or with fewer seeds than SMs), 128 with fewer seeds than SMs, or beyond 128 channels. Two rows take the H100's
# tile only to add EARLY (16-bit 2-15 rows with fewer seeds than SMs; fp32 65-127 channels under 256 rows).
_FAST_MEMORY_TILES: tuple[FastMemoryTile, ...] = (
    FastMemoryTile(False, (33, 64), (17, _ANY), 16, 2, 2, seeds_per_sm=_MANY, channel_step=16, maxnreg=128),
    FastMemoryTile(False, (1, 64), (128, _ANY), 32, 2, 2),
    FastMemoryTile(False, (1, 32), (33, 127), 16, 2, 2, seeds_per_sm=_MANY),
    FastMemoryTile(False, (1, 32), (2, 15), 16, 2, 1, seeds_per_sm=(1.0, 16.0), early=1),
    FastMemoryTile(False, (1, 64), (2, 15), 16, 2, 1, seeds_per_sm=_MANY),
    FastMemoryTile(False, (1, 64), (2, 15), 16, 2, 0, seeds_per_sm=(0.0, 1.0), early=1),
    FastMemoryTile(False, (1, 64), (33, 64), 64, 8, 1, seeds_per_sm=(0.0, 1.0)),
    FastMemoryTile(False, (1, 64), (17, 32), 32, 4, 1, seeds_per_sm=(0.0, 1.0)),
    FastMemoryTile(False, (65, 128), (256, _ANY), 16, 2, 2, channel_step=64, by_state=True),
    FastMemoryTile(False, (65, 128), (256, _ANY), 16, 2, 2),
    FastMemoryTile(False, (65, 128), (64, 255), 16, 2, 2, seeds_per_sm=_MANY, channel_step=64),
    FastMemoryTile(False, (65, 128), (17, 255), 16, 2, 1, channel_step=64),
    FastMemoryTile(False, (65, 128), (1, _ANY), 16, 2, 1, early=2),
    FastMemoryTile(False, (129, _ANY), (1, _ANY), 32, 8, 1),
    FastMemoryTile(True, (33, 64), (128, _ANY), 16, 2, 2, seeds_per_sm=(4.0, 16.0), early=1),
    FastMemoryTile(True, (33, 64), (64, _ANY), 16, 2, 2),
    FastMemoryTile(True, (1, 32), (64, _ANY), 16, 2, 2, seeds_per_sm=_MANY),
    FastMemoryTile(True, (1, 32), (512, _ANY), 16, 2, 2),
    FastMemoryTile(True, (65, 128), (32, 255), 32, 4, 0, k_chunk=32, seeds_per_sm=_MANY, channel_step=64, early=1),
    FastMemoryTile(True, (65, 128), (2, 31), 16, 4, 2, k_chunk=32, seeds_per_sm=_MANY, channel_step=64, early=1),
    FastMemoryTile(True, (33, 128), (1, 1), 16, 2, 0, k_chunk=32, seeds_per_sm=(1.5, float("inf"))),
    FastMemoryTile(True, (65, 128), (2, 255), 16, 8, 0, seeds_per_sm=_MANY, early=2),
)


def fast_memory_tile(n_rows: int, n_seeds: int, c: int, dtype: torch.dtype, sms: int) -> FastMemoryTile | None:
    """The H200's launch with telemetry for ``n_rows`` rows of ``n_seeds`` seeds of ``c`` channels on ``sms`` SMs, or
    None where the H100's rule (``tile_for``, STATS 0) stays."""
    fp32 = dtype == torch.float32
    for t in _FAST_MEMORY_TILES:
        if (
            t.fp32 == fp32
            and t.channels[0] <= c <= t.channels[1]
            and t.rows[0] <= n_rows <= t.rows[1]
            and t.seeds_per_sm[0] * sms <= n_seeds < t.seeds_per_sm[1] * sms
            and c % t.channel_step == 0
        ):
            return t
    return None


@dataclass(frozen=True)
class LaunchConfig:
    """What one launch of the kernel runs with: its tile, the blueprint rows per product step, the products'
    precision and the programs per seed (``(seeds, row_programs)`` is the grid)."""

    block_b: int
    num_warps: int
    block_c: int
    k_chunk: int
    precision: int
    row_programs: int
    telemetry: bool
    by_state: bool = False
    stats: int = 0
    maxnreg: int = 0  # registers a thread at most; 0: the compiler's choice
    even: bool = False  # every row tile full and C == BLOCK_C: the kernel's EVEN (no masks; even_for)
    early: int = 0  # row tiles of x loaded before the seed's state: the kernel's EARLY (0, 1 or 2)

    def options(self) -> dict[str, int]:
        """The launch's compile options beside the constexprs: warps, and the register cap where there is one."""
        return {"num_warps": self.num_warps, **({"maxnreg": self.maxnreg} if self.maxnreg else {})}

    def constexprs(self) -> dict[str, int | bool]:
        """The kernel's compile-time arguments for this launch, in its signature's order (the ops API's plans pass
        them by position)."""
        return {
            "BLOCK_B": self.block_b,
            "BLOCK_C": self.block_c,
            "TELEMETRY": self.telemetry,
            "PRECISION": self.precision,
            "K_CHUNK": self.k_chunk,
            "BY_STATE": self.by_state,
            "STATS": self.stats,
            "EVEN": self.even,
            "EARLY": self.early,
        }

    @property
    def split(self) -> bool:
        """A seed's telemetry comes from several programs' parts (which need a workspace and counters)."""
        return self.telemetry and self.row_programs > 1


def config_for(
    x: torch.Tensor,
    n_seeds: int,
    c: int,
    telemetry: bool,
    block_b: int | None = None,
    num_warps: int | None = None,
    precision: int | None = None,
    k_chunk: int | None = None,
    row_programs: int | None = None,
    by_state: bool | None = None,
    stats: int | None = None,
    maxnreg: int | None = None,
    even: bool | None = None,
    early: int | None = None,
) -> LaunchConfig:
    """The launch for ``x`` (rows of ``n_seeds`` x ``c`` channels): ``tile_for`` (``fast_memory_tile`` on an
    H200), ``precision_of``, ``row_programs_for``, ``by_state_for`` and ``even_for`` unless given (the tuning
    benchmarks vary them)."""
    n_rows = x.numel() // x.shape[-1]
    default_b, default_warps, default_k = tile_for(n_rows, c, x.dtype, telemetry)
    default_stats = default_maxnreg = default_early = 0
    default_by_state = by_state_for(n_rows, c, x.dtype, telemetry)
    if telemetry and launching.fast_memory(x):
        h200 = fast_memory_tile(n_rows, n_seeds, c, x.dtype, launching.sm_count(x))
        if h200 is not None:
            default_b, default_warps, default_stats = h200.block_b, h200.num_warps, h200.stats
            default_maxnreg, default_early = h200.maxnreg, h200.early
            default_by_state = default_by_state or h200.by_state
            default_k = h200.k_chunk or default_k
    block_b = block_b or default_b
    if not telemetry:  # row blocks of one seed are independent programs
        row_programs = triton.cdiv(n_rows, block_b)
    else:  # a seed's programs meet at the last one to finish, which merges their statistics
        if row_programs is None:
            row_programs = row_programs_for(n_rows, n_seeds, c, x.dtype, block_b, launching.sm_count(x))
        row_programs = clamp_row_programs(row_programs, n_rows, block_b)
    return LaunchConfig(
        block_b=block_b,
        num_warps=num_warps or default_warps,
        block_c=block_c(c),
        k_chunk=k_chunk or default_k,
        precision=precision_of(x.dtype) if precision is None else precision,
        row_programs=row_programs,
        telemetry=telemetry,
        by_state=default_by_state if by_state is None else by_state,
        stats=default_stats if stats is None else stats,
        maxnreg=default_maxnreg if maxnreg is None else maxnreg,
        even=_even(n_rows, c, block_b, even),
        early=default_early if early is None else early,
    )


def even_for(n_rows: int, c: int, block_b: int) -> bool:
    """Whether every tile of ``block_b`` rows is full and ``c`` fills BLOCK_C: the kernel then runs without masks
    (``EVEN``). Why: compiled for sm_90 under Triton 3.6 (the GPU machine's) that took the row loop from 311 to 280
    instructions at 512x1000x64 bf16 (16 x 2, per-element sums; 138 -> 128 registers, 6 -> 8 programs an SM), 269 to
    229 at 512x1000x32 (32 x 2), 690 to 561 at 512x4000x128 (a spill gone); on H200s the masked launch took
    0.988-1.126x the time, median 1.056x over 74 pairs (benchmarks/results/kasmina-copy/h200-even/)."""
    return n_rows % block_b == 0 and c == block_c(c)


def _even(n_rows: int, c: int, block_b: int, even: bool | None) -> bool:
    """``even_for``, or ``even`` where given and possible (without masks a partial tile would read past x)."""
    fits = even_for(n_rows, c, block_b)
    if even and not fits:
        raise ValueError(
            f"kasmina: even=True needs the rows ({n_rows}) a multiple of the tile ({block_b}) and the channels ({c}) "
            f"a power of two of at least 16; leave even unset to have it taken where it holds"
        )
    return fits if even is None else even


def telemetry_parts(
    x: torch.Tensor, n_seeds: int, config: LaunchConfig, unused: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fp32 parts, ticket counters) of a call whose seeds' rows are split over programs, each storing 3 x BLOCK_C
    floats; ``unused`` twice where each seed has one program (the kernel then reads neither)."""
    if not config.split:
        return unused, unused
    parts = torch.empty(n_seeds * config.row_programs * 3 * config.block_c, dtype=torch.float32, device=x.device)
    return parts, launching.ticket_counters(x, n_seeds)


def launch(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    telemetry: bool,
    block_b: int | None = None,
    num_warps: int | None = None,
    precision: int | None = None,
    k_chunk: int | None = None,
    row_programs: int | None = None,
    by_state: bool | None = None,
    stats: int | None = None,
    maxnreg: int | None = None,
    even: bool | None = None,
    early: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Check, allocate and launch; returns ``(y, telemetry or None)``. ``block_b``/``num_warps``/``k_chunk``: the
    tile and blueprint rows per product step, ``precision``: the products', ``row_programs``: programs per seed
    with telemetry, ``by_state``: the kernel's BY_STATE branch, ``stats``: how it sums the statistics (STATS),
    ``maxnreg``: registers a thread at most (0: the compiler's choice), ``even``: the kernel's EVEN, no masks,
    ``early``: its EARLY, row tiles of x loaded before the state (defaults: :func:`config_for`'s) - the tuning
    benchmarks vary them."""
    n_seeds, c = check_inputs(x, lifecycle, blueprint_id, alpha, weights, bias)
    x2d = x.reshape(-1, x.shape[-1]) if x.stride(-1) == 1 else x.contiguous().view(-1, x.shape[-1])
    n_rows = x2d.shape[0]
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    tele = torch.empty((n_seeds, 2), dtype=torch.float32, device=x.device) if telemetry else None
    cfg = config_for(
        x,
        n_seeds,
        c,
        telemetry,
        block_b,
        num_warps,
        precision,
        k_chunk,
        row_programs,
        by_state,
        stats,
        maxnreg,
        even,
        early,
    )
    parts, counts = telemetry_parts(x, n_seeds, cfg, y)
    _kasmina_forward_kernel[(n_seeds, cfg.row_programs)](
        x2d,
        y,
        lifecycle,
        blueprint_id,
        alpha,
        weights.contiguous(),
        bias.contiguous(),
        tele if tele is not None else y,
        parts,
        counts,
        n_rows,
        c,
        weights.shape[0],
        x2d.stride(0),
        x.shape[-1],
        **cfg.constexprs(),
        **cfg.options(),
    )
    return y, tele


@FAMILY.provider(
    "triton_branch_free",
    kind="triton",
    description="one branch-free kernel (state read on the device); telemetry by a PyTorch reduction after",
)
def kasmina_branch_free(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    lifecycle, blueprint_id, alpha = (dense_vector(v) for v in (lifecycle, blueprint_id, alpha))  # read at unit stride
    y, _ = launch(x, lifecycle, blueprint_id, alpha, weights, bias, telemetry=False)
    n_seeds, c = lifecycle.shape[0], weights.shape[-1]
    var, mean = torch.var_mean(y.view(-1, n_seeds, c).float(), dim=(0, 2), correction=0)
    return y, torch.stack([mean, var], dim=1)


# Public handles for op_plan (the ops API's launch plan): the kernels keep their `_` names,
# which are the names profilers record for every launch.
forward_kernel = _kasmina_forward_kernel
# and the helpers kasmina.tma's kernel shares with it
fold = _fold
product = _product
store_telemetry = _store_telemetry
