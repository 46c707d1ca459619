"""Several seeds per program: each program loads the x columns of GROUP neighbouring seeds for a block of rows
(one contiguous run of GROUP x C elements per row), their GROUP blueprints at once, and runs one batched
product, with the per-seed telemetry fused as in ``triton_telemetry``.

Why: the one-seed-per-program kernel (``branch_free``) makes a chain of dependent loads per seed (its state,
then its blueprint, then x) for 2-16 KB of x, so too few bytes are in flight to stream at a copy's rate: ncu
showed 8-23% achieved occupancy, limited by registers, and 1.28-7.47x a bare copy's time over the default
sweep (``benchmarks/results/kasmina-copy/``). Here one chain serves GROUP seeds, and the program's loads of x
are GROUP times wider.

The blend is the branch-free one: ``y = x + coef * (x @ W[id] + b[id] - x)``, ``coef`` 0 dormant, 1 active,
alpha grafting; an id outside the registry reads blueprint 0 and makes the seed's outputs NaN. Seeds past the
last (the last group's padding) are masked. Where groups are fewer than SMs, the rows are split over several
programs per group, whose per-column (count, mean, M2) the last program of the group merges
(``branch_free._merge_parts``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kprof.kernels.kasmina import branch_free
from kprof.kernels.kasmina.branch_free import _chan, _merge_parts, _product, _store_telemetry
from kprof.kernels.kasmina.family import FAMILY, check_inputs
from kprof.kernels.lib import launching, split_k


@triton.jit
def _kasmina_grouped_kernel(
    # pointers
    x_ptr,  # [rows, S*C] activations, rows `x_row_stride` apart
    y_ptr,  # [rows, S*C] output, contiguous
    lifecycle_ptr,  # [S] int8: 0 dormant, 1 active, 2 grafting
    blueprint_id_ptr,  # [S] int32
    alpha_ptr,  # [S] float32
    w_ptr,  # [NB, C, C] blueprint weights, contiguous
    b_ptr,  # [NB, C] blueprint biases, contiguous
    telemetry_ptr,  # [S, 2] float32 (mean, variance)
    part_ptr,  # [groups, row programs, 3, GROUP, BLOCK_C] float32: each program's (count, mean, M2) per column,
    # when a group's rows are split over several programs
    count_ptr,  # [groups] int32 tickets, zero between calls (used as part_ptr is)
    # sizes and strides
    n_rows,
    n_seeds,
    C,
    NB,  # blueprints in the registry: ids outside [0, NB) are flagged, never read
    x_row_stride,
    y_row_stride,
    # meta-parameters
    GROUP: tl.constexpr,  # seeds per program, a power of two
    BLOCK_B: tl.constexpr,  # rows per tile (>= 16: tl.dot's minimum)
    BLOCK_C: tl.constexpr,  # power of two >= C (>= 16)
    PRECISION: tl.constexpr,  # as branch_free's: 0 the inputs' dtype, 1 IEEE fp32, 2 tf32x3
):
    group = tl.program_id(0)
    n_progs = tl.num_programs(1)
    seeds = group * GROUP + tl.arange(0, GROUP)
    smask = seeds < n_seeds
    cols = tl.arange(0, BLOCK_C)
    cmask = cols < C
    sc_mask = smask[:, None] & cmask[None, :]  # [GROUP, BLOCK_C]
    lifecycle = tl.load(lifecycle_ptr + seeds, mask=smask, other=0).to(tl.int32)
    bid = tl.load(blueprint_id_ptr + seeds, mask=smask, other=0).to(tl.int64)
    valid = (bid >= 0) & (bid < NB)  # clamp-and-flag, as branch_free
    bid = tl.where(valid, bid, 0)
    alpha = tl.load(alpha_ptr + seeds, mask=smask, other=0.0)
    coef = tl.where(lifecycle == 1, 1.0, tl.where(lifecycle == 2, alpha, 0.0))[:, None, None]
    valid = valid[:, None, None]

    w = tl.load(
        w_ptr + bid[:, None, None] * C * C + cols[None, :, None] * C + cols[None, None, :],
        mask=sc_mask[:, :, None] & cmask[None, None, :],
        other=0.0,
    )  # [GROUP, BLOCK_C, BLOCK_C]
    bias = tl.load(b_ptr + bid[:, None] * C + cols[None, :], mask=sc_mask, other=0.0).to(tl.float32)
    col = (seeds.to(tl.int64) * C)[:, None, None] + cols[None, None, :]  # [GROUP, 1, BLOCK_C]

    cnt = tl.zeros([GROUP, BLOCK_C], dtype=tl.float32)
    mean = tl.zeros([GROUP, BLOCK_C], dtype=tl.float32)
    m2 = tl.zeros([GROUP, BLOCK_C], dtype=tl.float32)
    for start in range(tl.program_id(1) * BLOCK_B, n_rows, BLOCK_B * n_progs):
        rows = start + tl.arange(0, BLOCK_B)
        rmask = rows < n_rows
        mask = sc_mask[:, None, :] & rmask[None, :, None]  # [GROUP, BLOCK_B, BLOCK_C]
        r64 = rows.to(tl.int64)[None, :, None]
        x = tl.load(x_ptr + r64 * x_row_stride + col, mask=mask, other=0.0)
        bp = _product(x, w, tl.zeros([GROUP, BLOCK_B, BLOCK_C], dtype=tl.float32), PRECISION)
        xf = x.to(tl.float32)
        y = xf + coef * (bp + bias[:, None, :] - xf)
        y = tl.where(valid, y, float("nan"))
        tl.store(y_ptr + r64 * y_row_stride + col, y.to(y_ptr.dtype.element_ty), mask=mask)
        n_b = tl.sum(rmask.to(tl.float32), axis=0)
        mean_b = tl.sum(tl.where(mask, y, 0.0), axis=1) / n_b
        d = tl.where(mask, y - mean_b[:, None, :], 0.0)
        cnt, mean, m2 = _chan(cnt, mean, m2, n_b, mean_b, tl.sum(d * d, axis=1))
    if n_progs == 1:
        _store_telemetry(telemetry_ptr, seeds, cnt, mean, m2, sc_mask, smask)
    else:  # the group's rows are split: the program that draws the last ticket merges every program's part
        width = GROUP * BLOCK_C
        at = tl.arange(0, GROUP)[:, None] * BLOCK_C + cols[None, :]
        slot = part_ptr + (group.to(tl.int64) * n_progs + tl.program_id(1)) * 3 * width + at
        tl.store(slot, cnt)
        tl.store(slot + width, mean)
        tl.store(slot + 2 * width, m2)
        if split_k.take_ticket(count_ptr, group) == n_progs - 1:
            cnt, mean, m2 = _merge_parts(part_ptr + group.to(tl.int64) * n_progs * 3 * width + at, n_progs, width)
            _store_telemetry(telemetry_ptr, seeds, cnt, mean, m2, sc_mask, smask)
            split_k.release(count_ptr, group)


@dataclass(frozen=True)
class GroupConfig:
    """One launch of the grouped kernel: seeds per program, its row tile and warps, the products' precision and
    the programs per group (``(groups, row_programs)`` is the grid)."""

    group: int
    block_b: int
    num_warps: int
    block_c: int
    precision: int
    row_programs: int

    def groups(self, n_seeds: int) -> int:
        return triton.cdiv(n_seeds, self.group)

    @property
    def split(self) -> bool:
        """A group's telemetry comes from several programs' parts (which need a workspace and counters)."""
        return self.row_programs > 1


def config_for(
    x: torch.Tensor,
    n_seeds: int,
    c: int,
    group: int = 4,
    block_b: int = 16,
    num_warps: int = 4,
    row_programs: int | None = None,
    precision: int | None = None,
) -> GroupConfig:
    """The launch for ``x`` (rows of ``n_seeds`` x ``c`` channels). Rows are split over about four programs per
    group where groups are fewer than SMs (as ``branch_free.row_programs_for`` does per seed), unless given."""
    n_rows = x.numel() // x.shape[-1]
    if row_programs is None:
        row_programs = 1 if triton.cdiv(n_seeds, group) >= launching.sm_count(x) else 4
    return GroupConfig(
        group=group,
        block_b=block_b,
        num_warps=num_warps,
        block_c=branch_free.block_c(c),
        precision=branch_free.precision_of(x.dtype) if precision is None else precision,
        row_programs=branch_free.clamp_row_programs(row_programs, n_rows, block_b),
    )


def launch(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    **config: int | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Check, allocate and launch; returns ``(y, telemetry)``. ``config``: :func:`config_for`'s keywords (the
    tuning benchmarks vary them)."""
    n_seeds, c = check_inputs(x, lifecycle, blueprint_id, alpha, weights, bias)
    if c > 128:
        raise ValueError(f"kasmina grouped: {c} channels; GROUP blueprints of more than 128 do not fit a program")
    x2d = x.reshape(-1, x.shape[-1]) if x.stride(-1) == 1 else x.contiguous().view(-1, x.shape[-1])
    n_rows = x2d.shape[0]
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    tele = torch.empty((n_seeds, 2), dtype=torch.float32, device=x.device)
    cfg = config_for(x, n_seeds, c, **config)
    groups = cfg.groups(n_seeds)
    if cfg.split:
        floats = groups * cfg.row_programs * 3 * cfg.group * cfg.block_c
        parts = torch.empty(floats, dtype=torch.float32, device=x.device)
        counts = launching.ticket_counters(x, groups)
    else:
        parts = counts = y
    _kasmina_grouped_kernel[(groups, cfg.row_programs)](
        x2d,
        y,
        lifecycle,
        blueprint_id,
        alpha,
        weights.contiguous(),
        bias.contiguous(),
        tele,
        parts,
        counts,
        n_rows,
        n_seeds,
        c,
        weights.shape[0],
        x2d.stride(0),
        x.shape[-1],
        GROUP=cfg.group,
        BLOCK_B=cfg.block_b,
        BLOCK_C=cfg.block_c,
        PRECISION=cfg.precision,
        num_warps=cfg.num_warps,
    )
    return y, tele


def _supports(shape: tuple[int, ...], dtype: str) -> str | None:
    return None if shape[-1] <= 128 else "more than 128 channels: GROUP blueprints do not fit one program"


@FAMILY.provider(
    "triton_grouped",
    kind="triton",
    supports=_supports,
    description="four seeds per program: one wide load of their x columns, their blueprints at once, one batched "
    "product, telemetry fused",
)
def kasmina_grouped(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    return launch(x, lifecycle, blueprint_id, alpha, weights, bias)
