"""Cheap reads the parsers use to recognise a file before parsing it (``kprof parse`` sniffs formats)."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path


def head(path: Path, chars: int) -> str:
    """The first ``chars`` characters of a text file (gunzipped for ``.gz``); "" when it cannot be read."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
            return fh.read(chars)
    except (OSError, EOFError):
        return ""


def csv_header(path: Path) -> list[str]:
    """The first row of a CSV file; [] when it cannot be read."""
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            return next(csv.reader(fh), [])
    except OSError:
        return []
