from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from datetime import datetime

import pandas as pd
import pytest

from kprof import launch_table
from kprof.errors import StoreError, UnknownRunError
from kprof.store import RunRecord, RunStore, default_store_path


def record(**kw) -> RunRecord:
    base = dict(
        family="rmsnorm",
        mode="interpreter",
        command="kprof profile rmsnorm",
        config={"a": 1},
        git_commit="abc",
        git_dirty=False,
        git_note=None,
        source_hashes={"k.py": "00ff"},
        device={"name": "cpu", "kind": "cpu"},
        versions={"torch": "x"},
        profiler="none",
        profiler_version=None,
        ceiling_gbps=None,
        ceiling=None,
    )
    base.update(kw)
    return RunRecord(**base)


def row(case: str, **kw) -> dict:
    r = {
        "case": case,
        "family": "rmsnorm",
        "provider": case.split("/")[1],
        "shape": "4x4",
        "dtype": "fp32",
        "status": "ok",
        "ok": True,
        "max_rel_err": 1e-7,
        "gpu_time_us": 3.5,
    }
    r.update(kw)
    return r


def test_round_trip(store_path):
    st = RunStore(store_path)
    rid = st.begin_run(record())
    st.add_case(rid, 0, row("rmsnorm/a/4x4/fp32"), {"gpu": [0.001, 0.002], "host": [5.0]})
    st.add_case(rid, 1, row("rmsnorm/b/4x4/fp32", status="fail", ok=False, note="wrong", gpu_time_us=None), {})
    st.finish_run(rid, "complete", report_md="# hi")
    run = st.run("latest")
    assert run["id"] == rid and run["status"] == "complete" and run["report_md"] == "# hi"
    assert run["config"] == {"a": 1} and run["source_hashes"] == {"k.py": "00ff"}
    m = st.metrics(rid)
    assert list(m["case"]) == ["rmsnorm/a/4x4/fp32", "rmsnorm/b/4x4/fp32"]
    assert m["ok"].tolist() == [True, False] and pd.isna(m.loc[1, "gpu_time_us"])
    s = st.samples(rid)
    assert sorted(s[s.kind == "gpu"]["value"]) == [0.001, 0.002]
    runs = st.runs()
    assert runs.loc[0, "cases"] == 2 and runs.loc[0, "failures"] == 1


def test_update_cases_and_launches(store_path):
    st = RunStore(store_path)
    rid = st.begin_run(record())
    st.add_case(rid, 0, row("rmsnorm/a/4x4/fp32"), {})
    st.update_cases(
        rid,
        pd.DataFrame(
            [
                {
                    "case": "rmsnorm/a/4x4/fp32",
                    "kernels_per_call": 2.0,
                    "main_kernel": "k",
                    "registers_per_thread": 38.0,
                    "config": "BLOCK_N=4 num_warps=1",
                }
            ]
        ),
    )
    assert st.metrics(rid).loc[0, "kernels_per_call"] == 2.0
    # a later update without a value (a profiler that reports no registers) keeps what the case has
    st.update_cases(
        rid,
        pd.DataFrame(
            [
                {
                    "case": "rmsnorm/a/4x4/fp32",
                    "kernels_per_call": 3.0,
                    "registers_per_thread": float("nan"),
                    "config": None,
                }
            ]
        ),
    )
    m = st.metrics(rid).iloc[0]
    assert m["kernels_per_call"] == 3.0 and m["registers_per_thread"] == 38.0 and m["config"] == "BLOCK_N=4 num_warps=1"
    lt = launch_table.validate(
        pd.DataFrame(
            {
                "kernel": ["k"],
                "start_ns": [1],
                "end_ns": [3],
                "duration_ns": [2],
                "source": ["torch"],
                "case": ["rmsnorm/a/4x4/fp32"],
            }
        )
    )
    st.add_launches(rid, lt)
    back = st.launches(rid)
    pd.testing.assert_frame_equal(back, lt)


def test_resolve(store_path):
    st = RunStore(store_path)
    with pytest.raises(UnknownRunError, match="no runs yet"):
        st.resolve("latest")
    a = st.begin_run(record())
    assert st.resolve(a[:12]) == a
    with pytest.raises(UnknownRunError, match="kprof runs"):
        st.resolve("nope")


def test_corrupt_database_is_a_clear_error(tmp_path):
    p = tmp_path / "kprof.db"
    p.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a readable kprof store"):
        RunStore(p)


