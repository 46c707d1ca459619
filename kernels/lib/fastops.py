"""Launch plans for :mod:`kprof.kernels.ops`: the Triton path with as little host work per call as the
PyTorch code it replaces.

At decode sizes a kernel runs 2-25 us on an H100 and the host is what a model waits for: the ops layer
once cost 1.8-3.6x the host time of the PyTorch code (a registry lookup, imports, input checks, config
choice, the JIT's argument binding and ``triton.autotune``'s dispatch on every call). Here the first call
with a given signature (shapes, strides, dtypes, device, 16-byte alignment of each tensor, scalar
arguments) runs the checked path: the family's input checks, the configuration choice, the autotuner
where the kernel has one. It records a :class:`Plan` of everything that depends only on that signature.
Later calls with the same signature look the plan up in one dict, allocate the outputs and launch the
compiled kernels through Triton's C launcher (:class:`kprof.launch.CompiledLauncher`). The signature
covers every property the checks look at, so a call that would fail them never finds a plan; tensor
values are never part of a plan (nothing derived from the data is kept).

Inputs a plan cannot describe (rows that do not collapse into one stride, a strided last dimension,
non-contiguous weights) take the checked path on every call, which copies as the family wrappers do.

Per call, the hottest ops (fused_add_rms_norm, rms_norm_linear) pass the C launcher raw addresses, not
tensors: for a tensor it calls ``data_ptr()`` and then ``cuPointerGetAttribute`` (a driver call) per
pointer argument. Passing tensors (five pointers for fused_add_rms_norm, eight over rms_norm_linear's two
launches) and allocating with ``torch.empty(x.shape, dtype=..., device=...)`` is why fused_add_rms_norm cost
24.9 us per call on an H100 against 11.6 us for ``rmsnorm_tuned`` (one launch, addresses passed, outputs
by ``empty_like``) at 1 row. The plan's signature holds every tensor's device, and the checks
that built the plan put all of them on x's device, so the driver's check has nothing left to catch.
Outputs are allocated with ``new_empty_strided`` from shapes and strides kept in the plan: ``torch.empty``
with a ``torch.Size``, ``dtype=`` and ``device=`` parses its arguments at about three times the cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import triton

from kprof.kernels.lib import gated as _gated
from kprof.kernels.lib import launching, tiles
from kprof.launch import CompiledLauncher, launch_hooks_installed

_MAX_PLANS = 4096
CUBLAS = "cublas"  # a plan's product: cuBLAS's (torch.mm / torch.addmm), not a Triton launch
_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # absent from CPU-only builds


def sig(t: torch.Tensor) -> tuple:
    """What a plan depends on about one tensor (its values never)."""
    return (t.shape, t.stride(), t.dtype, t.get_device(), t.data_ptr() % 16 == 0)


def row_stride(t: torch.Tensor) -> int | None:
    """The row stride of ``t`` seen as ``[rows, last]`` without a copy, or None (copy needed)."""
    if t.stride(-1) != 1:
        return None
    try:
        return t.view(-1, t.shape[-1]).stride(0)
    except RuntimeError:
        return None


class Launch:
    """One kernel launch whose arguments after the leading tensors (sizes, strides, scalars, constexprs in
    signature order) and launch options are fixed by the plan's signature."""

    __slots__ = ("launcher", "key", "grid", "tail", "options", "entry")

    def __init__(
        self, launcher: CompiledLauncher, key: tuple, grid: Sequence[int], tail: tuple, options: dict[str, Any]
    ) -> None:
        self.launcher, self.key, self.tail, self.options = launcher, key, tail, options
        self.grid = (tuple(grid) + (1, 1))[:3]
        self.entry: Any = None  # the compiled kernel's launch entry, once the JIT has built it

    def __call__(self, *tensors: torch.Tensor) -> None:
        entry = self.entry
        if entry is None or launch_hooks_installed():
            # first launch of this plan, a launch hook installed (profilers), or the interpreter
            entry = self.launcher.lookup(self.key)
            if entry is None:
                self.launcher.launch_jit(self.key, self.grid, tensors + self.tail, **self.options)
                return
            self.entry = entry
        launch, prefix, device = entry
        g = self.grid
        launch(g[0], g[1], g[2], _stream(device), *prefix, *tensors, *self.tail)

    def fast(self, *pointers: int) -> None:
        """The compiled launch with the leading tensors given as raw addresses: only once ``entry`` is set
        and no launch hook is installed (``launch_hooks_installed()``); otherwise call the Launch itself."""
        launch, prefix, device = self.entry
        g = self.grid
        launch(g[0], g[1], g[2], _stream(device), *prefix, *pointers, *self.tail)


