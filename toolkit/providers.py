"""Helpers for baseline providers every family registers: torch.compile of the eager code, optional peers."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any


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
