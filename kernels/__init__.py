"""Kernel families, one folder each. ``discover()`` imports them all; see :mod:`kprof.registry`."""

from __future__ import annotations

import importlib
import pkgutil

from kprof.registry import Family, registered_families

_discovered = False


def discover() -> dict[str, Family]:
    """Import every family folder under ``kprof.kernels`` and return the families by name."""
    global _discovered
    if not _discovered:
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            if info.ispkg and not info.name.startswith("_"):
                importlib.import_module(f"{__name__}.{info.name}")
        _discovered = True
    return registered_families()
