"""kasmina_forward's launch plan (:mod:`kprof.kernels.ops` and, on a GPU, this family's ``triton_telemetry``): the
checked launch on a call signature's first call, then the same configuration's compiled launch from a plan, with raw
addresses passed to Triton's C launcher (:mod:`kprof.kernels.lib.plans` says what a plan holds and why). Where the
H200's table takes ``kasmina.tma``'s kernel (``tma.tile_for``), the plan is a ``TmaPlan``, which also passes the kernel
two descriptors of x and y, encoded again only for addresses it has not seen; where it takes ``kasmina.stacked``'s (a
few rows: ``stacked.tile_for``), a ``StackedPlan``."""

from __future__ import annotations

from typing import Any

import torch

from kprof.kernels.kasmina import branch_free, stacked, tma
from kprof.kernels.kasmina.family import check_inputs
from kprof.kernels.lib.plans import Launch, Plans, contiguous_layout, row_stride
from kprof.launch import CompiledLauncher, launch_hooks_installed

PLANS = Plans()
_kasmina_launcher = CompiledLauncher(branch_free.forward_kernel)
_tma_launcher = CompiledLauncher(tma.tma_kernel)
_stacked_launcher = CompiledLauncher(stacked.stacked_kernel)


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
    plan = PLANS.plans.get(key)
    if plan is None:
        return _kasmina_first(x, lifecycle, blueprint_id, alpha, weights, bias, key)
    if type(plan) is TmaPlan:
        return plan(x, lifecycle, blueprint_id, alpha, weights, bias, (xp, lp, ip, ap, wp, bp))
    if type(plan) is StackedPlan:
        y = x.new_empty_strided(*plan.y_layout)
        tele = alpha.new_empty_strided(*plan.tele_layout)
        if plan.launch.entry is not None and not launch_hooks_installed():
            plan.launch.fast(xp, y.data_ptr(), lp, ip, ap, wp, bp, tele.data_ptr())
        else:
            plan.launch(x, y, lifecycle, blueprint_id, alpha, weights, bias, tele)
        return y, tele
    launch, n_seeds, config, y_layout, tele_layout = plan
    y = x.new_empty_strided(*y_layout)
    tele = alpha.new_empty_strided(*tele_layout)  # alpha is float32 on x's device (the checks that made the plan)
    # one program per seed: no parts to merge, and the kernel reads neither slot
    parts = branch_free.telemetry_parts(x, n_seeds, config, y) if config.split else (y, y)
    if launch.entry is not None and not launch_hooks_installed():
        launch.fast(xp, y.data_ptr(), lp, ip, ap, wp, bp, tele.data_ptr(), parts[0].data_ptr(), parts[1].data_ptr())
    else:
        launch(x, y, lifecycle, blueprint_id, alpha, weights, bias, tele, *parts)
    return y, tele


