"""Malformed inputs, one table for every parser: each raises TraceFormatError naming the file and the problem."""

from __future__ import annotations

import gzip
import sqlite3

import pytest

from kprof.errors import TraceFormatError
from kprof.profilers import backends, parse_trace
from tests.conftest import DATA


def _truncate(src, n):
    def make(tmp_path, data_file):
        raw = data_file(src).read_bytes()
        out = tmp_path / src
        out.write_bytes(raw[: n if n > 0 else len(raw) // 2])
        return out

    return make


def _text(name, text):
    def make(tmp_path, data_file):
        out = tmp_path / name
        out.write_text(text)
        return out

    return make


def _empty_sqlite(tmp_path, data_file):
    out = tmp_path / "nothing.sqlite"
    con = sqlite3.connect(out)
    con.execute("CREATE TABLE unrelated (a)")
    con.commit()
    con.close()
    return out


def _old_nsys_schema(tmp_path, data_file):
    """An nsys export whose kernel table lacks columns kprof reads (an unknown/older schema version)."""
    out = tmp_path / "old.sqlite"
    src = sqlite3.connect(data_file("nsys_rmsnorm.sqlite"))
    dst = sqlite3.connect(out)
    dst.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
    dst.execute('CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER, demangledName INTEGER)')
    dst.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?)",
        src.execute('SELECT start, "end", demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchall(),
    )
    dst.commit()
    return out


CASES = [
    # (what, how to make it, format or None for sniffing, message fragment)
    ("empty file", _text("empty.csv", ""), None, "is empty"),
    ("not a trace at all", _text("notes.txt", "hello\n"), None, "not a trace kprof can read"),
    ("torch trace cut in half", lambda t, d: _gz_half(t), "torch", "not valid JSON"),
    ("nsys SQLite of another program", _empty_sqlite, "nsys", "not an Nsight Systems export"),
    ("nsys export of an unknown schema", _old_nsys_schema, "nsys", "unexpected Nsight Systems schema"),
    (
        "nsys stats CSV of a report kprof does not read",
        _text("cuda_api_sum.csv", "Time (%),Total Time (ns),Num Calls\n1,2,3\n"),
        "nsys",
        "host CUDA API calls, not GPU work",
    ),
    ("ncu CSV truncated mid-row", _truncate("ncu_rmsnorm_raw.csv", 0), "ncu", "truncated"),
    (
        "ncu output without the CSV page",
        _text("ncu.txt", "==PROF== Disconnected from process 1\n"),
        "ncu",
        "no ncu CSV header",
    ),
    ("rocprof CSV with unknown columns", _text("results.csv", "A,B\n1,2\n"), "rocprof", "not a rocprof output"),
    (
        "rocprof JSON that is another Chrome trace",
        lambda t, d: d("proton_rmsnorm_trace.chrome_trace"),
        "rocprof",
        "without rocprof's GPU",
    ),
    ("proton hatchet cut short", _truncate("proton_rmsnorm_tree.hatchet", 700), "proton", "not valid JSON"),
    ("wrong tool named", lambda t, d: d("ncu_rmsnorm_raw.csv"), "nsys", "no `nsys stats` report"),
]


def _gz_half(tmp_path):
    raw = gzip.decompress((DATA / "kineto_rmsnorm_h100_small.json.gz").read_bytes())
    out = tmp_path / "half.json"
    out.write_bytes(raw[: len(raw) // 2])
    return out


@pytest.mark.parametrize("what,make,fmt,match", CASES, ids=[c[0] for c in CASES])
def test_malformed_inputs_raise_clear_errors(what, make, fmt, match, tmp_path, data_file):
    path = make(tmp_path, data_file)
    with pytest.raises(TraceFormatError, match=match) as info:
        parse_trace(path, fmt)
    assert path.name in str(info.value)  # the message names the file


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(TraceFormatError, match="unknown trace format 'vtune'"):
        parse_trace(DATA / "README.md", "vtune")
    with pytest.raises(TraceFormatError, match="not found"):
        parse_trace(tmp_path / "nope.sqlite")
    with pytest.raises(TraceFormatError, match="is a folder"):
        parse_trace(tmp_path)


def test_every_backend_module_declares_its_record():
    found = backends()
    assert {"torch", "nsys", "ncu", "rocprof", "proton"} <= set(found)
    for name, b in found.items():
        assert b.name == name and callable(b.parse) and callable(b.sniff), name
        assert b.default_repeats >= 1
        # a profiler that runs the cases in a replay child says how (capture steps) and how it labels them
        if not b.in_process:
            assert callable(b.capture) and b.marker in ("nvtx", "roctx", "proton", "none"), name
