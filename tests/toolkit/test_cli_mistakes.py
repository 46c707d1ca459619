"""A newcomer's mistakes: each ends in exit status 2 and ONE line on stderr, no traceback, and is caught
before any long work starts. Also: a store that is not kprof's is refused and left byte for byte as it
was, reads never create a store, the dashboard's demo store is unpacked where no one else can plant a
file, and an interrupted or killed run still reads back.

The table runs the CLI in-process (the same ``main`` the ``kprof`` script calls) to keep CI fast; two
cases also run as a real subprocess.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kprof import cli, cli_checks
from kprof.errors import KprofError, StoreError, UnknownRunError
from kprof.store import RunRecord, RunStore

ROOT = Path(__file__).parents[2]
HAS_GPU = torch.cuda.is_available()


def run_kprof(capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    """``kprof ARGS`` in this process: (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["kprof", *args])
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, expect: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("kprof: ") and "Traceback" not in err
    assert expect in lines[0], lines[0]


def record(**kw) -> RunRecord:
    base = dict(
        family="rmsnorm",
        mode="interpreter",
        command="kprof profile rmsnorm",
        config={},
        git_commit="0123456789abcdef",
        git_dirty=False,
        git_note=None,
        source_hashes={},
        device={"name": "cpu"},
        versions={},
        profiler="none",
        profiler_version=None,
        ceiling_gbps=None,
        ceiling=None,
    )
    base.update(kw)
    return RunRecord(**base)


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("not a folder\n")
    return {
        "missing": tmp_path / "no" / "such" / "folder" / "out.x",
        "folder": tmp_path,
        "under_file": a_file / "out.x",
    }


# (argv before the output option, the output option): every command that writes a file
OUTPUTS = [
    (("profile", "rmsnorm", "--shape", "5x33"), "--report"),
    (("sweep", "rmsnorm", "-v", "triton_one_row", "-P", "BLOCK_N=64", "--shape", "5x33"), "--report"),
    (("sweep", "rmsnorm", "-v", "triton_one_row", "-P", "BLOCK_N=64", "--shape", "5x33"), "--guide"),
    (("show", "latest"), "--csv"),
    (("show", "latest"), "--samples"),
    (("show", "latest"), "--launches"),
    (("export", "latest"), "--perfetto"),
    (("parse", str(ROOT / "pyproject.toml")), "--csv"),
    (("parse", str(ROOT / "pyproject.toml")), "--perfetto"),
    (("diff", "latest", "latest"), "--markdown"),
    (("diff", "latest", "latest"), "--json"),
    (("guide", "latest"), "--markdown"),
]


@pytest.mark.parametrize(
    "where, expect",
    [("missing", "does not exist"), ("folder", "is a folder"), ("under_file", "is a file, not a folder")],
)
@pytest.mark.parametrize("argv, option", OUTPUTS, ids=[f"{a[0]}{o}" for a, o in OUTPUTS])
def test_unwritable_outputs_are_refused_before_any_work(
    argv, option, where, expect, places, tmp_path, capsys, monkeypatch
):
    store = tmp_path / "store" / "kprof.db"
    code, _, err = run_kprof(
        capsys, monkeypatch, *argv, option, str(places[where]), *(["--store", str(store)] if argv[0] != "parse" else [])
    )
    one_line_error(code, err, expect)
    assert not store.exists()  # refused before the run (and before any store was made)


