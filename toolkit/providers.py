"""Helpers for baseline providers every family registers: torch.compile of the eager code, optional peers, the
memory-bound families' copy yardstick."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kprof.registry import Family


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(fn)``, built on first call, with a recompile limit high enough for a whole sweep.

    Why the limit (:func:`kprof.runtime.raise_dynamo_limits`): dynamo recompiles ``fn`` for each new shape
    and dtype (``dynamic=False``); past its default limit of 8 it silently falls back to eager, and a sweep
    would time eager PyTorch under the name torch.compile.
    """
    state: dict[str, Any] = {}

    def call(*args: Any, **kwargs: Any) -> Any:
        if "fn" not in state:
            import torch

            from kprof.runtime import raise_dynamo_limits

            raise_dynamo_limits()
            state["fn"] = torch.compile(fn, dynamic=False)
        return state["fn"](*args, **kwargs)

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


def module_missing(module: str, install_hint: str) -> Callable[[], str | None]:
    """A ``requires`` check: the reason a provider is skipped when ``module`` cannot be imported."""

    def check() -> str | None:
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed ({install_hint})"
        return None

    return check


def register_copy_bytes(family: Family) -> None:
    """Register a memory-bound family's yardstick, ``copy_bytes`` (kind ``roofline``): one bare device copy (device to
    device, as ``cudaMemcpyAsync`` moves it) of the bytes the family's ``bytes_model`` says a call at x's shape and
    dtype moves, half read and half written. It copies buffers of its own, not the call's tensors: a family that
    reads two inputs and writes two outputs (add_rmsnorm) is compared with one copy of all four, as "a bare device
    copy of the same bytes" reads. The family's ``grid_targets:`` judge its points moving 64 MiB or more against it."""

    import torch  # here, not per call: the copy is what a run times

    from kprof.dtypes import dtype_name

    def copy_bytes(x: Any, *args: Any, **kwargs: Any) -> Any:
        half = max(1, family.bytes_model(tuple(x.shape), dtype_name(x.dtype)) // 2)
        src = torch.empty(half, dtype=torch.uint8, device=x.device)
        return torch.empty_like(src).copy_(src)

    family.provider(
        "copy_bytes",
        kind="roofline",
        description="a bare device copy of the bytes the family's model says a call moves (half read, half "
        "written): the yardstick of its copy target at points moving 64 MiB or more",
    )(copy_bytes)
