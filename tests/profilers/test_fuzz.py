"""Property test: every real trace in tests/data, mutated the ways files get damaged, either parses into a
valid launch table or fails with one line naming the file (``kprof: <file>: ...``, exit 2) - never a
traceback.

Mutations: truncation, a dropped column (CSV column, JSON key, SQLite column), a value swapped for text,
NaN, infinity, a huge or negative number or nothing, nesting beyond the recursion limit, another
encoding (BOM, CRLF, UTF-16), and compression (gzip, cut gzip).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the fuzz test needs hypothesis (pip install -e '.[test]')")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kprof import launch_table  # noqa: E402
from kprof.errors import KprofError  # noqa: E402
from kprof.profilers import parse_trace  # noqa: E402
from tests.conftest import DATA  # noqa: E402

TRACES = sorted(
    [p for p in DATA.glob("*.gz") if not p.name.startswith("sweep_")]
    + [p for p in (DATA / "rocprof").rglob("*") if p.suffix in (".csv", ".json")],
    key=lambda p: p.name,
)
BAD_VALUES = [
    "",
    "soon",
    "NaN",
    "nan",
    "Infinity",
    "-inf",
    "1.5e300",
    "2.41e+15",
    "1,915,000",
    "-7",
    "0x10",
    "[/]",
    "\x1b[2J",
    "9" * 40,
]
ENCODINGS = ["bom", "crlf", "utf16", "gzip", "gzip_cut"]


def plain_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def plain_name(path: Path) -> str:
    return path.name[:-3] if path.name.endswith(".gz") else path.name


# ------------------------------------------------------------------------------------------- mutations
def mutate_csv(raw: bytes, draw) -> bytes:
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8", "replace"))))
    widths = [len(r) for r in rows]
    head = next((i for i, r in enumerate(rows) if len(r) == max(widths)), 0)
    kind = draw(st.sampled_from(["drop_column", "swap", "swap_many", "header_only", "short_row"]))
    width = len(rows[head])
    col = draw(st.integers(0, max(width - 1, 0)))
    if kind == "drop_column":
        rows = [r[:col] + r[col + 1 :] if len(r) == width else r for r in rows]
    elif kind in ("swap", "swap_many") and len(rows) > head + 1:
        value = draw(st.sampled_from(BAD_VALUES))
        targets = range(head + 1, len(rows)) if kind == "swap_many" else [draw(st.integers(head + 1, len(rows) - 1))]
        for i in targets:
            if col < len(rows[i]):
                rows[i][col] = value
    elif kind == "header_only":
        rows = rows[: head + 1]
    elif len(rows) > head + 1:
        rows[-1] = rows[-1][: max(1, len(rows[-1]) // 2)]
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


def _events(data):
    if isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        return data["traceEvents"]
    if isinstance(data, list):  # a hatchet tree: walk it
        out, todo = [], list(data)
        while todo:
            node = todo.pop()
            if isinstance(node, dict):
                out.append(node)
                for v in node.values():
                    if isinstance(v, (dict, list)):
                        todo.append(v)
            elif isinstance(node, list):
                todo.extend(node)
        return out
    return []


def mutate_json(raw: bytes, draw) -> bytes:
    data = json.loads(raw.decode("utf-8"))
    kind = draw(st.sampled_from(["drop_key", "swap", "swap_kind", "nest", "non_dict_args"]))
    if kind == "nest":
        depth = draw(st.sampled_from([2000, 50_000]))
        return b"[" * depth + raw + b"]" * depth
    events = [e for e in _events(data) if isinstance(e, dict) and e]
    if not events:
        return raw
    ev = events[draw(st.integers(0, len(events) - 1))]
    key = draw(st.sampled_from(sorted(ev)))
    if kind == "drop_key":
        del ev[key]
    elif kind == "swap":
        ev[key] = draw(st.sampled_from(BAD_VALUES + [None, float("nan"), float("inf"), 10**400, -1, [], {}]))
    elif kind == "swap_kind":  # the same damage on every event of one kind
        for e in events:
            if key in e and type(e[key]) is type(ev[key]):
                e[key] = draw(st.sampled_from(BAD_VALUES[:9] + [None]))
    else:
        ev["args"] = draw(st.sampled_from([[1, 2], "args", 7, None]))
    return json.dumps(data, allow_nan=True).encode()


def mutate_sqlite(path: Path, draw) -> None:
    con = sqlite3.connect(path)
    tables = [
        r[0]
        for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE "
            "'sqlite_%' AND (name LIKE 'CUPTI%' OR name IN ('NVTX_EVENTS','StringIds'))"
        )
    ]
    table = draw(st.sampled_from(sorted(tables)))
    cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
    col = draw(st.sampled_from(cols))
    kind = draw(st.sampled_from(["drop_column", "swap", "swap_all"]))
    # a copy without NOT NULL constraints, as a damaged export can have it
    con.execute(f"CREATE TABLE fuzz_copy AS SELECT * FROM {table}")
    con.execute(f"DROP TABLE {table}")
    con.execute(f"ALTER TABLE fuzz_copy RENAME TO {table}")
    if kind == "drop_column":
        con.execute(f'ALTER TABLE {table} DROP COLUMN "{col}"')
    else:
        value = draw(st.sampled_from([None, "soon", 1.5e300, 2.5, -(2**62), "NaN"]))
        where = (
            ""
            if kind == "swap_all"
            else f" WHERE rowid = (SELECT MIN(rowid) + {draw(st.integers(0, 20))} FROM {table})"
        )
        con.execute(f'UPDATE {table} SET "{col}" = ?{where}', (value,))
    con.commit()
    con.close()


def encode(raw: bytes, how: str) -> bytes:
    if how == "bom":
        return b"\xef\xbb\xbf" + raw
    if how == "crlf":
        return raw.replace(b"\n", b"\r\n")
    if how == "utf16":
        return raw.decode("utf-8", "replace").encode("utf-16")
    packed = gzip.compress(raw)
    return packed if how == "gzip" else packed[: max(10, len(packed) // 2)]


# ----------------------------------------------------------------------------------------------- check
@pytest.fixture(autouse=True)
def _no_safety_net(monkeypatch):
    """A parser's own exception (KeyError, ValueError...) fails the test instead of becoming the generic
    one-line message: every damage the mutations make must be recognised by a parser rule."""
    import kprof.profilers

    monkeypatch.setattr(kprof.profilers, "RAISE_UNEXPECTED", True)


def check(path: Path) -> None:
    """A parse gives a valid table; a failure is one KprofError line naming the file."""
    try:
        table = parse_trace(path)
    except KprofError as exc:
        msg = str(exc)
        assert "\n" not in msg and msg.startswith(str(path)), msg
        return
    launch_table.validate(table)
    from kprof.cli import kernel_summary_table

    kernel_summary_table(table)  # what `kprof parse` prints must render


@pytest.mark.parametrize("trace", TRACES, ids=[p.name for p in TRACES])
@settings(
    max_examples=int(os.environ.get("KPROF_FUZZ_EXAMPLES", "6")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_real_traces_parse_or_fail_in_one_line(trace, data, tmp_path_factory):
    raw = plain_bytes(trace)
    work = tmp_path_factory.mktemp("fuzz")
    out = work / plain_name(trace)
    what = data.draw(st.sampled_from(["truncate", "structure", "structure", "encoding"]))
    if what == "truncate":
        out.write_bytes(raw[: data.draw(st.integers(0, len(raw) - 1))])
    elif what == "encoding":
        out.write_bytes(encode(raw, data.draw(st.sampled_from(ENCODINGS))))
    elif raw[:16] == b"SQLite format 3\x00":
        out.write_bytes(raw)
        mutate_sqlite(out, data.draw)
    elif raw.lstrip()[:1] in (b"{", b"["):
        out.write_bytes(mutate_json(raw, data.draw))
    else:
        out.write_bytes(mutate_csv(raw, data.draw))
    if out.stat().st_size and data.draw(st.booleans()) and what != "encoding":
        shutil.copy(out, work / "tmp")
        out.write_bytes(gzip.compress((work / "tmp").read_bytes()))  # the damage, compressed
    check(out)


def test_every_real_trace_is_in_the_corpus():
    names = {p.name for p in TRACES}
    assert {
        "nsys_rmsnorm.sqlite.gz",
        "ncu_rmsnorm_raw.csv.gz",
        "proton_rmsnorm_tree.hatchet.gz",
        "kineto_rmsnorm_h100_small.json.gz",
        "HIP_Programming_MI300A_vec_add_results.json",
    } <= names
    for p in TRACES:  # and each of them parses, or is refused by name (host API files), unmutated
        check(p)
