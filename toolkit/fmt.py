"""Formatting of numbers and tables for reports, diffs, the guide and the dashboard, missing values
included: ``None``, ``pd.NA`` and NaN print as ``—`` (never as ``nan``, never as 0)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

NA = "—"


def missing(v: Any) -> bool:
    """``v`` is None, ``pd.NA`` or a float NaN."""
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def fmt_num(v: Any, fmt: str = "{:.1f}", na: str = NA) -> str:
    """``v`` as a number through the ``str.format`` template ``fmt``; ``na`` when missing or not a number."""
    if missing(v):
        return na
    try:
        f = float(v)
    except (TypeError, ValueError):
        return na
    return na if math.isnan(f) else fmt.format(f)


def number(v: Any, spec: str = ".1f", na: str = NA) -> str:
    """``v`` as a number with the format spec ``spec`` (``".0f"``, ``".2e"``); ``na`` when missing."""
    return fmt_num(v, "{:" + spec + "}", na)


def cell(v: Any, spec: str = "", suffix: str = "", na: str = NA) -> str:
    """A table cell: ``v`` formatted with ``spec`` (text as it is without one) plus ``suffix``; ``na`` when missing."""
    if missing(v):
        return na
    return f"{v:{spec}}{suffix}" if spec else f"{v}{suffix}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub markdown table; ``align`` one letter per column, ``l`` or ``r`` (default: the first column
    left, the others right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def config_label(config: Mapping[str, Any], autotuned: bool = False) -> str:
    """A kernel specialisation as one line: ``BLOCK_N=4096 num_warps=8 num_stages=3``, with ``(autotuned)``
    appended when the autotuner picked it."""
    return " ".join(f"{k}={v}" for k, v in config.items()) + (" (autotuned)" if autotuned else "")
