"""Kernel families, one folder each. ``discover()`` imports them all; see :mod:`kprof.registry`.

``lib/`` is no family: it is the library the families share (see ``kernels/lib/README.md``).
"""

from __future__ import annotations

import importlib
import pkgutil

from kprof.registry import Family, registered_families

LIBRARY = "lib"  # the shared kernel library package, skipped by discovery
_discovered = False


def family_folders() -> list[str]:
    """Names of the family folders under ``kprof.kernels``: every package but the library and ``_private`` ones."""
    return sorted(
        info.name
        for info in pkgutil.iter_modules(__path__)
        if info.ispkg and not info.name.startswith("_") and info.name != LIBRARY
    )


def discover() -> dict[str, Family]:
    """Import every family folder under ``kprof.kernels`` and return the families by name."""
    global _discovered
    if not _discovered:
        for name in family_folders():
            importlib.import_module(f"{__name__}.{name}")
        _discovered = True
    return registered_families()
