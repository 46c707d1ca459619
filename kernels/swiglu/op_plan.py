"""swiglu's launch plans (:mod:`kprof.kernels.ops` and, on a GPU, this family's ``triton_tuned_pointer`` and
``triton_tuned_prepared``): the checked path on a call signature's first call, then its launch from a plan through
Triton's C launcher (:mod:`kprof.kernels.lib.plans` says what a plan holds and why)."""

from __future__ import annotations

from typing import Any

import torch
import triton

from kprof.kernels.lib import tiles
from kprof.kernels.lib.plans import (
    CUBLAS,
    Launch,
    Plans,
    constexpr_tail,
    contiguous_layout,
    many_rows,
    row_stride,
    sig,
)
from kprof.kernels.swiglu import cublas_silu, split_k, tuned
from kprof.kernels.swiglu.cublas_silu import products_then_silu_mul
from kprof.kernels.swiglu.family import FAMILY, check_inputs
from kprof.launch import CompiledLauncher, launch_hooks_installed

PLANS = Plans()
_swiglu_launcher = CompiledLauncher(tuned.tiled_kernel)
_swiglu_split_launcher = CompiledLauncher(split_k.split_k_kernel)


def swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``silu(x @ Wg) * (x @ Wu)`` on the weights as given (no derived copy): the tiled kernel (pinned tiles up
    to 128 rows, autotuned above), or cuBLAS's two products then kprof's silu_mul kernel where
    ``swiglu.tuned.cublas_products`` or ``ragged_products`` says so."""
    key = (sig(x), sig(w_gate), sig(w_up))
    plan = PLANS.get(key)
    if plan is None:
        return _swiglu_first(x, w_gate, w_up, key)
    launch, out_shape, unused_pointers = plan
    if launch is CUBLAS:
        return products_then_silu_mul(x.view(-1, x.shape[-1]), w_gate, w_up).view(out_shape)
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if unused_pointers:  # the unsplit split-K kernel: its workspace and counters are never touched
        launch(x, w_gate, w_up, y, y, y)
    else:
        launch(x, w_gate, w_up, y)
    return y


def _swiglu_first(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, key: tuple) -> torch.Tensor:
    """The checked path (the autotuner runs on a new shape above the pinned tiles' rows), then the plan for
    the next calls."""
    x2d, ff = tuned.check_inputs(x, w_gate, w_up)
    xs = row_stride(x)
    plannable = xs is not None and w_gate.is_contiguous() and w_up.is_contiguous()
    raced = tuned.raced_route(x2d, w_gate, w_up, interleaved=False)  # None: the static rules decide
    wg, wu = tuned.weights_in_layout(w_gate, w_up, "kn")
    rules = raced is None and (tuned.cublas_products(x2d.shape[0], ff) or tuned.ragged_products(x2d, wg))
    if raced == "cublas" or rules:
        if plannable:
            PLANS.put(key, (CUBLAS, tuple(x.shape[:-1]) + (ff,), False))
        return products_then_silu_mul(x2d, w_gate, w_up).view(*x.shape[:-1], ff)
    y = torch.empty((x2d.shape[0], ff), dtype=x.dtype, device=x.device)
    config = split_k.ops_config(x2d, ff)
    if config is not None:
        meta, options = split_k.launch_split_k(x2d, wg, wu, y, config)
        if plannable and meta["SPLIT_K"] == 1:  # split launches (none in the table) take this path each call
            launch = _unsplit_launch(x2d, xs, ff, key, meta, options)
            PLANS.put(key, (launch, tuple(x.shape[:-1]) + (ff,), True))
        return y.view(*x.shape[:-1], ff)
    meta, options = tuned.launch_tuned(x2d, wg, wu, y)
    if plannable:
        m, k = x2d.shape
        named = {**meta, "IEEE": tuned.ieee(x2d), "ALIGNED": tiles.promise_aligned(x2d, wg)}
        tail = (m, ff, k, xs, 1, ff, 1) + constexpr_tail(tuned.autotuned_kernel, 11, named)
        grid = (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(ff, meta["BLOCK_N"]),)
        PLANS.put(
            key,
            (
                Launch(_swiglu_launcher, ("ops",) + key + (tail, tuple(options.items())), grid, tail, options),
                tuple(x.shape[:-1]) + (ff,),
                False,
            ),
        )
    return y.view(*x.shape[:-1], ff)


def _unsplit_launch(x2d: torch.Tensor, xs: int, ff: int, key: tuple, meta: dict, options: dict) -> Launch:
    """The plan's launch of swiglu's split-K kernel with one program per tile (SPLIT_K = 1), from what its first
    launch ran with (``meta``: every constexpr and K_PER_SPLIT)."""
    m, k = x2d.shape
    tail = (m, ff, k, 1, meta["K_PER_SPLIT"], xs, 1, ff, 1) + constexpr_tail(split_k.split_k_kernel, 15, meta)
    grid = (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(ff, meta["BLOCK_N"]),)
    return Launch(_swiglu_split_launcher, ("ops", "split") + key + (tail, tuple(options.items())), grid, tail, options)


# ------------------------------------------------------------------------ swiglu on prepared weights (TMA)
PREPARED_PLANS = Plans()
_interleaved_launcher = CompiledLauncher(tuned.interleaved_kernel)
_pairs_launcher = CompiledLauncher(cublas_silu.silu_pairs_kernel)


class PreparedSwiGLUPlan:
    """swiglu by the interleaved TMA kernel on prepared (interleaved) weights: the launch, its tiles, the output's
    layout. The six descriptors hold x's, the interleaved weight's and y's addresses: once the kernel is compiled,
    the launch's ``described()`` keeps what Triton encodes from them by those three addresses
    (:class:`kprof.launch.DescribedLaunch`), made again only for addresses not seen before. What is kept holds no
    tensor."""

    __slots__ = ("launch", "plan", "k", "y_layout")

    def __init__(self, launch: Launch, plan: tiles.TilePlan, k: int, m: int, n: int) -> None:
        self.launch, self.plan, self.k = launch, plan, k
        self.y_layout = contiguous_layout((m, n))

    def __call__(self, x: torch.Tensor, w_int: torch.Tensor) -> torch.Tensor:
        x2d = x.view(-1, self.k)
        y = x.new_empty_strided(*self.y_layout)
        p = self.plan

        def descriptors() -> tuple:
            return tiles.tile_descriptors(x2d, w_int, y, p.tiles, p.subtile, p.split, w_cols=2, lower=p.lower)

        if self.launch.entry is not None and not launch_hooks_installed():
            described = self.launch.described()
            if described is not None:
                described((x2d.data_ptr(), w_int.data_ptr(), y.data_ptr()), descriptors, self.launch.tail)
            else:
                self.launch.fast(*descriptors())
        else:
            self.launch(*descriptors())
        return y.view(*x.shape[:-1], y.shape[1])


class PreparedPairsPlan:
    """swiglu on prepared weights where the interleaved pair's route is cuBLAS's one product of it
    (``tuned.interleaved_route``: raced where the output width is not a multiple of 16): the product, then the pairs
    kernel's launch (``cublas_silu.interleaved_product_then_silu``'s two steps), and the output's layout. Before it,
    every such call took the checked path: at 1000x1000x3000 on an H200 a loop of calls ran at 124.9-138.7 µs a call,
    with it at 33.2-35.7, the TMA route's pace there (``benchmarks/results/ops-host-time/pairs-plan-4fb1341/``)."""

    __slots__ = ("launch", "k", "y_layout")

    def __init__(self, launch: Launch, k: int, m: int, n: int) -> None:
        self.launch, self.k = launch, k
        self.y_layout = contiguous_layout((m, n))

    def __call__(self, x: torch.Tensor, w_int: torch.Tensor) -> torch.Tensor:
        h = torch.mm(x.view(-1, self.k), w_int)
        y = x.new_empty_strided(*self.y_layout)
        if self.launch.entry is not None and not launch_hooks_installed():
            self.launch.fast(h.data_ptr(), y.data_ptr())
        else:
            self.launch(h, y)
        return y.view(*x.shape[:-1], y.shape[1])


