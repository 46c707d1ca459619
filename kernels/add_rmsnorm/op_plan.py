"""fused_add_rms_norm's launch plan (:mod:`kprof.kernels.ops` and, on a GPU, this family's ``triton_tuned``): the
checked launch on a call signature's first call, then the same configuration's compiled launch from a plan, with raw
addresses passed to Triton's C launcher (:mod:`kprof.kernels.lib.plans` says what a plan holds and why)."""

from __future__ import annotations

from typing import Any

import torch
import triton

from kprof.kernels.add_rmsnorm import cooperative, split, tuned
from kprof.kernels.add_rmsnorm.family import validate
from kprof.kernels.lib import launching
from kprof.kernels.lib.plans import Launch, Plans, contiguous_layout, row_stride, sig
from kprof.kernels.lib.split_rows import MeetingLaunch, SplitLaunch
from kprof.launch import launch_hooks_installed

PLANS = Plans()


def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    try:  # one flat key: what sig() says about each tensor, without three calls and three tuples
        xp, rp, wp = x.data_ptr(), residual.data_ptr(), weight.data_ptr()
        key = (
            x.shape,
            x.stride(),
            x.dtype,
            x.get_device(),
            residual.shape,
            residual.stride(),
            residual.dtype,
            residual.get_device(),
            weight.shape,
            weight.stride(),
            weight.dtype,
            weight.get_device(),
            xp % 16 == 0,
            rp % 16 == 0,
            wp % 16 == 0,
            eps,
        )
    except (AttributeError, TypeError):  # not tensors: the checks say what is wrong
        return tuned.add_rmsnorm_checked(x, residual, weight, eps)
    plan = PLANS.plans.get(key)
    if plan is None:
        plan = PLANS.put(key, _add_plan(x, residual, weight, eps))
    if plan is False:
        return tuned.add_rmsnorm_checked(x, residual, weight, eps)
    launch, shape, strides = plan
    y = x.new_empty_strided(shape, strides)
    h = x.new_empty_strided(shape, strides)
    if launch.entry is not None and not launch_hooks_installed():
        launch.fast(xp, rp, wp, y.data_ptr(), h.data_ptr())
    else:
        launch(x, residual, weight, y, h)
    return y, h


def _add_plan(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[Launch | SplitLaunch | MeetingLaunch, tuple[int, ...], tuple[int, ...]] | bool:
    """The checked path's choice as (Launch, output shape, output strides), or False where a plan cannot
    describe the inputs."""
    validate(x, residual, weight)
    xs, rs = row_stride(x), row_stride(residual)
    if xs is None or rs is None or weight.stride(0) != 1:
        return False
    n = x.shape[-1]
    n_rows = x.numel() // n
    cfg = tuned.config_for(n_rows, n, x)
    sigs = (sig(x), sig(residual), sig(weight))
    if cfg.kernel in ("cooperative", "pipelined", "slotted"):  # the meeting's buffers per call, one launch
        programs = cfg.programs_per_sm * launching.sm_count(x)
        template = x.new_empty((0,), dtype=torch.float32)
        meeting = cooperative.meeting_plan(
            cfg.kernel, n_rows, n, xs, rs, eps, cfg.block_n, cfg.splits, programs, cfg.num_warps, sigs, template
        )
        return (meeting, *contiguous_layout(x.shape))
    align = launching.vector_align(x.element_size(), n, xs, rs)
    if cfg.kernel == "rows":
        i64 = n_rows * max(xs, rs, n, 1) >= 2**31
        tail = (xs, rs, n_rows, n, float(eps), cfg.block_n, cfg.rows, i64, align)
        launch = Launch(
            tuned.rows_launcher,
            ("ops", cfg, tail, *sigs),
            (triton.cdiv(n_rows, cfg.rows),),
            tail,
            {"num_warps": cfg.num_warps},
        )
    elif cfg.kernel == "one_row":
        tail = (xs, rs, n, float(eps), cfg.block_n, align)
        launch = Launch(
            tuned.one_row_launcher, ("ops", cfg, tail, *sigs), (n_rows,), tail, {"num_warps": cfg.num_warps}
        )
    elif cfg.kernel == "split":
        launch = _add_split_launch(cfg, x, xs, rs, n_rows, n, float(eps), sigs)
    else:
        tail = (xs, rs, n, float(eps), cfg.block_n, n if cfg.cols_const else 0, align, cfg.hints)
        launch = Launch(
            tuned.looped_launcher,
            ("ops", cfg, tail, *sigs),
            (n_rows,),
            tail,
            {"num_warps": cfg.num_warps},
        )
    return (launch, *contiguous_layout(x.shape))


def _add_split_launch(
    cfg: Any, x: torch.Tensor, xs: int, rs: int, n_rows: int, n: int, eps: float, sigs: tuple
) -> SplitLaunch:
    """The split path's two launches (``kprof.kernels.add_rmsnorm.split``) as one plan entry."""
    chunk = split.chunk_of(n, cfg.splits)
    grid, options, meta = (n_rows, cfg.splits), {"num_warps": cfg.num_warps}, (cfg.block_n, cfg.splits)
    first_tail = (xs, rs, n, chunk, *meta)
    second_tail = (n, n, n, chunk, eps, *meta)  # h and y contiguous: row strides N
    first = Launch(split.sum_launcher, ("ops", cfg, first_tail, *sigs), grid, first_tail, options)
    second = Launch(split.apply_launcher, ("ops", cfg, second_tail, *sigs), grid, second_tail, options)
    takes = ((0, 1, 4), (4, 2, 3))  # of (x, residual, weight, y, h): x, residual, h; h, weight, y
    return SplitLaunch(first, second, takes, n_rows * cfg.splits, x.new_empty((0,), dtype=torch.float32))
