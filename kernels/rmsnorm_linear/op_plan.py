"""rms_norm_linear's launch plans (:mod:`kprof.kernels.ops` and, on a GPU, this family's ``triton_tuned`` and
``triton_rstd_epilogue_prepared``): the checked path on a call signature's first call, then its launches from a plan
through Triton's C launcher (:mod:`kprof.kernels.lib.plans` says what a plan holds and why)."""

from __future__ import annotations

from typing import Any

import torch
import triton

from kprof.kernels.lib import checks, launching, routes, tiles
from kprof.kernels.lib.checks import dense_vector
from kprof.kernels.lib.plans import (
    CUBLAS,
    Launch,
    Plans,
    constexpr_tail,
    contiguous_layout,
    many_rows,
    row_stride,
    rows,
    sig,
)
from kprof.kernels.rmsnorm import tuned as rms_tuned
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear import fused, split_k, tma_decode
from kprof.kernels.rmsnorm_linear import norm_cublas as rl_cublas
from kprof.kernels.rmsnorm_linear import rstd_epilogue as re
from kprof.kernels.rmsnorm_linear import tuned as rl_tuned
from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.launch import CompiledLauncher, launch_hooks_installed

PLANS = Plans()
_product_launcher = CompiledLauncher(fused.product_kernel)
_split_k_launcher = CompiledLauncher(split_k.split_k_kernel)


class SplitKPlan:
    """rmsnorm_linear by its split-K kernel (norm inside the product, one launch): the output, one fp32
    workspace (partial products, then partial sums of squares) and the stream's ticket counters, then the
    launch."""

    __slots__ = ("launch", "y_layout", "ws_floats", "parts", "tiles")

    def __init__(self, launch: Launch, y_layout: tuple, ws_floats: int, parts: int, tiles: int) -> None:
        self.launch, self.y_layout, self.ws_floats, self.parts, self.tiles = launch, y_layout, ws_floats, parts, tiles

    def __call__(
        self, x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, *pointers: int
    ) -> torch.Tensor:
        y = x.new_empty_strided(*self.y_layout)
        ws = torch.empty(self.ws_floats, dtype=torch.float32, device=x.device)
        counts = launching.ticket_counters(x, self.tiles)
        launch = self.launch
        if launch.entry is not None and not launch_hooks_installed():
            xp, gp, wp, bp = pointers
            wsp = ws.data_ptr()
            launch.fast(xp, gp, wp, bp, y.data_ptr(), wsp, wsp + 4 * self.parts, counts.data_ptr())
        else:
            launch(x, g, w, w if b is None else b, y, ws[: self.parts], ws[self.parts :], counts)
        return y