def test_store_path_rules(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_STORE", str(tmp_path / "envstore"))
    assert default_store_path() == tmp_path / "envstore" / "kprof.db"
    assert default_store_path(tmp_path / "x.db") == tmp_path / "x.db"


def test_failed_transaction_leaves_nothing_half_written(store_path):
    st = RunStore(store_path)
    rid = st.begin_run(record())
    with pytest.raises(TypeError):
        # samples insert fails after the case row was written: the case row must roll back too
        st.add_case(rid, 0, row("rmsnorm/a/4x4/fp32"), {"gpu": [object()]})  # type: ignore[list-item]
    assert st.metrics(rid).empty


@pytest.mark.parametrize("sig", [signal.SIGKILL])
def test_run_killed_midway_is_incomplete_with_finished_cases(store_path, sig):
    """A process that dies mid-run leaves the cases it finished and the run reads as incomplete."""
    script = textwrap.dedent(f"""
        import os, signal
        from kprof.store import RunStore
        from tests.toolkit.test_store import record, row
        st = RunStore({str(store_path)!r})
        rid = st.begin_run(record())
        st.add_case(rid, 0, row("rmsnorm/a/4x4/fp32"), {{"gpu": [0.001]}})
        st.add_case(rid, 1, row("rmsnorm/b/4x4/fp32"), {{"gpu": [0.002]}})
        print(rid, flush=True)
        os.kill(os.getpid(), {int(sig)})
    """)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120)
    assert res.returncode == -sig, res.stderr
    rid = res.stdout.strip()
    st = RunStore(store_path)
    assert st.run(rid)["status"] == "incomplete"
    assert st.runs().set_index("id").loc[rid, "status"] == "incomplete"
    assert len(st.metrics(rid)) == 2


def test_runs_of_the_same_second_keep_their_order(store_path):
    st = RunStore(store_path)
    first, second = st.begin_run(record()), st.begin_run(record())  # --rev A --rev B begins both at once
    assert st.runs()["id"].tolist()[:2] == [second, first]
    assert st.resolve("latest") == second


def test_a_random_suffix_already_taken_is_drawn_again(store_path, monkeypatch):
    """Runs begun in one second share the time prefix; a repeated 4-hex suffix must give a new id, not an error."""
    st = RunStore(store_path)
    draws = iter(["beef", "beef", "beef", "cafe"])
    monkeypatch.setattr("kprof.store.secrets.token_hex", lambda n: next(draws))
    monkeypatch.setattr("kprof.store.datetime", _FrozenClock)
    first, second = st.begin_run(record()), st.begin_run(record())
    assert first.endswith("-beef") and second.endswith("-cafe")
    assert set(st.runs()["id"]) == {first, second}


class _FrozenClock(datetime):
    """datetime with ``now`` frozen (the store's other uses of the class, parsing its own stamps, as they are)."""

    @classmethod
    def now(cls, tz=None):
        return datetime(2026, 1, 2, 3, 4, 5, tzinfo=tz)


_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from test_store import record
    from kprof.store import RunStore

    st = RunStore(sys.argv[1])
    for _ in range(20):
        rid = st.begin_run(record(command="x" * 2000))
        st.finish_run(rid, "complete", report_md="y" * 4000)
    st.close()  # the last connection, as it sees it, checkpoints and removes the WAL
    """
)


@pytest.mark.parametrize("held_as", ["store", "watch"])
def test_a_store_open_in_this_process_reads_true_while_another_process_writes(tmp_path, held_as):
    """A long-lived process (a notebook, the dashboard, a script racing parts) keeps a store open while `kprof
    profile` processes write to it, and opens it again between them. Each new opening checks the file first; that
    check must not drop this process's SQLite locks (closing any descriptor of the file drops them all), or a writer
    takes itself for the last connection, resets the WAL, and this process then reads a stale index: the store read
    as "database disk image is malformed" after two or three writers. Held as a RunStore the garbage collector has
    not reached, or as the dashboard holds one (a read-only connection that watches for commits)."""
    path = tmp_path / "kprof.db"
    RunStore(path).close()
    store = RunStore(path) if held_as == "store" else None
    held = store or sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)

    def count() -> int:
        return len(store.runs()) if store else held.execute("SELECT COUNT(*) FROM runs").fetchone()[0]

    assert count() == 0
    seen = 0
    for _ in range(4):
        subprocess.run([sys.executable, "-c", _WRITER, str(path), os.path.dirname(__file__)], check=True)
        again = RunStore(path, create=False)
        runs = again.runs()
        again.close()
        assert len(runs) == seen + 20 and (runs["status"] == "complete").all()
        seen = len(runs)
        assert count() == seen  # the connection kept open reads them too
    held.close()