def prepared_op(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_int: torch.Tensor | None) -> torch.Tensor:
    """What ``ops.PreparedSwiGLU`` runs on its Triton path (and the ``triton_prepared_op`` version, so that
    ``kprof grid`` times the object's own choice): the interleaved kernel on ``w_int`` from ``tuned.TMA_MIN_ROWS``
    rows (any under the interpreter), through :func:`swiglu_prepared`; the plain op where no interleaved copy is
    kept (``w_int`` None) and below, decided from x's rows before any check."""
    if w_int is not None and many_rows(x, tuned.TMA_MIN_ROWS):
        return swiglu_prepared(x, w_gate, w_up, w_int)  # the checked path on a signature's first call
    return swiglu(x, w_gate, w_up)


@FAMILY.provider(
    "triton_prepared_op",
    kind="triton",
    description="what ops.PreparedSwiGLU runs at the shape, launched as it launches it (op_plan.prepared_op: the "
    "interleaved kernel from 1000 rows, the plain op below), on the interleaved pair where the object keeps one (made "
    "once per input set before the timed calls); kprof grid compares it with the best version at each point. The "
    "inputs are checked when the pair is made and on a signature's first call, as the object checks them (off a GPU "
    "on every call), so its host time per call is the object's",
)
def swiglu_prepared_op(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    if not getattr(x, "is_cuda", False):  # off a GPU every call is checked: CPU tensors need the interpreter
        check_inputs(x, w_gate, w_up)
    kept = tuned.interleavable(w_gate)  # where ops.PreparedSwiGLU keeps an interleaved copy (its Triton path on)
    w_int = tuned.prepared_interleaved.get(lambda wg, wu: _checked_pair(x, wg, wu), w_gate, w_up) if kept else None
    return prepared_op(x, w_gate, w_up, w_int)


def _checked_pair(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """The object's interleaved pair, the inputs checked first: bad weights say what is wrong."""
    check_inputs(x, w_gate, w_up)
    return tuned.interleaved_weights(w_gate, w_up)


def swiglu_prepared(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_int: torch.Tensor) -> torch.Tensor:
    """``silu(x @ Wg) * (x @ Wu)`` from the interleaved pair ``w_int`` (``swiglu.tuned.swiglu_with``): the checked
    path on a signature's first call, then its plan where that call took the interleaved kernel."""
    try:
        key = (sig(x), sig(w_gate), sig(w_up), sig(w_int))
    except (AttributeError, TypeError):  # not tensors: the checks say what is wrong
        key = None
    plan = PREPARED_PLANS.get(key) if key is not None else None
    if plan is not None:
        return plan(x, w_int)
    return _swiglu_prepared_first(x, w_gate, w_up, w_int, key)


def _swiglu_prepared_first(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_int: torch.Tensor, key: Any
) -> torch.Tensor:
    """The checked path, then the plan of this signature where the interleaved kernel ran on contiguous rows."""
    taken: list[str] = []
    y = tuned.swiglu_with(x, w_gate, w_up, w_int, taken)  # checks the inputs
    k, n = w_gate.shape
    if key is None or row_stride(x) != k or not w_int.is_contiguous():
        return y
    m = x.numel() // k
    if taken == ["cublas_pairs"] and m:
        block, options = cublas_silu.pairs_launch(n)
        tail = (n, 2 * n, block)  # the product [M, 2N] is contiguous: its row stride is 2N
        pairs = Launch(_pairs_launcher, ("prepared", "pairs", key, tail), (m, triton.cdiv(n, block)), tail, options)
        PREPARED_PLANS.put(key, PreparedPairsPlan(pairs, k, m, n))
        return y
    if taken != ["interleaved"]:
        return y
    plan = tuned.interleaved_plan(m, k, n, tiles.persistent_sms(x))
    meta = plan.meta(LOWER_M=plan.lower)
    options = {o: meta.pop(o) for o in ("num_warps", "num_stages")}
    tail = (m, n, k) + constexpr_tail(tuned.interleaved_kernel, 9, meta)
    launch = Launch(_interleaved_launcher, ("prepared", key, tail), (plan.grid(m, n),), tail, options)
    PREPARED_PLANS.put(key, PreparedSwiGLUPlan(launch, plan, k, m, n))
    return y