def contiguous_layout(shape: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(shape, strides) of a new contiguous tensor, as plain tuples (cheap to pass to ``new_empty_strided``)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(shape), tuple(reversed(strides))


def constexpr_tail(jit_fn: Any, first: int, named: dict[str, Any]) -> tuple:
    """``named``'s values for ``jit_fn``'s arguments from position ``first`` on, in signature order."""
    fn = jit_fn if hasattr(jit_fn, "arg_names") else jit_fn.fn  # an Autotuner wraps the JITFunction
    return tuple(named[n] for n in fn.arg_names[first:])


class Plans:
    """Plans by call signature (bounded: a caller cycling through many shapes rebuilds them)."""

    def __init__(self) -> None:
        self.plans: dict[tuple, Any] = {}

    def get(self, key: tuple) -> Any:
        return self.plans.get(key)

    def put(self, key: tuple, plan: Any) -> Any:
        if len(self.plans) >= _MAX_PLANS:
            self.plans.clear()
        self.plans[key] = plan
        return plan


# --------------------------------------------------------------------------------------- add + rmsnorm
_add_plans = Plans()


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
        return _add_checked(x, residual, weight, eps)
    plan = _add_plans.plans.get(key)
    if plan is None:
        plan = _add_plans.put(key, _add_plan(x, residual, weight, eps))
    if plan is False:
        return _add_checked(x, residual, weight, eps)
    launch, shape, strides = plan
    y = x.new_empty_strided(shape, strides)
    h = x.new_empty_strided(shape, strides)
    if launch.entry is not None and not launch_hooks_installed():
        launch.fast(xp, rp, wp, y.data_ptr(), h.data_ptr())
    else:
        launch(x, residual, weight, y, h)
    return y, h


def _add_checked(x: Any, residual: Any, weight: Any, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    from kprof.kernels.add_rmsnorm.tuned import add_rmsnorm_tuned

    return add_rmsnorm_tuned(x, residual, weight, eps)


def _add_plan(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[Launch | AddSplitLaunch, tuple[int, ...], tuple[int, ...]] | bool:
    """The checked path's choice as (Launch, output shape, output strides), or False where a plan cannot
    describe the inputs."""
    from kprof.kernels.add_rmsnorm import tuned
    from kprof.kernels.add_rmsnorm.family import validate

    validate(x, residual, weight)
    xs, rs = row_stride(x), row_stride(residual)
    if xs is None or rs is None or weight.stride(0) != 1:
        return False
    n = x.shape[-1]
    n_rows = x.numel() // n
    fast_memory = launching.fast_memory(x)
    cfg = tuned.choose_config(
        n, x.element_size(), n_rows, launching.sm_count(x), x.is_cuda, x.dtype == torch.float16, fast_memory
    )
    if cfg.kernel in ("cooperative", "pipelined"):  # a workspace, the meeting's counters and a launch: the checked path
        return False
    sigs = (sig(x), sig(residual), sig(weight))
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
        tail = (xs, rs, n, float(eps), cfg.block_n, n if cfg.cols_const else 0, align)
        launch = Launch(
            tuned.looped_launcher,
            ("ops", cfg, tail, *sigs),
            (n_rows,),
            tail,
            {"num_warps": cfg.num_warps},
        )
    return (launch, *contiguous_layout(x.shape))


class AddSplitLaunch:
    """fused_add_rms_norm over few wide rows, each split over several programs: two launches (h and partial
    sums of squares, then y from h) and a float32 workspace of partial sums per call. Called like a
    :class:`Launch` with (x, residual, weight, y, h), as tensors or (``fast``) raw addresses."""

    __slots__ = ("first", "second", "ws_shape", "ws_strides", "template")

    def __init__(self, first: Launch, second: Launch, ws_shape: tuple[int, int], template: torch.Tensor) -> None:
        self.first, self.second = first, second
        self.ws_shape, self.ws_strides = contiguous_layout(ws_shape)
        self.template = template  # an empty float32 tensor on x's device: workspaces are allocated like it

    @property
    def entry(self) -> Any:
        """Set once both launches have compiled entries (until then, and under hooks, call the object)."""
        return self.second.entry if self.first.entry is not None else None

    def __call__(
        self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, h: torch.Tensor
    ) -> None:
        ws = self.template.new_empty_strided(self.ws_shape, self.ws_strides)
        self.first(x, residual, h, ws)
        self.second(h, weight, y, ws)

    def fast(self, xp: int, rp: int, wp: int, yp: int, hp: int) -> None:
        ws = self.template.new_empty_strided(self.ws_shape, self.ws_strides)  # freed stream-ordered, after use
        wsp = ws.data_ptr()
        self.first.fast(xp, rp, hp, wsp)
        self.second.fast(hp, wp, yp, wsp)


def _add_split_launch(
    cfg: Any, x: torch.Tensor, xs: int, rs: int, n_rows: int, n: int, eps: float, sigs: tuple
) -> AddSplitLaunch:
    """The split path's two launches (``kprof.kernels.add_rmsnorm.split``) as one plan entry."""
    from kprof.kernels.add_rmsnorm import split

    chunk = split.chunk_of(n, cfg.splits)
    grid, options, meta = (n_rows, cfg.splits), {"num_warps": cfg.num_warps}, (cfg.block_n, cfg.splits)
    first_tail = (xs, rs, n, chunk, *meta)
    second_tail = (n, n, n, chunk, eps, *meta)  # h and y contiguous: row strides N
    first = Launch(split.sum_launcher, ("ops", cfg, first_tail, *sigs), grid, first_tail, options)
    second = Launch(split.apply_launcher, ("ops", cfg, second_tail, *sigs), grid, second_tail, options)
    return AddSplitLaunch(first, second, (n_rows, cfg.splits), x.new_empty((0,), dtype=torch.float32))


# ---------------------------------------------------------------------------------- gated activations
_gated_plans = Plans()


def _gated_kernels(act: int) -> _gated.GatedKernels:
    """The kernels of the family computing ``act`` (imported on first use, as the other families' here)."""
    if act == _gated.SILU:
        from kprof.kernels.silu_mul.kernels import KERNELS
    else:
        from kprof.kernels.gelu_mul.kernels import KERNELS
    return KERNELS


def gated(x: torch.Tensor, act: int, op: str) -> torch.Tensor:
    key = (sig(x), act)
    plan = _gated_plans.get(key)
    if plan is None:
        plan = _gated_plans.put(key, _gated_plan(x, act, op))
    if plan is False:
        x2d, y2d, y = _gated.check_inputs(op, x)
        cfg = _gated.choose_config(y2d.shape[1], x2d.element_size(), y2d.shape[0], launching.sm_count(x2d))
        _gated.launch_tile(_gated_kernels(act), cfg, x2d, y2d)
        return y
    launch, out_shape = plan
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    launch(x, y)
    return y


def _gated_plan(x: torch.Tensor, act: int, op: str) -> tuple[Launch, tuple[int, ...]] | bool:
    _gated.validate(op, x)
    xs = row_stride(x)
    if xs is None:
        return False
    h = x.shape[-1] // 2
    n_rows = x.numel() // x.shape[-1]
    cfg = _gated.choose_config(h, x.element_size(), n_rows, launching.sm_count(x))
    i64 = n_rows * max(xs, 1) >= 2**31
    align = launching.vector_align(x.element_size(), h, xs)
    kernels = _gated_kernels(act)
    if cfg.flat:
        tail = (xs, n_rows * h, h, cfg.block_h, i64, align)
        launch = Launch(
            kernels.flat_launcher,
            ("ops", cfg, tail, sig(x)),
            (triton.cdiv(n_rows * h, cfg.block_h),),
            tail,
            {"num_warps": cfg.num_warps},
        )
    else:
        tail = (xs, n_rows, h, cfg.block_h, cfg.rows, cfg.hints, i64, align)
        launch = Launch(
            kernels.tile_launcher,
            ("ops", cfg, tail, sig(x)),
            (triton.cdiv(n_rows, cfg.rows), triton.cdiv(h, cfg.block_h)),
            tail,
            {"num_warps": cfg.num_warps},
        )
    return launch, tuple(x.shape[:-1]) + (h,)


# ------------------------------------------------------------------------------------------- swiglu
_swiglu_plans = Plans()
_swiglu_launcher: CompiledLauncher | None = None
_swiglu_split_launcher: CompiledLauncher | None = None
_products_then_silu_mul: Any = None  # swiglu's cuBLAS route, bound by the first call that plans it


def swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``silu(x @ Wg) * (x @ Wu)`` on the weights as given (no derived copy): the tiled kernel (pinned tiles up
    to 128 rows, autotuned above), or cuBLAS's two products then kprof's silu_mul kernel where
    ``swiglu.tuned.cublas_products`` or ``ragged_products`` says so."""
    key = (sig(x), sig(w_gate), sig(w_up))
    plan = _swiglu_plans.get(key)
    if plan is None:
        return _swiglu_first(x, w_gate, w_up, key)
    launch, out_shape, unused_pointers = plan
    if launch is CUBLAS:
        return _products_then_silu_mul(x.view(-1, x.shape[-1]), w_gate, w_up).view(out_shape)
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    if unused_pointers:  # the unsplit split-K kernel: its workspace and counters are never touched
        launch(x, w_gate, w_up, y, y, y)
    else:
        launch(x, w_gate, w_up, y)
    return y


def _swiglu_first(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, key: tuple) -> torch.Tensor:
    """The checked path (the autotuner runs on a new shape above the pinned tiles' rows), then the plan for
    the next calls."""
    global _swiglu_launcher, _products_then_silu_mul
    from kprof.kernels.swiglu import split_k, tuned

    x2d, ff = tuned.check_inputs(x, w_gate, w_up)
    xs = row_stride(x)
    plannable = xs is not None and w_gate.is_contiguous() and w_up.is_contiguous()
    raced = tuned.raced_route(x2d, w_gate, w_up, interleaved=False)  # None: the static rules decide
    wg, wu = tuned.weights_in_layout(w_gate, w_up, "kn")
    rules = raced is None and (tuned.cublas_products(x2d.shape[0], ff) or tuned.ragged_products(x2d, wg))
    if raced == "cublas" or rules:
        from kprof.kernels.swiglu.cublas_silu import products_then_silu_mul

        if plannable:
            _products_then_silu_mul = products_then_silu_mul
            _swiglu_plans.put(key, (CUBLAS, tuple(x.shape[:-1]) + (ff,), False))
        return products_then_silu_mul(x2d, w_gate, w_up).view(*x.shape[:-1], ff)
    y = torch.empty((x2d.shape[0], ff), dtype=x.dtype, device=x.device)
    config = split_k.ops_config(x2d, ff)
    if config is not None:
        meta, options = split_k.launch_split_k(x2d, wg, wu, y, config)
        if plannable and meta["SPLIT_K"] == 1:  # split launches (none in the table) take this path each call
            launch = _unsplit_launch(x2d, xs, ff, key, meta, options)
            _swiglu_plans.put(key, (launch, tuple(x.shape[:-1]) + (ff,), True))
        return y.view(*x.shape[:-1], ff)
    meta, options = tuned.launch_tuned(x2d, wg, wu, y)
    if plannable:
        m, k = x2d.shape
        named = {**meta, "IEEE": tuned.ieee(x2d), "ALIGNED": tiles.promise_aligned(x2d, wg)}
        tail = (m, ff, k, xs, 1, ff, 1) + constexpr_tail(tuned.autotuned_kernel, 11, named)
        if _swiglu_launcher is None:
            _swiglu_launcher = CompiledLauncher(tuned.tiled_kernel)
        grid = (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(ff, meta["BLOCK_N"]),)
        _swiglu_plans.put(
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
    global _swiglu_split_launcher
    from kprof.kernels.swiglu import split_k

    m, k = x2d.shape
    tail = (m, ff, k, 1, meta["K_PER_SPLIT"], xs, 1, ff, 1) + constexpr_tail(split_k.split_k_kernel, 15, meta)
    if _swiglu_split_launcher is None:
        _swiglu_split_launcher = CompiledLauncher(split_k.split_k_kernel)
    grid = (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(ff, meta["BLOCK_N"]),)
    return Launch(_swiglu_split_launcher, ("ops", "split") + key + (tail, tuple(options.items())), grid, tail, options)


# ----------------------------------------------------------------------------- rmsnorm, then product
_product_plans = Plans()
_product_launcher: CompiledLauncher | None = None
_cublas_times: Any = None  # rmsnorm_linear's cuBLAS product, bound by the first call that plans it
_split_k_launcher: CompiledLauncher | None = None


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
    plan = _product_plans.plans.get(key)
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
        return _cublas_times(xn.view(-1, xn_layout[0][-1]), w, b).view(y_layout[0])
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
        from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned

        rmsnorm_tuned(x, g, eps, out=xn)
    else:
        norm(x, g, xn)


def _norm_launch(x: torch.Tensor, g: torch.Tensor, eps: float, key: tuple) -> Launch | None:
    """rmsnorm_tuned's launch for x's rows (output contiguous), or None where it has no plan (CPU)."""
    from kprof.kernels.rmsnorm import tuned

    p = tuned.make_plan(x, g)
    if p is None:
        return None
    tail = (*p.ints, float(eps), *p.constexprs)
    return Launch(p.launcher, ("ops", p.key, sig(x), sig(g), tail), p.grid, tail, {"num_warps": p.num_warps})


def _rms_norm_linear_first(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float, key: tuple
) -> torch.Tensor:
    global _product_launcher, _cublas_times
    from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
    from kprof.kernels.rmsnorm_linear import fused
    from kprof.kernels.rmsnorm_linear import norm_cublas as rl_cublas
    from kprof.kernels.rmsnorm_linear import tuned as rl_tuned
    from kprof.kernels.rmsnorm_linear.family import check_inputs

    x2d, n = check_inputs(x, g, w, b)
    m, k = x2d.shape
    plannable = key is not None and w.is_contiguous() and (b is None or b.is_contiguous()) and row_stride(x) is not None
    route = rl_tuned.product_route(x2d, w)
    if route == "split_k":
        return _split_k_first(x, x2d, g.contiguous(), w, b, eps, key if plannable else None)
    if route == "cublas":
        y = rl_cublas.norm_then_cublas(x2d, g, w, b, eps)
        if plannable:
            _cublas_times = rl_cublas.cublas_times
            layouts = (contiguous_layout(x.shape), contiguous_layout(tuple(x.shape[:-1]) + (n,)))
            _product_plans.put(key, (_norm_launch(x, g, eps, key), CUBLAS, *layouts))
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
        if _product_launcher is None:
            _product_launcher = CompiledLauncher(fused.product_kernel)
        grid = (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)
        product = Launch(_product_launcher, ("ops",) + key + (tail, tuple(options.items())), grid, tail, options)
        _product_plans.put(
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
) -> torch.Tensor:
    """The split-K kernel's first call at this signature (checked inputs), and its plan where ``key`` is given."""
    global _split_k_launcher
    from kprof.kernels.rmsnorm_linear import split_k

    m, k = x2d.shape
    n = w.shape[1]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    meta, options = split_k.launch_split_k(x2d, g, w, b, y, eps, split_k.config_for(x2d, n))
    if key is not None:  # the plan repeats that launch: its constexprs, split and K range as launched
        bm, bn, splits = meta["BLOCK_M"], meta["BLOCK_N"], meta["SPLIT_K"]
        tiles_count = triton.cdiv(m, bm) * triton.cdiv(n, bn)
        parts, ws_floats = split_k.workspace_floats(m, n, bm, bn, splits)
        tail = (m, n, k, splits, meta["K_PER_SPLIT"], row_stride(x), 1, n, 1, float(eps))
        tail += constexpr_tail(split_k.split_k_kernel, 18, meta)
        if _split_k_launcher is None:
            _split_k_launcher = CompiledLauncher(split_k.split_k_kernel)
        launch = Launch(
            _split_k_launcher, ("ops",) + key + (tail, tuple(options.items())), (tiles_count * splits,), tail, options
        )
        layout = contiguous_layout(tuple(x.shape[:-1]) + (n,))
        _product_plans.put(key, SplitKPlan(launch, layout, ws_floats, parts, tiles_count))
    return y.view(*x.shape[:-1], n)


# ----------------------------------------------------------------- rms_norm_linear on prepared weights (TMA)
_prepared_plans = Plans()
_rstd_launcher: CompiledLauncher | None = None
_tma_launcher: CompiledLauncher | None = None


class PreparedTMAPlan:
    """rmsnorm_linear on folded weights by the rstd kernel and the persistent TMA product (PDL where the GPU has
    it): both launches, the product's tiles, the layouts of y and rstd. The descriptors are made on every call,
    before the rstd kernel is launched: a plan holds no tensor, so a refreshed weight's old fold is freed."""

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
        descriptors = tiles.tile_descriptors(x2d, wf, y, p.tiles, p.subtile, p.split)
        bias = rstd if b is None else b
        if self.rstd.entry is not None and self.product.entry is not None and not launch_hooks_installed():
            self.rstd.fast(x2d.data_ptr(), rstd.data_ptr())
            self.product.fast(*descriptors, rstd.data_ptr(), bias.data_ptr())
        else:
            self.rstd(x2d, rstd)
            self.product(*descriptors, rstd, bias)
        return y.view(*x.shape[:-1], y.shape[1])


def rms_norm_linear_prepared(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """``rms_norm(x, g) @ w (+ b)`` from ``wf = diag(g) w`` (``rstd_epilogue.rmsnorm_linear_folded``): the checked
    path on a signature's first call, then its plan (no checks, no JIT binding) where the route is the TMA one."""
    try:
        key = (
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
    plan = _prepared_plans.get(key) if key is not None else None
    if plan is not None:
        return plan(x, wf, b)
    return _prepared_first(x, g, w, wf, b, eps, key)


def _prepared_first(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None, eps: float, key: Any
) -> torch.Tensor:
    """The checked path, then the plan of this signature where the op took the TMA route with contiguous rows."""
    global _rstd_launcher, _tma_launcher
    from kprof.kernels.rmsnorm_linear import rstd_epilogue as re

    y = re.rmsnorm_linear_folded(x, g, w, b, eps, wf)  # checks the inputs
    k, n = w.shape
    x2d = x.view(-1, k) if row_stride(x) == k else None
    if key is None or x2d is None or not wf.is_contiguous() or (b is not None and not b.is_contiguous()):
        return y
    if not re.use_tma(x2d, wf, y.view(-1, n)):
        return y
    m = x2d.shape[0]
    pdl = key[-1]
    sms = tiles.persistent_sms(x2d)
    programs, rstd_meta = re.row_rstd_launch(m, k, sms if pdl else 0, pdl)
    rstd_options = {"num_warps": rstd_meta.pop("num_warps")}
    rstd_tail = (m, k, k, 1, float(eps)) + constexpr_tail(re.row_rstd_kernel, 7, rstd_meta)
    tma = re.tma_plan(m, k, n, sms)
    meta = re.tma_meta(tma, b is not None, pdl)
    options = {o: meta.pop(o) for o in ("num_warps", "num_stages", "launch_pdl") if o in meta}
    tail = (m, n, k) + constexpr_tail(re.tma_product_kernel, 11, meta)
    if _rstd_launcher is None:
        _rstd_launcher, _tma_launcher = CompiledLauncher(re.row_rstd_kernel), CompiledLauncher(re.tma_product_kernel)
    rstd = Launch(_rstd_launcher, ("prepared", key, rstd_tail), (programs,), rstd_tail, rstd_options)
    product_key = ("prepared", key, tail, tuple(options.items()))
    product = Launch(_tma_launcher, product_key, (tma.programs,), tail, options)
    _prepared_plans.put(key, PreparedTMAPlan(rstd, product, tma, k, m, n))
    return y


# ------------------------------------------------------------------------ swiglu on prepared weights (TMA)
_swiglu_prepared_plans = Plans()
_interleaved_launcher: CompiledLauncher | None = None


class PreparedSwiGLUPlan:
    """swiglu by the interleaved TMA kernel on prepared (interleaved) weights: the launch, its tiles, the output's
    layout. The descriptors are made on every call: a plan holds no tensor."""

    __slots__ = ("launch", "plan", "k", "y_layout")

    def __init__(self, launch: Launch, plan: tiles.TilePlan, k: int, m: int, n: int) -> None:
        self.launch, self.plan, self.k = launch, plan, k
        self.y_layout = contiguous_layout((m, n))

    def __call__(self, x: torch.Tensor, w_int: torch.Tensor) -> torch.Tensor:
        x2d = x.view(-1, self.k)
        y = x.new_empty_strided(*self.y_layout)
        p = self.plan
        descriptors = tiles.tile_descriptors(x2d, w_int, y, p.tiles, p.subtile, p.split, w_cols=2)
        if self.launch.entry is not None and not launch_hooks_installed():
            self.launch.fast(*descriptors)
        else:
            self.launch(*descriptors)
        return y.view(*x.shape[:-1], y.shape[1])


def swiglu_prepared(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_int: torch.Tensor) -> torch.Tensor:
    """``silu(x @ Wg) * (x @ Wu)`` from the interleaved pair ``w_int`` (``swiglu.tuned.swiglu_with``): the checked
    path on a signature's first call, then its plan where that call took the interleaved kernel."""
    try:
        key = (sig(x), sig(w_gate), sig(w_up), sig(w_int))
    except (AttributeError, TypeError):  # not tensors: the checks say what is wrong
        key = None
    plan = _swiglu_prepared_plans.get(key) if key is not None else None
    if plan is not None:
        return plan(x, w_int)
    return _swiglu_prepared_first(x, w_gate, w_up, w_int, key)


def _swiglu_prepared_first(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_int: torch.Tensor, key: Any
) -> torch.Tensor:
    """The checked path, then the plan of this signature where the interleaved kernel ran on contiguous rows."""
    global _interleaved_launcher
    from kprof.kernels.swiglu import tuned as sw

    taken: list[str] = []
    y = sw.swiglu_with(x, w_gate, w_up, w_int, taken)  # checks the inputs
    k, n = w_gate.shape
    if key is None or taken != ["interleaved"] or row_stride(x) != k or not w_int.is_contiguous():
        return y
    m = x.numel() // k
    plan = sw.interleaved_plan(m, k, n, tiles.persistent_sms(x))
    meta = plan.meta()
    options = {o: meta.pop(o) for o in ("num_warps", "num_stages")}
    tail = (m, n, k) + constexpr_tail(sw.interleaved_kernel, 9, meta)
    if _interleaved_launcher is None:
        _interleaved_launcher = CompiledLauncher(sw.interleaved_kernel)
    launch = Launch(_interleaved_launcher, ("prepared", key, tail), (plan.grid(m, n),), tail, options)
    _swiglu_prepared_plans.put(key, PreparedSwiGLUPlan(launch, plan, k, m, n))
    return y


# ------------------------------------------------------------------------------------------- kasmina
_kasmina_plans = Plans()
_kasmina_launcher: CompiledLauncher | None = None


def kasmina(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The branch-free kernel with telemetry (ids outside the registry: clamped, the seed's outputs NaN). As
    fused_add_rms_norm: one flat key, outputs by ``new_empty_strided``, raw addresses to the C launcher."""
    try:  # what sig() says about each of the six tensors, one flat tuple (starred groups: 0.6 us a call more, CPU)
        xp, lp, ip, ap, wp, bp = (
            x.data_ptr(),
            lifecycle.data_ptr(),
            blueprint_id.data_ptr(),
            alpha.data_ptr(),
            weights.data_ptr(),
            bias.data_ptr(),
        )
        key = (
            x.shape,
            x.stride(),
            x.dtype,
            x.get_device(),
            lifecycle.shape,
            lifecycle.stride(),
            lifecycle.dtype,
            lifecycle.get_device(),
            blueprint_id.shape,
            blueprint_id.stride(),
            blueprint_id.dtype,
            blueprint_id.get_device(),
            alpha.shape,
            alpha.stride(),
            alpha.dtype,
            alpha.get_device(),
            weights.shape,
            weights.stride(),
            weights.dtype,
            weights.get_device(),
            bias.shape,
            bias.stride(),
            bias.dtype,
            bias.get_device(),
            xp % 16 == 0,
            lp % 16 == 0,
            ip % 16 == 0,
            ap % 16 == 0,
            wp % 16 == 0,
            bp % 16 == 0,
        )
    except (AttributeError, TypeError):  # not tensors: the checks say what is wrong
        return _kasmina_checked(x, lifecycle, blueprint_id, alpha, weights, bias)
    plan = _kasmina_plans.plans.get(key)
    if plan is None:
        return _kasmina_first(x, lifecycle, blueprint_id, alpha, weights, bias, key)
    launch, n_seeds, config, y_layout, tele_layout = plan
    y = x.new_empty_strided(*y_layout)
    tele = alpha.new_empty_strided(*tele_layout)  # alpha is float32 on x's device (the checks that made the plan)
    # one program per seed: no parts to merge, and the kernel reads neither slot
    parts = _kasmina_parts(x, n_seeds, config, y) if config.split else (y, y)
    if launch.entry is not None and not launch_hooks_installed():
        launch.fast(xp, y.data_ptr(), lp, ip, ap, wp, bp, tele.data_ptr(), parts[0].data_ptr(), parts[1].data_ptr())
    else:
        launch(x, y, lifecycle, blueprint_id, alpha, weights, bias, tele, *parts)
    return y, tele


def _kasmina_parts(x: torch.Tensor, n_seeds: int, config: Any, y: torch.Tensor) -> tuple:
    """The fp32 parts and ticket counters of a kasmina call whose seeds' rows are split over programs."""
    from kprof.kernels.kasmina import branch_free

    return branch_free.telemetry_parts(x, n_seeds, config, y)


def _kasmina_checked(x: Any, lifecycle: Any, blueprint_id: Any, alpha: Any, weights: Any, bias: Any) -> tuple:
    from kprof.kernels.kasmina import branch_free

    y, tele = branch_free.launch(x, lifecycle, blueprint_id, alpha, weights, bias, telemetry=True)
    return y, tele


def _kasmina_first(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    key: tuple,
) -> tuple[torch.Tensor, torch.Tensor]:
    global _kasmina_launcher
    from kprof.kernels.kasmina import branch_free

    y, tele = _kasmina_checked(x, lifecycle, blueprint_id, alpha, weights, bias)
    xs = row_stride(x)
    if xs is not None and weights.is_contiguous() and bias.is_contiguous():
        n_seeds, c = lifecycle.shape[0], weights.shape[-1]
        cfg = branch_free.config_for(x, n_seeds, c, True)  # what branch_free.launch ran
        # the kernel's sizes and strides, then its compile-time arguments in its signature's order
        tail = (x.numel() // x.shape[-1], c, weights.shape[0], xs, x.shape[-1], *cfg.constexprs().values())
        if _kasmina_launcher is None:
            _kasmina_launcher = CompiledLauncher(branch_free.forward_kernel)
        grid = (n_seeds, cfg.row_programs)
        launch = Launch(_kasmina_launcher, ("ops",) + key + (tail,), grid, tail, cfg.options())
        layouts = contiguous_layout(x.shape), contiguous_layout((n_seeds, 2))
        _kasmina_plans.put(key, (launch, n_seeds, cfg, *layouts))
    return y, tele


def reset() -> None:
    """Forget every plan (tests; a process that changed TRITON_INTERPRET)."""
    for plans in (
        _add_plans,
        _gated_plans,
        _swiglu_plans,
        _product_plans,
        _prepared_plans,
        _swiglu_prepared_plans,
        _kasmina_plans,
    ):
        plans.plans.clear()


__all__: Sequence[str] = (
    "Launch",
    "Plans",
    "fused_add_rms_norm",
    "gated",
    "kasmina",
    "rms_norm_linear",
    "rms_norm_linear_prepared",
    "reset",
    "sig",
    "swiglu",
    "swiglu_prepared",
)
