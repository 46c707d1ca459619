"""The read-only tables the pages show as HTML (kprof.dashboards.style.html_table), read back as a user sees
them: one column per ``data-col`` header, each cell the text shown, each row's background colour."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pandas as pd


class _Table(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cols: list[str] = []
        self.rows: list[list[str]] = []
        self.shades: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "th":
            self.cols.append(a.get("data-col") or "")
        elif tag == "tr" and self.cols:
            self.rows.append([])
            m = re.search(r"background-color:\s*([^;]+)", a.get("style") or "")
            self.shades.append(m.group(1).strip() if m else "")
        elif tag == "td":
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None


def html_tables(at) -> list[pd.DataFrame]:
    """Every HTML table of an AppTest run, in page order; ``attrs["shade"]`` holds each row's colour."""
    out = []
    for el in at.get("html"):
        p = _Table()
        p.feed(el.proto.body)
        if not p.cols:
            continue
        df = pd.DataFrame([r for r in p.rows if r], columns=p.cols)
        df.attrs["shade"] = [s for s, r in zip(p.shades, p.rows) if r]
        out.append(df)
    return out


def num(cells: pd.Series) -> pd.Series:
    """Shown numbers back to floats: units and thousands separators off, '—' as NaN."""
    text = cells.astype(str).str.replace(r"[^0-9eE.+-]", "", regex=True).replace("", None)
    return pd.to_numeric(text, errors="coerce")


def marks(markup: str, attr: str) -> list[dict[str, str]]:
    """The attributes of every element of ``markup`` that has ``attr``, with the text directly inside it
    under ``"_text"``."""
    found: list[dict[str, str]] = []

    class Marks(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.open: list[dict[str, str] | None] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = {k: v or "" for k, v in attrs}
            mine = {**a, "_text": ""} if attr in a else None
            if mine is not None:
                found.append(mine)
            if tag not in ("input", "br", "img"):  # void elements never close
                self.open.append(mine)

        def handle_endtag(self, tag: str) -> None:
            if self.open:
                self.open.pop()

        def handle_data(self, data: str) -> None:
            if self.open and self.open[-1] is not None:
                self.open[-1]["_text"] += data

    Marks().feed(markup)
    return found
