"""Names from traces are data, not markup or commands: kernel names come from files anyone can write.

* :func:`for_terminal` - no terminal control sequences (``\\x1b[2J``, OSC titles, carriage returns that
  overwrite a line) reach the screen, and Rich markup in a name (``kern[/]``, ``[lambda() (instance 1)]``)
  prints as the text it is.
* :func:`for_csv` - a cell a spreadsheet would run as a formula (``=HYPERLINK(...)``, ``+cmd``, ``@SUM``)
  is prefixed with ``'`` (the OWASP rule for CSV injection).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
from rich.markup import escape

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def plain_text(value: Any) -> str:
    """``value`` as one printable line: control characters shown as ``\\xNN``/``\\n`` escapes."""
    text = str(value)
    text = text.replace("\n", "\\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def no_control(text: str) -> str:
    """Multi-line text (a report) with every control character but newline and tab shown as ``\\xNN``."""
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group(0)):02x}", text)


def for_terminal(value: Any) -> str:
    """``value`` safe to hand to a Rich console: control characters escaped, markup escaped."""
    return escape(plain_text(value))


def for_csv(value: Any) -> Any:
    """A cell neutralised for spreadsheets (text starting like a formula gets a leading ``'``)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        try:
            float(value)  # "-12.5" is a number, not a formula
            return value
        except ValueError:
            return "'" + value
    return value


def csv_safe_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Every text column of ``df`` passed through :func:`for_csv`."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) == "string":
            out[col] = out[col].map(lambda v: for_csv(v) if isinstance(v, str) else v)
    return out