@pytest.mark.parametrize(
    "argv, expect",
    [
        (("profile", "swiglu", "--shape", "64x64"), "does not fit swiglu"),
        (("profile", "rmsnorm_linear", "--shape", "64"), "does not fit rmsnorm_linear"),
        (("sweep", "swiglu", "-v", "triton_tiled", "-P", "BLOCK_M=16", "--shape", "64x64"), "does not fit swiglu"),
        (("profile", "rmsnorm", "--shape", "12345678901234567890x8"), "has a dimension above"),
        (("profile", "rmsnorm", "--shape", ""), "--shape was given an empty value"),
        (("profile", "rmsnorm", "--dtype", ""), "--dtype was given an empty value"),
        (("profile", "rmsnorm", "--provider", ""), "--provider was given an empty value"),
        (("sweep", "rmsnorm", "-v", "triton_one_row", "-P", "BLOCK_N=64", "--shapes", ""), "empty value"),
        (("profile", "rmsnorm", "--provider", "triton_one_row[BLOCK_N=64,num_warps=2"), "unclosed '['"),
        (("profile", "rmsnorm", "--rep-ms", "0"), "--rep-ms must be positive"),
        (("profile", "rmsnorm", "--warmup-ms", "-1"), "--warmup-ms must be 0 or more"),
        (("profile", "rmsnorm", "--profile-repeats", "0"), "--profile-repeats must be positive"),
        (("profile", "rmsnorm", "--rev", "no-such-revision-anywhere"), "no such commit"),
        (("profile", "rmsnorm", "--rep-ms", "lots"), "Invalid value for '--rep-ms'"),
        (("profile",), "Missing argument"),
        (("profile", "rmsnorm", "--no-such-option"), "No such option"),
        (("no-such-command",), "No such command"),
        (("sweep", "rmsnorm", "-v", "triton_one_row", "-P", "BLOCK_N=99999999999999999999"), "between 1 and"),
        (("dashboard", "--port", "99999"), "--port 99999 is not a TCP port"),
        (("dashboard", "--port", "0"), "is not a TCP port"),
        (("show", "latest"), "no runs yet"),
    ],
)
def test_mistakes_give_one_line_and_exit_2(argv, expect, tmp_path, capsys, monkeypatch):
    store = tmp_path / "s.db"
    code, _, err = (
        run_kprof(capsys, monkeypatch, *argv, "--store", str(store))
        if argv[0] not in ("no-such-command", "dashboard")
        else run_kprof(capsys, monkeypatch, *argv)
    )
    one_line_error(code, err, expect)
    assert not store.exists()


