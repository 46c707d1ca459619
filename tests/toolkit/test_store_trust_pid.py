"""A run's 'running' status against its process: a pid the system has since given to another process does not keep a
dead run 'running'."""

from __future__ import annotations

import os
import sqlite3
import sys
from datetime import datetime, timedelta, timezone

import pytest

from kprof import store as store_module
from kprof.store import RunStore
from tests.toolkit.test_store import record

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process start times come from /proc")


def _created_at(path, run_id: str, when: datetime) -> None:
    with sqlite3.connect(path) as cx:
        cx.execute("UPDATE runs SET created_at = ? WHERE id = ?", (when.isoformat(timespec="seconds"), run_id))


@linux_only
def test_this_process_started_before_now():
    started = store_module._process_started(os.getpid())
    assert started is not None and started <= datetime.now(timezone.utc)


def test_a_run_of_a_live_process_reads_running(store_path):
    st = RunStore(store_path)
    rid = st.begin_run(record())
    assert st.run(rid)["status"] == "running"
    assert st.runs().set_index("id").loc[rid, "status"] == "running"


@linux_only
def test_a_run_older_than_the_process_that_holds_its_pid_reads_incomplete(store_path):
    """The run's pid is alive (this process's), but this process started after the run was created: the run's own
    process died and the pid was handed on. Before, the run read 'running' for as long as the new process lived."""
    st = RunStore(store_path)
    rid = st.begin_run(record())
    started = store_module._process_started(os.getpid())
    _created_at(store_path, rid, started - timedelta(hours=1))
    st = RunStore(store_path)
    assert st.run(rid)["status"] == "incomplete"
    assert st.runs().set_index("id").loc[rid, "status"] == "incomplete"


def test_without_a_start_time_a_live_pid_still_counts(store_path, monkeypatch):
    """Off Linux (no /proc) the start time is unknown: a live pid keeps the run 'running', as before."""
    monkeypatch.setattr(store_module, "_process_started", lambda pid: None)
    st = RunStore(store_path)
    rid = st.begin_run(record())
    _created_at(store_path, rid, datetime.now(timezone.utc) - timedelta(days=3))
    assert RunStore(store_path).run(rid)["status"] == "running"
