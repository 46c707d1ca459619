"""What the ops API's launch plans share (:mod:`kprof.kernels.ops`): the Triton path with as little host work per
call as the PyTorch code it replaces. Each family keeps its op's plan in its own folder (``FAMILY/op_plan.py``;
silu_mul's and gelu_mul's in :mod:`kprof.kernels.lib.gated`, which they share), so a version that launches as its op
does imports that family's code and this module, never another family's.

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

from kprof.kernels.lib import launching
from kprof.launch import CompiledLauncher, DescribedLaunch, launch_hooks_installed

_MAX_PLANS = 4096
CUBLAS = "cublas"  # a plan's product: cuBLAS's (torch.mm / torch.addmm), not a Triton launch
_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # absent from CPU-only builds


def sig(t: torch.Tensor) -> tuple:
    """What a plan depends on about one tensor (its values never)."""
    return (t.shape, t.stride(), t.dtype, t.get_device(), t.data_ptr() % 16 == 0)


def rows(x: torch.Tensor) -> int | None:
    """x's rows (its elements over its last dimension), unchecked; None for a scalar or an empty last dimension."""
    return x.numel() // x.shape[-1] if x.dim() > 0 and x.shape[-1] > 0 else None


def many_rows(x: torch.Tensor, at_least: int) -> bool:
    """At least ``at_least`` rows (any number for a CPU tensor under the interpreter), without checking x: the
    prepared objects' routes by rows, which decode calls take before any check, so they stay cheap."""
    count = rows(x)
    return (count is not None and count >= at_least) or (not x.is_cuda and launching.interpreting())


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

    __slots__ = ("launcher", "key", "grid", "tail", "options", "entry", "_described")

    def __init__(
        self, launcher: CompiledLauncher, key: tuple, grid: Sequence[int], tail: tuple, options: dict[str, Any]
    ) -> None:
        self.launcher, self.key, self.tail, self.options = launcher, key, tail, options
        self.grid = (tuple(grid) + (1, 1))[:3]
        self.entry: Any = None  # the compiled kernel's launch entry, once the JIT has built it
        self._described: DescribedLaunch | bool | None = None  # described()'s answer once asked; False: none

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

    def described(self) -> DescribedLaunch | None:
        """This launch with its leading descriptors' encoding kept by address (:class:`kprof.launch.DescribedLaunch`),
        made once ``entry`` is set and kept; None before, and where Triton's launcher must run as Triton wrote it."""
        described = self._described
        if described is None:
            kernel = self.launcher.compiled.get(self.key)
            if self.entry is None or kernel is None:
                return None
            described = self._described = DescribedLaunch.of(kernel, self.grid, self.entry[2]) or False
        return described or None


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


_EVERY: list[Plans] = []  # every table of plans in the process, for reset()


class Plans:
    """Plans by call signature (bounded: a caller cycling through many shapes rebuilds them)."""

    def __init__(self) -> None:
        self.plans: dict[tuple, Any] = {}
        _EVERY.append(self)

    def get(self, key: tuple) -> Any:
        return self.plans.get(key)

    def put(self, key: tuple, plan: Any) -> Any:
        if len(self.plans) >= _MAX_PLANS:
            self.plans.clear()
        self.plans[key] = plan
        return plan


def reset() -> None:
    """Forget every plan (tests; a process that changed TRITON_INTERPRET)."""
    for plans in _EVERY:
        plans.plans.clear()


__all__: Sequence[str] = (
    "CUBLAS",
    "Launch",
    "Plans",
    "constexpr_tail",
    "contiguous_layout",
    "reset",
    "row_stride",
    "sig",
)