def test_mistakes_in_a_real_process_too(tmp_path):
    env = {**os.environ}
    env.pop("TRITON_INTERPRET", None)
    for argv, expect in (
        (["profile", "rmsnorm", "--shape", ""], "empty value"),
        (["dashboard", "--port", "99999"], "not a TCP port"),
    ):
        res = subprocess.run(
            [sys.executable, "-m", "kprof.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        one_line_error(res.returncode, res.stderr, expect)


def test_brackets_in_messages_are_printed(capsys, monkeypatch):
    """Rich markup must not eat ``[dashboard]`` out of ``pip install 'kprof[dashboard]'``."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "streamlit" else real(name, *a))
    code, _, err = run_kprof(capsys, monkeypatch, "dashboard")
    one_line_error(code, err, "pip install 'kprof[dashboard]'")


# ------------------------------------------------------------------------------------- foreign stores
def foreign_sqlite(path: Path) -> str:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE runs (id INTEGER, what TEXT)")  # the name kprof uses, someone else's table
    conn.execute("CREATE TABLE TARGET_INFO_GPU (name TEXT)")
    conn.execute("INSERT INTO runs VALUES (7, 'not kprof')")
    conn.commit()
    conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "argv",
    [
        ("runs",),
        ("show", "latest"),
        ("guide",),
        ("export",),
        ("profile", "rmsnorm", "--shape", "5x33"),
        ("sweep", "rmsnorm", "-v", "triton_one_row", "-P", "BLOCK_N=64", "--shape", "5x33"),
    ],
)
def test_a_foreign_sqlite_store_is_refused_and_untouched(argv, tmp_path, capsys, monkeypatch):
    path = tmp_path / "report.sqlite"
    before = foreign_sqlite(path)
    code, _, err = run_kprof(capsys, monkeypatch, *argv, "--store", str(path))
    one_line_error(code, err, "not a readable kprof store")
    assert "runs" in err  # it names the tables it found
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.sqlite"]  # no -wal / -shm beside it
    with pytest.raises(StoreError, match="not a readable kprof store"):
        RunStore(path)


@pytest.mark.parametrize("data", [b"my notes\n", b"\0" * 4096, b"SQLite", b"SQLite format 3\0" + b"\0" * 84])
def test_a_non_sqlite_file_is_refused_untouched(tmp_path, data):
    """Text, zeros, a short file, SQLite's magic with no database after it: SQLite itself refuses each (the check
    opens no file descriptor of its own: see ``test_store.py``), and nothing is written beside it."""
    path = tmp_path / "notes.db"
    path.write_bytes(data)
    for create in (True, False):
        with pytest.raises(StoreError, match="not an SQLite database"):
            RunStore(path, create=create)
    assert path.read_bytes() == data
    assert [p.name for p in tmp_path.iterdir()] == ["notes.db"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root (or another OS) reads a file of mode 000")
def test_an_unreadable_store_says_so_untouched(tmp_path):
    path = tmp_path / "kprof.db"
    RunStore(path).close()
    before = path.read_bytes()
    path.chmod(0)
    try:
        with pytest.raises(StoreError, match="cannot read the store"):
            RunStore(path, create=False)
    finally:
        path.chmod(0o600)
    assert path.read_bytes() == before


def test_a_store_with_corrupt_pages_is_one_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "kprof.db"
    st = RunStore(path)
    for _ in range(30):
        rid = st.begin_run(record(command="x" * 3000))
        st.finish_run(rid, "complete", report_md="# r\n" + "y" * 3000)
    st._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    st.close()
    data = bytearray(path.read_bytes())
    for page in range(1, len(data) // 4096):  # every page but the header's
        data[page * 4096 + 8 : page * 4096 + 300] = os.urandom(292)
    path.write_bytes(bytes(data))
    for argv in (("runs",), ("show", "latest")):
        code, _, err = run_kprof(capsys, monkeypatch, *argv, "--store", str(path))
        one_line_error(code, err, "kprof store")


def test_reads_create_nothing(tmp_path, capsys, monkeypatch):
    where = tmp_path / "x" / "y.db"
    code, out, err = run_kprof(capsys, monkeypatch, "runs", "--store", str(where))
    assert code == 0 and "no runs yet" in out and not err
    for argv in (("show", "latest"), ("guide",), ("export",), ("diff", "a", "b")):
        code, _, err = run_kprof(capsys, monkeypatch, *argv, "--store", str(where))
        one_line_error(code, err, "no runs yet")
    assert not (tmp_path / "x").exists()


def test_run_ids_are_prefixes_not_like_patterns(tmp_path):
    st = RunStore(tmp_path / "kprof.db")
    rid = st.begin_run(record())
    assert st.resolve(rid[:9]) == rid
    for pattern in (rid[:5] + "_" + rid[6:9], rid[:4] + "%", "%", "_" * len(rid)):
        with pytest.raises(UnknownRunError):
            st.resolve(pattern)


# ------------------------------------------------------------------------------------- honest output
def test_version_and_help_without_bool(capsys, monkeypatch):
    code, out, _ = run_kprof(capsys, monkeypatch, "--version")
    assert code == 0 and re.match(r"kprof \d+\.\d+", out)
    for argv in (("profile", "--help"), ("sweep", "--help"), ("dashboard", "--help"), ("--help",)):
        code, out, _ = run_kprof(capsys, monkeypatch, *argv)
        assert code == 0 and "Usage" in out and "<bool>" not in out
        assert "--help" in out


@pytest.mark.skipif(HAS_GPU, reason="what a machine without a GPU says")
def test_families_and_export_say_what_cannot_run_here(tmp_path, capsys, monkeypatch):
    code, out, _ = run_kprof(capsys, monkeypatch, "families")
    row = next(ln for ln in out.splitlines() if "torch_compile" in ln)
    assert code == 0 and "GPU only" in row
    assert cli_checks.runnable_profilers() == []


def test_guide_refuses_a_run_that_is_not_a_sweep(tmp_path, capsys, monkeypatch):
    st = RunStore(tmp_path / "kprof.db")
    rid = st.begin_run(record())
    st.finish_run(rid, "complete", report_md="# r")
    code, _, err = run_kprof(capsys, monkeypatch, "guide", rid, "--store", str(tmp_path / "kprof.db"))
    one_line_error(code, err, "not a sweep")


@pytest.mark.skipif(HAS_GPU, reason="a CPU interpreter run")
def test_a_tiny_run_keeps_bracketed_providers_and_says_the_profiler_is_dropped(tmp_path, capsys, monkeypatch):
    store = tmp_path / "kprof.db"
    code, out, err = run_kprof(
        capsys,
        monkeypatch,
        "profile",
        "gelu_mul",
        "--shape",
        "3x2x130",
        "--dtype",
        "fp32",
        "--provider",
        "triton_one_row[BLOCK_H=128,num_warps=2],torch_eager",
        "--profiler",
        "torch",
        "--seed",
        "11",
        "--store",
        str(store),
    )
    assert code == 0, err
    assert "| triton_one_row[BLOCK_H=128,num_warps=2] | ok |" in out
    assert "--profiler torch is not used" in err
    assert "RuntimeWarning" not in err and "Traceback" not in err
    assert re.search(r"cases: 2/2", err)  # progress reaches a piped stderr

    # a run whose process was killed (no report stored, status still 'running', pid gone) still shows
    conn = sqlite3.connect(store)
    conn.execute("UPDATE runs SET status = 'running', report_md = NULL, finished_at = NULL, pid = ?", (_dead_pid(),))
    conn.commit()
    conn.close()
    code, out, err = run_kprof(capsys, monkeypatch, "show", "latest", "--store", str(store))
    assert code == 0, err
    assert "incomplete" in out and "| triton_one_row[BLOCK_H=128,num_warps=2] | ok |" in out


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_interrupt_message_prints(capsys):
    def app(**_):
        raise KeyboardInterrupt

    for in_run, expect in ((True, "run is marked incomplete"), (False, "kprof: interrupted")):
        with pytest.raises(SystemExit) as exc:
            cli_checks.run_cli(app, lambda m: print(m, file=sys.stderr), lambda in_run=in_run: in_run)
        assert exc.value.code == 130 and expect in capsys.readouterr().err


def test_progress_lines_estimate_and_shrink_hint():
    lines: list[str] = []
    clock = iter([0.0, 60.0, 120.0])
    p = cli_checks.ProgressLines(lines.append, piped=True, interpreter=True, every_s=15, prior_s_per_case=2.0)
    import kprof.cli_checks as mod

    real = mod.time.monotonic
    mod.time.monotonic = lambda: next(clock)
    try:
        p("cases", 0, 40, "first")
        p("cases", 1, 40, "second")
        p("cases", 2, 40, "third")
    finally:
        mod.time.monotonic = real
    assert "about 80 s" in lines[0] and "fewer --shape" in lines[0]  # before: 40 cases x 2.0 s measured earlier
    assert any(ln.startswith("measured 60.0 s per case") and "about 39 min more" in ln for ln in lines)
    assert any("cases: 2/40" in ln and "left" in ln for ln in lines)


@pytest.mark.parametrize(
    "values, expect",
    [
        (["a,b"], ["a", "b"]),
        (["t[A=1,B=2],u", "v"], ["t[A=1,B=2]", "u", "v"]),
        ([" t[A=1, B=2] , "], ["t[A=1, B=2]"]),
    ],
)
def test_split_list_keeps_commas_inside_brackets(values, expect):
    assert cli_checks.split_list(values, "--provider") == expect


# ------------------------------------------------------------------------------------- the demo store
def test_demo_store_is_private_and_follows_no_planted_symlink(tmp_path, monkeypatch):
    pytest.importorskip("streamlit")
    import tempfile

    from kprof.dashboards import data

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    planted = tmp_path / "kprof-dashboard-demo"  # the fixed name an older version used
    planted.mkdir()
    (planted / "kprof-demo.db").symlink_to(victim)
    data._demo_path.cache_clear()
    try:
        path = data._demo_path()
    finally:
        data._demo_path.cache_clear()
    assert victim.read_text() == "precious\n"
    assert path.parent != planted and path.parent.parent == tmp_path
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not path.is_symlink() and path.read_bytes()[:16] == b"SQLite format 3\x00"
    assert not RunStore(path, create=False).runs().empty


def test_store_guard_accepts_new_and_empty_files(tmp_path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for p in (tmp_path / "new.db", empty):
        st = RunStore(p)
        assert st.runs().empty
        st.close()
        RunStore(p, create=False).close()  # now a kprof store


def test_check_outputs_accepts_a_writable_file(tmp_path):
    cli_checks.check_outputs(csv=tmp_path / "m.csv", json=None)
    with pytest.raises(KprofError, match="--json"):
        cli_checks.check_outputs(json=tmp_path)


def test_dashboard_address_problems_are_one_line(capsys, monkeypatch):
    import socket

    code, _, err = run_kprof(capsys, monkeypatch, "dashboard", "--host", "999.1.1.1")
    one_line_error(code, err, "--host 999.1.1.1")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = run_kprof(capsys, monkeypatch, "dashboard", "--port", str(port))
    one_line_error(code, err, f"cannot listen on 127.0.0.1:{port}")
