"""Kernel families, one folder each. ``discover()`` imports them all; see :mod:`kprof.registry`.

``lib/`` is no family: it is the library the families share (see ``kernels/lib/README.md``).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

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


def sweep_file(name: str) -> Path | None:
    """The YAML file of family ``name`` without importing its code: a family is the folder of its name, and its
    file is ``sweep.yaml`` there (the test suite checks this of every family). None for no such folder."""
    return Path(__path__[0]) / name / "sweep.yaml" if name in family_folders() else None


def discover() -> dict[str, Family]:
    """Import every family folder under ``kprof.kernels`` and return the families by name."""
    global _discovered
    if not _discovered:
        for name in family_folders():
            importlib.import_module(f"{__name__}.{name}")
        _discovered = True
    return registered_families()