class TmaPlan:
    """A signature's launch of the TMA kernel (``kasmina.tma``, the H200's table): the launch, its tile, the layouts of
    y and the telemetry. The descriptors hold x's and y's addresses: once the kernel is compiled, the launch's
    ``described()`` keeps what Triton encodes from them by those two addresses (:class:`kprof.launch.DescribedLaunch`),
    and they are made again only for a pair of addresses not seen before."""

    __slots__ = ("launch", "tile", "y_layout", "tele_layout")

    def __init__(self, launch: Launch, tile: tma.TmaTile, x_shape: tuple[int, ...], n_seeds: int) -> None:
        self.launch, self.tile = launch, tile
        self.y_layout = contiguous_layout(x_shape)
        self.tele_layout = contiguous_layout((n_seeds, 2))

    def __call__(
        self,
        x: torch.Tensor,
        lifecycle: torch.Tensor,
        blueprint_id: torch.Tensor,
        alpha: torch.Tensor,
        weights: torch.Tensor,
        bias: torch.Tensor,
        pointers: tuple[int, ...],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        y = x.new_empty_strided(*self.y_layout)
        tele = alpha.new_empty_strided(*self.tele_layout)
        if self.launch.entry is not None and not launch_hooks_installed():
            described = self.launch.described()
            if described is not None:
                described(
                    (x.data_ptr(), y.data_ptr()),
                    lambda: self._descriptors(x, y),
                    (*pointers, tele.data_ptr(), *self.launch.tail),
                )
            else:
                self.launch.fast(*self._descriptors(x, y), *pointers, tele.data_ptr())
        else:
            self.launch(*self._descriptors(x, y), x, lifecycle, blueprint_id, alpha, weights, bias, tele)
        return y, tele

    def _descriptors(self, x: torch.Tensor, y: torch.Tensor) -> tuple:
        width = x.shape[-1]
        return tma.descriptors(x.view(-1, width), y.view(-1, width), self.tile)


class StackedPlan:
    """A signature's launch of the stacked kernel (``kasmina.stacked``, the H200's table for a few rows): the launch
    and the layouts of y and the telemetry. ``kasmina`` launches it in line, as it does branch_free's plans. Through a
    method taking the pointers as a tuple, a call took 0.4-2.0 µs more host time than 245dc30's plan (the route before,
    paired rounds in one process, median at four stacked points on an H200); in line, -0.05 to +0.21 µs on another
    (benchmarks/results/kasmina-copy/h200-stacked-85bf7bc/grid-d184e2a/ and host-34b95b0/, host-bf16)."""

    __slots__ = ("launch", "y_layout", "tele_layout")

    def __init__(self, launch: Launch, x_shape: tuple[int, ...], n_seeds: int) -> None:
        self.launch = launch
        self.y_layout = contiguous_layout(x_shape)
        self.tele_layout = contiguous_layout((n_seeds, 2))


def _kasmina_checked(x: Any, lifecycle: Any, blueprint_id: Any, alpha: Any, weights: Any, bias: Any) -> tuple:
    """The checked launch of the route :func:`_route` picks."""
    n_seeds, c = check_inputs(x, lifecycle, blueprint_id, alpha, weights, bias)
    return _launch(x, lifecycle, blueprint_id, alpha, weights, bias, _route(x, n_seeds, c))


def _route(x: torch.Tensor, n_seeds: int, c: int) -> tma.TmaTile | stacked.StackedTile | None:
    """The TMA kernel's tile or the stacked kernel's where the H200's tables take them (``tma.tile_for``,
    ``stacked.tile_for``); None: branch_free's kernel."""
    tile = tma.tile_for(x, n_seeds, c)
    return tile if tile is not None else stacked.tile_for(x, n_seeds, c)


def _launch(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    route: tma.TmaTile | stacked.StackedTile | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The checked launch of ``route``'s kernel (:func:`_route`)."""
    if isinstance(route, tma.TmaTile):
        return tma.launch(x, lifecycle, blueprint_id, alpha, weights, bias, route)
    if isinstance(route, stacked.StackedTile):
        return stacked.launch(x, lifecycle, blueprint_id, alpha, weights, bias, route)
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
    n_seeds, c = check_inputs(x, lifecycle, blueprint_id, alpha, weights, bias)
    route = _route(x, n_seeds, c)
    y, tele = _launch(x, lifecycle, blueprint_id, alpha, weights, bias, route)
    xs = row_stride(x)
    if xs is not None and weights.is_contiguous() and bias.is_contiguous():
        if isinstance(route, tma.TmaTile):
            if xs == x.shape[-1]:  # the plan views x's rows as one contiguous [rows, S*C]
                tail = (
                    x.numel() // x.shape[-1],
                    weights.shape[0],
                    xs,
                    *route.constexprs(branch_free.precision_of(x.dtype)).values(),
                )
                launch = Launch(_tma_launcher, ("ops", "tma") + key + (tail,), (n_seeds,), tail, route.options())
                PLANS.put(key, TmaPlan(launch, route, tuple(x.shape), n_seeds))
            return y, tele
        if isinstance(route, stacked.StackedTile):
            n_rows = x.numel() // x.shape[-1]
            tail = (n_rows, n_seeds, c, weights.shape[0], xs, x.shape[-1])
            tail += tuple(route.constexprs(c, branch_free.precision_of(x.dtype)).values())
            grid = route.grid(n_seeds, weights.shape[0])
            launch = Launch(_stacked_launcher, ("ops", "stacked") + key + (tail,), grid, tail, route.options())
            PLANS.put(key, StackedPlan(launch, tuple(x.shape), n_seeds))
            return y, tele
        cfg = branch_free.config_for(x, n_seeds, c, True)  # what branch_free.launch ran
        # the kernel's sizes and strides, then its compile-time arguments in its signature's order
        tail = (x.numel() // x.shape[-1], c, weights.shape[0], xs, x.shape[-1], *cfg.constexprs().values())
        grid = (n_seeds, cfg.row_programs)
        launch = Launch(_kasmina_launcher, ("ops",) + key + (tail,), grid, tail, cfg.options())
        layouts = contiguous_layout(x.shape), contiguous_layout((n_seeds, 2))
        PLANS.put(key, (launch, n_seeds, cfg, *layouts))
    return y, tele
