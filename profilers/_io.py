"""Reading profiler outputs the way users have them: gzipped or not, with a BOM, with CRLF line ends, in
UTF-8 or UTF-16, and with numbers written in whatever style the tool chose.

Everything here fails with :class:`~kprof.errors.TraceFormatError` (``<file>: <what is wrong> (<what to
do>)``), never with a parser's own exception, so ``kprof parse`` has one error path.

* :class:`Source` - one input file; recognised by its *content* (gzip magic bytes, SQLite header), not
  by its name.
* :func:`whole_numbers` / :func:`real_numbers` - a column of text into integers / floats, every cell a
  number or empty, or an error naming the cell: ``1.5e300``, ``inf``, ``NaN`` or ``12 ms`` are not
  silently truncated to their first digits.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import math
import os
import re
import sqlite3
import tempfile
import zlib
from collections.abc import Iterator, Sequence
from decimal import Decimal, InvalidOperation
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from kprof.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"
INT64_MAX = 2**63 - 1
# Python's csv module refuses fields over 128 KiB; a profiler never writes one, so such a file is not
# a trace (or is corrupt) and is reported as such instead of raising csv.Error.
CSV_FIELD_LIMIT = csv.field_size_limit()


class Source:
    """One input file, decompressed when gzipped (by content: ``.gz`` in the name is not required)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.path)

    def fail(self, what: str, todo: str) -> TraceFormatError:
        """The error for this file, in kprof's one format: ``<file>: <what is wrong> (<what to do>)``."""
        return TraceFormatError(f"{self.path}: {what} ({todo})")

    @property
    def name(self) -> str:
        """The file name in lower case, without a ``.gz`` suffix (``trace.json.gz`` -> ``trace.json``)."""
        n = self.path.name.lower()
        return n[:-3] if n.endswith(".gz") else n

    @cached_property
    def gzipped(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                return fh.read(2) == GZIP_MAGIC
        except OSError:
            return False

    def head_bytes(self, n: int = 65536) -> bytes:
        """The first ``n`` (decompressed) bytes; b"" when unreadable (sniffing must not fail)."""
        try:
            if self.gzipped:
                with gzip.open(self.path, "rb") as fh:
                    return fh.read(n)
            with open(self.path, "rb") as fh:
                return fh.read(n)
        except (OSError, EOFError, zlib.error):
            return b""

    def head(self, chars: int = 65536) -> str:
        """The first characters as text (BOM dropped, line ends as ``\\n``); "" when unreadable."""
        return _decode(
            self.head_bytes(chars * 2 if self.head_bytes(2)[:2] in (b"\xff\xfe", b"\xfe\xff") else chars), strict=False
        )[:chars]

    @cached_property
    def data(self) -> bytes:
        try:
            if self.gzipped:
                with gzip.open(self.path, "rb") as fh:
                    return fh.read()
            return self.path.read_bytes()
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise self.fail(
                f"the gzip stream is truncated or corrupt ({exc})", "copy the file again; `gzip -t FILE` checks it"
            ) from None
        except OSError as exc:
            raise self.fail(f"cannot be read ({exc.strerror or exc})", "check the path and its permissions") from None

    @cached_property
    def text(self) -> str:
        """The whole file as text: UTF-8 or UTF-16 (by BOM), BOM dropped, CRLF/CR line ends as ``\\n``."""
        try:
            return _decode(self.data, strict=True)
        except TraceFormatError as exc:
            raise TraceFormatError(f"{self.path}: {exc}") from None

    @property
    def is_sqlite(self) -> bool:
        return self.head_bytes(16) == SQLITE_MAGIC

    @contextlib.contextmanager
    def local_file(self) -> Iterator[Path]:
        """A plain (uncompressed) copy of the file on disk, for readers that need a path (SQLite)."""
        if not self.gzipped:
            yield self.path
            return
        fd, tmp = tempfile.mkstemp(suffix="-" + self.name)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(self.data)
            yield Path(tmp)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    # ------------------------------------------------------------------------------------- structured
    def json(self) -> Any:
        try:
            return json.loads(self.text)
        except RecursionError:
            raise self.fail(
                "JSON nested deeper than any profiler writes", "this is not a profiler trace; check the file"
            ) from None
        except ValueError as exc:  # JSONDecodeError included
            raise self.fail(
                f"not valid JSON ({str(exc)[:120]})", "the file may be truncated: export it again"
            ) from None

    def csv_rows(self, start: int = 0) -> list[list[str]]:
        """Every row of a CSV text from line ``start`` (0-based); blank lines dropped."""
        text = "\n".join(self.text.split("\n")[start:])
        try:
            rows = _csv_parse(text)
        except _CutShort:
            raise self.fail(
                "ends inside a quoted field: the file was cut short (copied while still being written?)",
                "export or copy it again once the profiler has finished",
            ) from None
        except csv.Error as exc:
            raise self.fail(
                f"unreadable CSV ({exc})",
                f"a field over {CSV_FIELD_LIMIT // 1024} KiB or a broken quote: not a profiler CSV",
            ) from None
        return [r for r in rows if r and any(c.strip() for c in r)]

    def csv_header(self) -> list[str]:
        """The first CSV row of the file's head (for sniffing); [] when there is none."""
        first = self.head(16384).split("\n", 1)[0]
        try:
            return next(csv.reader([first]), [])
        except csv.Error:
            return []

    def table(self, rows: Sequence[Sequence[str]] | None = None, what: str = "CSV") -> pd.DataFrame:
        """CSV rows (default: the whole file) as a DataFrame of strings; the first row is the header.

        A row whose field count differs from the header's is an error (a truncated file or an unquoted
        comma), never a silently shifted row."""
        rows = self.csv_rows() if rows is None else rows
        if not rows:
            raise self.fail(f"empty {what}", "the profiler wrote nothing; did it fail?")
        header = [h.strip() for h in rows[0]]
        body = rows[1:]
        for i, r in enumerate(body):
            if len(r) != len(header):
                raise self.fail(
                    f"{what} data row {i + 1} has {len(r)} fields, the header {len(header)}",
                    "the file is truncated or a name holds an unquoted comma; export it again",
                )
        return (
            pd.DataFrame(list(body), columns=header, dtype="string")
            if body
            else pd.DataFrame({h: pd.Series([], dtype="string") for h in header})
        )


class _CutShort(Exception):
    """The text ends inside a quoted field."""


def _csv_parse(text: str) -> list[list[str]]:
    """CSV rows of ``text``; :class:`_CutShort` when it ends inside a quoted field. Python's reader closes such a
    field at the end of the text without a word, so a file cut in the middle of a quoted kernel name (the last
    column of nsys's reports) would give a row with half a name: a kernel that never ran. The strict reader
    says so ("unexpected end of data"); any other complaint of it is left to the lenient reader, as before."""
    try:
        return list(csv.reader(io.StringIO(text), strict=True))
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            raise _CutShort from None
    return list(csv.reader(io.StringIO(text)))


def _decode(raw: bytes, strict: bool) -> str:
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # PowerShell's `>` writes UTF-16 with a BOM
        text = raw.decode("utf-16", errors="replace")
    else:
        text = raw.decode("utf-8", errors="replace")
    text = text.lstrip("\ufeff")
    if strict and "\x00" in text[:4096]:
        raise TraceFormatError(
            "binary data where text was expected (not a CSV/JSON export; for nsys, export "
            "SQLite with `nsys export --type sqlite`)"
        )
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------------------------------------- numbers
_MISSING = {"", "n/a", "na", "-", "none", "null", "<na>"}
_GROUPED = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")  # "1,915,000" / "1,678,297.60"
_PLAIN = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def parse_number(value: object) -> Decimal | None:
    """A cell as an exact decimal; None when empty; ValueError for anything that is not a finite number."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None  # pandas' own missing marker
        if math.isinf(value):
            raise ValueError("infinite")
        return Decimal(repr(value))
    s = str(value).strip()
    if s.lower() in _MISSING:
        return None
    if _GROUPED.match(s):
        s = s.replace(",", "")
    if not _PLAIN.match(s):
        raise ValueError("not a number")
    try:
        return Decimal(s)
    except InvalidOperation:
        raise ValueError("not a number") from None


def whole_number(value: object, scale: float = 1) -> int | None:
    """A cell as an int (times ``scale``, rounded to nearest), None when empty; ValueError when the value
    is not a finite number or does not fit a 64-bit integer."""
    d = parse_number(value)
    if d is None:
        return None
    if not d.is_finite():
        raise ValueError("not finite")
    if abs(d) > Decimal(INT64_MAX) / Decimal(max(scale, 1e-30)):
        raise ValueError("too large for a 64-bit integer")
    return int((d * Decimal(repr(float(scale)))).to_integral_value())


def whole_numbers(values: Any, src: Source | str, column: str, scale: float = 1) -> pd.Series:
    """A column as nullable integers, or an error naming the first cell that is not a whole number."""
    out = []
    for i, v in enumerate(_as_list(values)):
        try:
            out.append(whole_number(v, scale))
        except ValueError as why:
            raise TraceFormatError(
                f"{src}: column {column!r}, row {i + 1}: {str(v)[:40]!r} is not a usable whole "
                f"number ({why}; the file is damaged or not this profiler's output)"
            ) from None
    return pd.Series([pd.NA if x is None else x for x in out], dtype="Int64")


def real_numbers(values: Any, src: Source | str, column: str, scale: float = 1) -> pd.Series:
    """A column as nullable floats (finite), or an error naming the first bad cell."""
    out = []
    for i, v in enumerate(_as_list(values)):
        try:
            d = parse_number(v)
            f = None if d is None else float(d) * scale
            if f is not None and not math.isfinite(f):
                raise ValueError("out of range")
        except ValueError as why:
            raise TraceFormatError(
                f"{src}: column {column!r}, row {i + 1}: {str(v)[:40]!r} is not a usable number "
                f"({why}; the file is damaged or not this profiler's output)"
            ) from None
        out.append(f)
    return pd.Series([pd.NA if x is None else x for x in out], dtype="Float64")


def _as_list(values: Any) -> list:
    if values is None:
        return []
    if isinstance(values, pd.Series):
        return values.tolist()
    return list(values)


def require(df: pd.DataFrame | Sequence[str], columns: Sequence[str], src: Source | str, todo: str) -> None:
    """Every column in ``columns`` is present, or one error naming the missing ones."""
    have = set(df.columns if isinstance(df, pd.DataFrame) else df)
    missing = [c for c in columns if c not in have]
    if missing:
        raise TraceFormatError(f"{src}: missing column(s) {', '.join(map(repr, missing))} ({todo})")


def sqlite_tables(path: Path) -> set[str] | None:
    """Table names of an SQLite file; None when it is not one."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return None