def rms_norm_linear(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """``rms_norm(x, g) @ w (+ b)``: the tuned rmsnorm kernel writes the normalised rows, then cuBLAS's product
    or kprof's Triton product (with the bias in its epilogue) reads them, as
    ``rmsnorm_linear.tuned.product_route`` chooses by shape (nothing derived from the weights is kept)."""
    try:  # one flat key: what sig() says about each tensor (the bias's, or None)
        xp, gp, wp = x.data_ptr(), g.data_ptr(), w.data_ptr()
        if b is None:
            bp, bkey = wp, None
        else:
            bp = b.data_ptr()
            bkey = (b.shape, b.stride(), b.dtype, b.get_device(), bp % 16 == 0)
        key = (
            x.shape,
            x.stride(),
            x.dtype,
            x.get_device(),
            g.shape,
            g.stride(),
            g.dtype,
            g.get_device(),
            w.shape,
            w.stride(),
            w.dtype,
            w.get_device(),
            bkey,
            xp % 16 == 0,
            gp % 16 == 0,
            wp % 16 == 0,
            eps,
        )
    except (AttributeError, TypeError):  # not tensors: the checks say what is wrong
        return _rms_norm_linear_first(x, g, w, b, eps, None)
    plan = PLANS.plans.get(key)
    if plan is None:
        return _rms_norm_linear_first(x, g, w, b, eps, key)
    if type(plan) is SplitKPlan:
        return plan(x, g, w, b, xp, gp, wp, bp)
    norm, product, xn_layout, y_layout = plan
    fast = norm is not None and norm.entry is not None and not launch_hooks_installed()
    if product is CUBLAS:
        xn = x.new_empty_strided(*xn_layout)
        if fast:
            norm.fast(xp, gp, xn.data_ptr())
        else:
            _norm_rows(norm, x, g, eps, xn)
        return rl_cublas.cublas_times(xn.view(-1, xn_layout[0][-1]), w, b).view(y_layout[0])
    y = x.new_empty_strided(*y_layout)
    if fast and product.entry is not None:
        xn = x.new_empty_strided(*xn_layout)
        xnp = xn.data_ptr()
        norm.fast(xp, gp, xnp)
        product.fast(xnp, wp, bp, wp, y.data_ptr())
        return y
    xn = x.new_empty_strided(*xn_layout)
    _norm_rows(norm, x, g, eps, xn)
    product(xn, w, w if b is None else b, w, y)
    return y


def _norm_rows(norm: Launch | None, x: torch.Tensor, g: torch.Tensor, eps: float, xn: torch.Tensor) -> None:
    """The normalised rows into ``xn`` through the JIT: first launches, a launch hook installed (profilers),
    or the interpreter (no plan of rmsnorm's own: its wrapper)."""
    if norm is None:
        rmsnorm_tuned(x, g, eps, out=xn)
    else:
        norm(x, g, xn)


def _norm_launch(x: torch.Tensor, g: torch.Tensor, eps: float, key: tuple) -> Launch | None:
    """rmsnorm_tuned's launch for x's rows (output contiguous), or None where it has no plan (CPU)."""
    p = rms_tuned.make_plan(x, g)
    if p is None:
        return None
    tail = (*p.ints, float(eps), *p.constexprs)
    return Launch(p.launcher, ("ops", p.key, sig(x), sig(g), tail), p.grid, tail, {"num_warps": p.num_warps})


def _rms_norm_linear_first(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float, key: tuple
) -> torch.Tensor:
    x2d, n = check_inputs(x, g, w, b)
    m, k = x2d.shape
    plannable = key is not None and w.is_contiguous() and (b is None or b.is_contiguous()) and row_stride(x) is not None
    route = rl_tuned.product_route(x2d, w)
    if route == "split_k":
        return _split_k_first(x, x2d, g.contiguous(), w, b, eps, key if plannable else None, PLANS)
    if route == "cublas":
        y = rl_cublas.norm_then_cublas(x2d, g, w, b, eps)
        if plannable:
            layouts = (contiguous_layout(x.shape), contiguous_layout(tuple(x.shape[:-1]) + (n,)))
            PLANS.put(key, (_norm_launch(x, g, eps, key), CUBLAS, *layouts))
        return y.view(*x.shape[:-1], n)
    xn = rmsnorm_tuned(x2d, g, eps)
    wc = w.contiguous()
    y = torch.empty((x2d.shape[0], n), dtype=x.dtype, device=x.device)
    meta, options = fused.launch_product(xn, wc, b, y, eps, norm=0)
    if plannable:
        named = {
            **meta,
            "NORM": 0,
            "HAS_BIAS": b is not None,
            "IEEE": x.dtype == torch.float32 or launching.interpreting(),
            "ALIGNED": tiles.promise_aligned(xn, wc),
            "PDL": False,
        }
        tail = (m, n, k, k, 1, n, 1, float(eps)) + constexpr_tail(fused.autotuned_kernel, 13, named)
        grid = (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
        product = Launch(_product_launcher, ("ops",) + key + (tail, tuple(options.items())), grid, tail, options)
        PLANS.put(
            key,
            (
                _norm_launch(x, g, eps, key),
                product,
                contiguous_layout(x.shape),
                contiguous_layout(tuple(x.shape[:-1]) + (n,)),
            ),
        )
    return y.view(*x.shape[:-1], n)


def _split_k_first(
    x: torch.Tensor,
    x2d: torch.Tensor,
    g: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor | None,
    eps: float,
    key: tuple | None,
    plans: Plans,
    folded: bool = False,
) -> torch.Tensor:
    """The split-K kernel's first call at this signature (checked inputs), and its plan in ``plans`` where ``key``
    is given; ``folded``: ``w`` is ``diag(g) W`` (the prepared objects' weight), g is not read."""
    m, k = x2d.shape
    n = w.shape[1]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    meta, options = split_k.launch_split_k(x2d, g, w, b, y, eps, split_k.config_for(x2d, n, folded), folded)
    if key is not None:  # the plan repeats that launch: its constexprs, split and K range as launched
        bm, bn, splits = meta["BLOCK_M"], meta["BLOCK_N"], meta["SPLIT_K"]
        tiles_count = triton.cdiv(m, bm) * triton.cdiv(n, bn)
        parts, ws_floats = split_k.workspace_floats(m, n, bm, bn, splits)
        tail = (m, n, k, splits, meta["K_PER_SPLIT"], row_stride(x), 1, n, 1, float(eps))
        tail += constexpr_tail(split_k.split_k_kernel, 18, meta)
        launch = Launch(
            _split_k_launcher, ("ops",) + key + (tail, tuple(options.items())), (tiles_count * splits,), tail, options
        )
        layout = contiguous_layout(tuple(x.shape[:-1]) + (n,))
        plans.put(key, SplitKPlan(launch, layout, ws_floats, parts, tiles_count))
    return y.view(*x.shape[:-1], n)


# ------------------------------------------------------------ rms_norm_linear on prepared weights (split-K, TMA)
PREPARED_PLANS = Plans()
PLAIN = "plain"  # a prepared plan: the signature runs the plain op (no route of its own on the folded weight)
_rstd_launcher = CompiledLauncher(re.row_rstd_kernel)
_tma_launcher = CompiledLauncher(re.tma_product_kernel)
_tma_decode_launcher = CompiledLauncher(tma_decode.tma_decode_kernel)


class PreparedTMAPlan:
    """rmsnorm_linear on folded weights by the rstd kernel and the persistent TMA product (PDL where the GPU has
    it): both launches, the product's tiles, the layouts of y and rstd. The six descriptors hold x's, the fold's and
    y's addresses: once the product is compiled, its launch's ``described()`` keeps what Triton encodes from them by
    those three addresses (:class:`kprof.launch.DescribedLaunch`), and they are made again only for addresses not seen
    before, before the rstd kernel is launched (so the product follows it at once). What is kept holds no tensor, so a
    refreshed weight's old fold is freed."""

    __slots__ = ("rstd", "product", "plan", "k", "y_layout", "r_layout")

    def __init__(self, rstd: Launch, product: Launch, plan: tiles.TilePlan, k: int, m: int, n: int) -> None:
        self.rstd, self.product, self.plan, self.k = rstd, product, plan, k
        self.y_layout = contiguous_layout((m, n))
        self.r_layout = contiguous_layout((m,))

    def __call__(self, x: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        x2d = x.view(-1, self.k)
        y = x.new_empty_strided(*self.y_layout)
        rstd = x.new_empty_strided(*self.r_layout, dtype=torch.float32)
        p = self.plan
        bias = rstd if b is None else b
        ws, counters = re.stream_k_buffers(x2d, p, x2d.shape[0], y.shape[1], rstd)

        def descriptors() -> tuple:
            return tiles.tile_descriptors(x2d, wf, y, p.tiles, p.subtile, p.split)

        if self.rstd.entry is not None and self.product.entry is not None and not launch_hooks_installed():
            described = self.product.described()
            if described is not None:
                rest = (rstd.data_ptr(), bias.data_ptr(), ws.data_ptr(), counters.data_ptr(), *self.product.tail)
                prepared = described.prepare((x2d.data_ptr(), wf.data_ptr(), y.data_ptr()), descriptors, rest)
                self.rstd.fast(x2d.data_ptr(), rstd.data_ptr())
                described.launch(prepared, rest)
            else:
                made = descriptors()
                self.rstd.fast(x2d.data_ptr(), rstd.data_ptr())
                self.product.fast(*made, rstd.data_ptr(), bias.data_ptr(), ws.data_ptr(), counters.data_ptr())
        else:
            made = descriptors()
            self.rstd(x2d, rstd)
            self.product(*made, rstd, bias, ws, counters)
        return y.view(*x.shape[:-1], y.shape[1])


class PreparedTMADecodePlan:
    """rmsnorm_linear on folded weights at decode rows by the TMA decode kernel (``tma_decode.py``): its launch and
    y's layout. Its two descriptors (x's, the fold's) are encoded again only for a pair of addresses not seen before,
    as :class:`PreparedTMAPlan`'s are."""

    __slots__ = ("product", "k", "y_layout")

    def __init__(self, product: Launch, x_shape: tuple, n: int) -> None:
        self.product, self.k = product, x_shape[-1]
        self.y_layout = contiguous_layout(tuple(x_shape[:-1]) + (n,))

    def __call__(self, x: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        x2d = x.view(-1, self.k)
        y = x.new_empty_strided(*self.y_layout)
        bias = y if b is None else b
        product = self.product
        if product.entry is not None and not launch_hooks_installed():
            described = product.described()
            rest = (bias.data_ptr(), y.data_ptr(), *product.tail)
            if described is not None:
                described((x2d.data_ptr(), wf.data_ptr()), lambda: tma_decode.descriptors(x2d, wf), rest)
            else:
                product.fast(*tma_decode.descriptors(x2d, wf), bias.data_ptr(), y.data_ptr())
        else:
            product(*tma_decode.descriptors(x2d, wf), bias, y)
        return y


class PreparedPointerPlan:
    """rmsnorm_linear on folded weights under ``rstd_epilogue.TMA_MIN_ROWS`` rows (or where TMA cannot address the
    operands) by the rstd kernel and the pointer product that scales its rows by rstd: both launches as the checked
    path ran them (the product's tiles as its autotuner picked them), and the layouts of y and rstd. Without it each
    such call went through the JIT and the autotuner's dispatch: 167-446 µs of host time per call at 128-512 rows on
    an H200, against 19-116 µs on the GPU; with it 34-69 µs at the same 32 points on another H200
    (benchmarks/results/grid/h200-mid-rows-plan-7940d77/)."""

    __slots__ = ("rstd", "product", "k", "y_layout", "r_layout")

    def __init__(self, rstd: Launch, product: Launch, x_shape: tuple, m: int, n: int) -> None:
        self.rstd, self.product, self.k = rstd, product, x_shape[-1]
        self.y_layout = contiguous_layout(tuple(x_shape[:-1]) + (n,))
        self.r_layout = contiguous_layout((m,))

    def __call__(self, x: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        y = x.new_empty_strided(*self.y_layout)
        rstd = x.new_empty_strided(*self.r_layout, dtype=torch.float32)
        bias = wf if b is None else b
        if self.rstd.entry is not None and self.product.entry is not None and not launch_hooks_installed():
            xp, rp = x.data_ptr(), rstd.data_ptr()
            self.rstd.fast(xp, rp)
            self.product.fast(xp, wf.data_ptr(), bias.data_ptr(), rp, y.data_ptr())
        else:
            x2d = x.view(-1, self.k)
            self.rstd(x2d, rstd)
            self.product(x2d, wf, bias, rstd, y)
        return y


def prepared_op(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, wf: torch.Tensor | None, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """What ``ops.PreparedRMSNormLinear`` runs on its Triton path (and the ``triton_prepared_op`` version, so that
    ``kprof grid`` times the object's own choice), through :func:`rms_norm_linear_prepared`: the kernels on the
    folded weight ``wf`` at decode rows (the TMA decode kernel where ``tma_decode.serves``, the split-K kernel where the
    plain op gives it) and from
    ``rstd_epilogue.TMA_MIN_ROWS`` rows (any under the interpreter); between them, from ``tuned.RACE_MIN_ROWS`` rows,
    the plain op or the statistics-first kernels on the fold, whichever a race on the shape's first call timed faster
    (:func:`mid_rows_statistics`), each then launched from its plan; the plain op where no fold is kept (``wf`` None)
    and at the rows between the decode rows and the race's, decided from x's rows before any check, so those calls
    cost what the plain op costs."""
    count = rows(x)
    few = count is not None and count <= rl_tuned.SPLIT_K_ROWS[-1]
    if wf is not None and (few or many_rows(x, rl_tuned.RACE_MIN_ROWS)):
        return rms_norm_linear_prepared(x, g, w, wf, b, eps)  # the checked path on a signature's first call
    return rms_norm_linear(x, g, w, b, eps)


@FAMILY.provider(
    "triton_prepared_op",
    kind="triton",
    description="what ops.PreparedRMSNormLinear runs at the shape, launched as it launches it (op_plan.prepared_op: "
    "the TMA decode or split-K kernel on the fold, the statistics-first kernels or the plain op), on the fold the "
    "object keeps (fused.held_fold, made once per input set before the timed calls); kprof grid compares it with the "
    "best version at each point. The inputs are checked when the fold is made and on a signature's first call, as "
    "the object checks them (off a GPU on every call), so its host time per call is the object's",
)
def rmsnorm_linear_prepared_op(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    b = dense_vector(b)  # the kernels read the bias at unit stride
    if not getattr(x, "is_cuda", False):  # off a GPU every call is checked: CPU tensors need the interpreter
        check_inputs(x, g, w, b)
    wf = fused.prepared_held_fold.get(lambda g_, w_: _checked_held_fold(x, g_, w_, b), g, w)
    return prepared_op(x, g, w, wf, b, eps)


def _checked_held_fold(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None
) -> torch.Tensor | None:
    """The object's fold of ``g`` into ``w``, the inputs checked first: a bad g or w says what is wrong."""
    check_inputs(x, g, w, b)
    return fused.held_fold(g, w)


def rms_norm_linear_prepared(
    x: torch.Tensor,
    g: torch.Tensor,
    w: torch.Tensor,
    wf: torch.Tensor,
    b: torch.Tensor | None,
    eps: float,
    kernels: str = "op",
) -> torch.Tensor:
    """``rms_norm(x, g) @ w (+ b)`` from ``wf = diag(g) w``: the checked path on a signature's first call, then its
    plan (no checks, no JIT binding). ``kernels="op"`` (the ops API's prepared objects): on an H200 at the decode
    shapes ``tma_decode.serves`` names, the TMA decode kernel; where the plain op runs the
    split-K kernel (decode rows), that kernel on ``wf`` where it pipelines x (``split_k.folded_serves``), and on an
    H200 between the kernel's column classes too (``split_k.folded_between_classes``); from
    ``rstd_epilogue.TMA_MIN_ROWS`` rows (any under the interpreter) the statistics-first kernels
    (``rstd_epilogue.rmsnorm_linear_folded``); elsewhere the plain op. ``"split_k"``, ``"statistics"`` or
    ``"tma_decode"``: those kernels at any rows they take (the harness's versions on prepared weights)."""
    try:
        key = (
            kernels,
            sig(x),
            sig(g),
            sig(w),
            sig(wf),
            None if b is None else sig(b),
            eps,
            launching.pdl_ready(x),
        )
    except (AttributeError, TypeError):  # not tensors: the checks say what is wrong
        key = None
    plan = PREPARED_PLANS.get(key) if key is not None else None
    if type(plan) is SplitKPlan:
        return plan(
            x, g, wf, b, x.data_ptr(), g.data_ptr(), wf.data_ptr(), wf.data_ptr() if b is None else b.data_ptr()
        )
    if plan is PLAIN:
        return rms_norm_linear(x, g, w, b, eps)
    if plan is not None:
        return plan(x, wf, b)
    return _prepared_first(x, g, w, wf, b, eps, key, kernels)


# The prepared objects between the decode rows and the TMA kernels' (tuned.RACE_MIN_ROWS to TMA_MIN_ROWS - 1 rows,
# 16-bit): the plain op, or the statistics-first kernels on the fold (the rstd kernel, then the pointer product
# scaling its rows), raced on a shape's first call, the plain op kept unless the other is over 2% faster. No rule
# held: on two H200s at 128 rows the statistics-first kernels took 0.92-1.31x the plain op's GPU time at the same 12
# points of 14336 and 28672 columns (128x4096x14336 bf16: 0.94x on one, 1.31x on the other), and 1.06-2.44x at 5504
# and 11008 columns (benchmarks/results/grid/h200-prepared-op-8acaa92/); at 512 rows 1.02-1.47x at all 12 points of
# each dtype (benchmarks/results/grid/h200-main-521b2f6/, h200-d1f19ba/). Either route then launches from its plan
# (PLAIN, PreparedPointerPlan). On a third H200 the races took the statistics-first kernels at 4 of 12 points of 128
# rows in each dtype (0.94-0.97x the plain op's GPU time there) and at none of 4 of 512 rows; the object was then
# within 1.02x of the best version at 28 of 32 points, 1 beyond (h200-mid-rows-plan-7940d77/); on a fourth, at none
# of the 12 points of 512 rows in either dtype (1.01-1.56x the plain op's time), within 1.02x at 23 of 24, 1 not
# judged (its rows512-66cb039/).
_mid_rows = routes.RouteRace("rmsnorm_linear prepared: the plain op or the statistics-first kernels on the fold")


def mid_rows_statistics(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None, eps: float
) -> bool:
    """Whether a prepared object's call of ``x``'s rows runs the statistics-first kernels on the fold ``wf`` rather
    than the plain op: by the race of the two on the shape's first call (``_mid_rows``) from ``tuned.RACE_MIN_ROWS``
    rows in 16-bit where races run (:func:`kprof.kernels.lib.routes.can_race`); the plain op elsewhere."""
    m = rows(x)
    if m is None or m < rl_tuned.RACE_MIN_ROWS or x.dtype not in (torch.bfloat16, torch.float16):
        return False
    key = (m, w.shape[0], w.shape[1], x.dtype, x.get_device(), x.stride(), wf.stride(), b is None)
    run = {
        "plain": lambda: rms_norm_linear(x, g, w, b, eps),
        "statistics": lambda: re.rmsnorm_linear_folded(x, g, w, b, eps, wf),
    }
    return _mid_rows.choose(key, run, "plain", x) == "statistics"


def _prepared_first(
    x: torch.Tensor,
    g: torch.Tensor,
    w: torch.Tensor,
    wf: torch.Tensor,
    b: torch.Tensor | None,
    eps: float,
    key: Any,
    kernels: str,
) -> torch.Tensor:
    """The checked path, then the plan of this signature: the TMA decode kernel's, the split-K kernel's, the plain
    op's (PLAIN), the pointer product's after the rstd kernel, or the TMA product's (contiguous rows) after it."""
    if kernels not in ("op", "split_k", "statistics", "tma_decode"):
        raise ValueError(f"rmsnorm_linear: kernels={kernels!r}; give 'op', 'split_k', 'statistics' or 'tma_decode'")
    x2d, n = check_inputs(x, g, w, b)
    checks.check_float("rmsnorm_linear", "wf", wf, like=w)
    checks.check_shape("rmsnorm_linear", "wf", wf, w.shape)
    plannable = key is not None and row_stride(x) is not None and wf.is_contiguous()
    plannable = plannable and (b is None or b.is_contiguous())
    if kernels == "tma_decode" or (kernels == "op" and tma_decode.serves(x2d, wf)):
        return _tma_decode_first(x, x2d, wf, b, eps, key if plannable else None)
    route = rl_tuned.product_route(x2d, wf) if kernels == "op" else None
    split = route == "split_k"
    between = route in ("cublas", "triton") and not rl_tuned.ragged_weights(x2d, wf)
    between = between and split_k.folded_between_classes(x2d, n)
    if kernels == "split_k" or (split and split_k.folded_serves(x2d, n)) or between:
        return _split_k_first(x, x2d, g.contiguous(), wf, b, eps, key if plannable else None, PREPARED_PLANS, True)
    mid = kernels == "op" and not split and x2d.shape[0] < re.TMA_MIN_ROWS and not launching.interpreting()
    if split or (mid and not mid_rows_statistics(x, g, w, wf, b, eps)):
        if plannable:
            PREPARED_PLANS.put(key, PLAIN)
        return rms_norm_linear(x, g, w, b, eps)
    y, pointer = re.folded_launches(x, g, w, b, eps, wf)
    if not plannable:
        return y
    if pointer is not None:
        PREPARED_PLANS.put(key, _pointer_plan(x, wf, b, eps, n, key, *pointer))
        return y
    k = w.shape[0]
    if row_stride(x) != k:  # the TMA plan reads x's rows as one contiguous [M, K]
        return y
    x2d = x.view(-1, k)
    m = x2d.shape[0]
    pdl = key[-1]
    sms = tiles.persistent_sms(x2d)
    tma = re.tma_plan(m, k, n, sms)
    meta = re.tma_meta(tma, b is not None, pdl)
    options = {o: meta.pop(o) for o in ("num_warps", "num_stages", "launch_pdl", "maxnreg") if o in meta}
    tail = (m, n, k, tma.parts) + constexpr_tail(re.tma_product_kernel, 14, meta)
    rstd = _rstd_launch(m, k, k, eps, key, sms if pdl else 0)
    product_key = ("prepared", key, tail, tuple(options.items()))
    product = Launch(_tma_launcher, product_key, (tma.programs,), tail, options)
    PREPARED_PLANS.put(key, PreparedTMAPlan(rstd, product, tma, k, m, n))
    return y


def _tma_decode_first(
    x: torch.Tensor, x2d: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None, eps: float, key: tuple | None
) -> torch.Tensor:
    """The TMA decode kernel's first call at this signature (checked inputs), and its plan where ``key`` is given and
    x's rows are one contiguous [M, K] (the plan reads them as one)."""
    m, k = x2d.shape
    n = wf.shape[1]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    run = tma_decode.launch_tma_decode(x2d, wf, b, y, eps)
    if key is not None and row_stride(x) == k:
        options = {o: run.pop(o) for o in ("num_warps", "num_stages") if o in run}
        tail = (m, n, k, float(eps)) + constexpr_tail(tma_decode.tma_decode_kernel, 8, run)
        product = Launch(
            _tma_decode_launcher, ("prepared", key, tail, tuple(options.items())), tma_decode.grid(n), tail, options
        )
        PREPARED_PLANS.put(key, PreparedTMADecodePlan(product, tuple(x.shape), n))
    return y.view(*x.shape[:-1], n)


def _pointer_plan(
    x: torch.Tensor,
    wf: torch.Tensor,
    b: torch.Tensor | None,
    eps: float,
    n: int,
    key: tuple,
    meta: dict,
    options: dict,
) -> PreparedPointerPlan:
    """The plan that repeats ``rstd_epilogue.folded_launches``' pointer route as it just ran: the rstd kernel as
    ``launch_row_rstd`` launched it, the product with the tiles (``meta``) and launch ``options`` it ran with."""
    k, stride = x.shape[-1], row_stride(x)
    m = x.numel() // k
    pdl = key[-1]
    rstd = _rstd_launch(m, k, stride, eps, key, launching.sm_count(x) if pdl else 0)
    named = {
        **meta,
        "NORM": 2,
        "HAS_BIAS": b is not None,
        "IEEE": x.dtype == torch.float32 or launching.interpreting(),
        "ALIGNED": tiles.promise_aligned(x.view(-1, k), wf),
        "PDL": pdl,
    }
    tail = (m, n, k, stride, 1, n, 1, float(eps)) + constexpr_tail(fused.autotuned_kernel, 13, named)
    options = {**options, **launching.pdl_launch(pdl)}
    grid = (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
    product = Launch(_product_launcher, ("prepared", key, tail, tuple(options.items())), grid, tail, options)
    return PreparedPointerPlan(rstd, product, tuple(x.shape), m, n)


def _rstd_launch(m: int, k: int, stride: int, eps: float, key: tuple, sms: int) -> Launch:
    """The rstd kernel's launch in a prepared plan, as ``rstd_epilogue.launch_row_rstd`` launches it over [m, k] rows
    of row stride ``stride``: with the grid the product overlaps where the plan's key says PDL (``sms`` the SMs it
    spreads over, 0 without PDL)."""
    pdl = key[-1]
    programs, meta = re.row_rstd_launch(m, k, sms, pdl)
    options = {"num_warps": meta.pop("num_warps")}
    tail = (m, k, stride, 1, float(eps)) + constexpr_tail(re.row_rstd_kernel, 7, meta)
    return Launch(_rstd_launcher, ("prepared", key, tail), (programs,), tail, options)
