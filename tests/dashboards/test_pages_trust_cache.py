"""The dashboard's cached reads follow the store: what a page shows is what `kprof runs` / `kprof show` read now,
never an earlier state kept in a cache whose key did not change with the data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

st = pytest.importorskip("streamlit")
pytest.importorskip("plotly")  # style's palette
from streamlit.testing.v1 import AppTest  # noqa: E402

from kprof.store import RunStore  # noqa: E402
from tests.dashboards.test_pages import page  # noqa: E402
from tests.toolkit.test_store import record  # noqa: E402


def runs_page(store: Path, monkeypatch) -> AppTest:
    return page("runs", store, monkeypatch)


def shown_cases(at: AppTest, run_id: str) -> int:
    table = at.dataframe[0].value
    return int(table.loc[table["id"] == run_id, "cases"].iloc[0])


def case(provider: str) -> dict:
    return {
        "case": f"rmsnorm/{provider}/64x4096/bf16",
        "family": "rmsnorm",
        "provider": provider,
        "shape": "64x4096",
        "dtype": "bf16",
        "status": "ok",
        "ok": True,
        "gpu_time_us": 20.0,
    }


def file_state(path: Path) -> tuple[int, int, int]:
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_mtime_ns, path.stat().st_size, wal.stat().st_size if wal.exists() else -1


def test_a_case_added_after_a_wal_checkpoint_shows_up(tmp_path, monkeypatch):
    """A `kprof profile` holds its store open for the whole run. Once SQLite has checkpointed its write-ahead log
    (every ~4 MB: a few cases with many samples, or a launch table), later writes reuse the log from its start: the
    store file's mtime and the log's size stay as they were. The page keyed its cache on those two and kept showing
    the run as it was at the checkpoint, while `kprof runs` counted the new case."""
    path = tmp_path / "s" / "kprof.db"
    writer = RunStore(path)  # the profiling process: one connection, open until the run ends
    run = writer.begin_run(record(mode="gpu"))
    for i in range(4):  # ~1.5 MB of samples each: past SQLite's checkpoint at 1000 pages of log
        writer.add_case(run, i, case(f"triton_v{i}"), {"gpu": [0.0123456789] * 100_000})
    at = runs_page(path, monkeypatch)
    assert shown_cases(at, run) == 4
    before = file_state(path)
    writer.add_case(run, 4, case("triton_v4"), {"gpu": [0.02] * 50})
    # the scenario itself: nothing a file's metadata shows changed, yet the store holds one more case
    assert file_state(path) == before
    assert len(RunStore(path).metrics(run)) == 5
    at.run()
    assert not at.exception
    assert shown_cases(at, run) == 5, "the page kept the run as it was before the checkpoint"
    writer.close()


def test_a_store_replaced_by_another_file_is_read_anew(tmp_path, monkeypatch):
    """A store file replaced by another one (a copy restored with its times kept, `cp -p`, `rsync -t`) whose
    mtime and size happen to equal the first's: the page reads the new file, not the old one's cached runs."""
    path = tmp_path / "s" / "kprof.db"
    other = tmp_path / "o" / "kprof.db"
    for p, family in ((path, "rmsnorm"), (other, "swiglu")):
        s = RunStore(p)
        s.begin_run(record(mode="gpu", family=family))
        s.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        s.close()
    at = runs_page(path, monkeypatch)
    assert list(at.dataframe[0].value["family"]) == ["rmsnorm"]
    if path.stat().st_size != other.stat().st_size:
        pytest.skip("the two stores differ in size here; the scenario needs equal sizes")
    stat = path.stat()
    os.replace(other, path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # times kept, as `cp -p` keeps them
    assert RunStore(path).runs()["family"].tolist() == ["swiglu"]
    at.run()
    assert not at.exception
    assert list(at.dataframe[0].value["family"]) == ["swiglu"], "the page showed the replaced file's runs"


def test_a_running_run_whose_profiler_died_reads_incomplete(tmp_path, monkeypatch):
    """A profile killed mid-run (out of memory, kill -9) writes nothing more, and `kprof runs` reads its run as
    incomplete from then on (its process is gone). The page cached the run as 'running' and kept saying so."""
    import sqlite3
    import subprocess
    import sys

    path = tmp_path / "s" / "kprof.db"
    s = RunStore(path)
    run = s.begin_run(record(mode="gpu"))
    s.close()
    profiler = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with sqlite3.connect(path) as con:  # the run is that process's
            con.execute("UPDATE runs SET pid = ? WHERE id = ?", (profiler.pid, run))
        at = runs_page(path, monkeypatch)
        assert list(at.dataframe[0].value["status"]) == ["running"]
    finally:
        profiler.kill()
        profiler.wait()
    assert RunStore(path).runs()["status"].tolist() == ["incomplete"]  # what `kprof runs` says now
    at.run()
    assert not at.exception
    assert list(at.dataframe[0].value["status"]) == ["incomplete"], "the page kept a dead run 'running'"
