"""Shape strings: ``"4096x4096"`` <-> ``(4096, 4096)``, and the order shapes are listed in.

Its own module so that the metrics, reports, the guide and the dashboard can handle shapes without
importing the family registry."""

from __future__ import annotations

import re
from collections.abc import Iterable

from kprof.errors import KprofError

Shape = tuple[int, ...]


def parse_shape(text: str | Iterable[int]) -> Shape:
    """``"4096x4096"`` or ``[4096, 4096]`` -> ``(4096, 4096)``."""
    if isinstance(text, str):
        compact = re.sub(r"\s+", "", text)
        if not re.fullmatch(r"\d+([x×]\d+)*", compact):
            raise KprofError(f"bad shape {text!r}: write it as sizes joined by 'x', e.g. 4096x4096 or 2x3x257")
        dims = tuple(int(p) for p in re.split(r"[x×]", compact))
    else:
        dims = tuple(int(d) for d in text)
    if not dims or any(d < 0 for d in dims):
        raise KprofError(f"bad shape {text!r}: sizes must be non-negative integers")
    return dims


def shape_str(shape: Shape) -> str:
    """``(4096, 4096)`` -> ``"4096x4096"``."""
    return "x".join(str(d) for d in shape)


def shape_key(shape: str) -> tuple:
    """Sort key of a shape string: by element count, then by the sizes themselves."""
    dims = parse_shape(shape)
    rows = 1
    for d in dims[:-1]:
        rows *= d
    return (rows * dims[-1], dims)
