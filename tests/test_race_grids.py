"""``benchmarks/race_grids.py``: a ``--part`` given more than once is raced that many times and judged over every run
of it by one ``kprof grid``; a part given once gets no such table. The profiles and tables are stood in for: this
checks what the script asks ``kprof`` to do, in which order, with which runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def race_grids(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import race_grids

    return race_grids


def _fake_kprof(race_grids, monkeypatch, fail_profile: int | None = None):
    """Each call's command, in order; a ``--markdown`` table is written as ``kprof grid`` would; the n-th profile
    stores the run ``run-n``, but profile number ``fail_profile``, which exits 1 and stores nothing."""
    calls: list[list[str]] = []
    profiles = [0]

    def run(cmd, log, timeout):
        calls.append(cmd)
        if cmd[1] == "profile":
            profiles[0] += 1
            return (1 if profiles[0] == fail_profile else 0), 1.0
        Path(cmd[cmd.index("--markdown") + 1]).write_text("table\n")
        return 0, 0.1

    monkeypatch.setattr(race_grids, "_run", run)
    # the store holds a run for every profile that exited 0 so far
    monkeypatch.setattr(
        race_grids, "_run_ids", lambda store: {f"run-{n}" for n in range(1, profiles[0] + 1) if n != fail_profile}
    )
    return calls


def _main(race_grids, monkeypatch, tmp_path, parts: list[str]) -> int:
    argv = ["race_grids.py", "--out", str(tmp_path), "--budget", "100", "--min-left", "1"]
    monkeypatch.setattr(sys, "argv", argv + [a for p in parts for a in ("--part", p)])
    return race_grids.main()


def test_a_part_given_twice_is_judged_over_both_runs_and_a_part_given_once_is_not(race_grids, monkeypatch, tmp_path):
    calls = _fake_kprof(race_grids, monkeypatch)
    twice = "rmsnorm:shapes=2048x8192+512x65536:bf16"
    once = "rmsnorm:shapes=2048x8192:fp16"
    assert _main(race_grids, monkeypatch, tmp_path, [twice, once, twice]) == 0
    judged = [c for c in calls if c[:2] == ["kprof", "grid"] and "latest" not in c]
    store = str(tmp_path / "rmsnorm.db")
    # the runs of the repeated part, the first and third profiles; not the other part's second
    assert judged == [["kprof", "grid", "run-1", "run-3", "--store", store, "--markdown",
                       str(tmp_path / "judged-rmsnorm-points-bf16.md")]]  # fmt: skip
    assert (tmp_path / "judged-rmsnorm-points-bf16.md").exists()
    assert not list(tmp_path.glob("judged-rmsnorm-points-fp16*"))
    # each run still has its own table
    assert sorted(p.name for p in tmp_path.glob("grid-*.md")) == [
        "grid-rmsnorm-points-bf16-2.md",
        "grid-rmsnorm-points-bf16.md",
        "grid-rmsnorm-points-fp16.md",
    ]


def test_a_run_that_failed_is_left_out_and_one_run_left_is_not_judged(race_grids, monkeypatch, tmp_path):
    calls = _fake_kprof(race_grids, monkeypatch, fail_profile=2)
    part = "add_rmsnorm:shapes=512x65536:fp16"
    assert _main(race_grids, monkeypatch, tmp_path, [part, part]) == 0
    assert not [c for c in calls if c[:2] == ["kprof", "grid"] and "latest" not in c]
    calls = _fake_kprof(race_grids, monkeypatch, fail_profile=2)
    assert _main(race_grids, monkeypatch, tmp_path, [part, part, part]) == 0
    judged = [c for c in calls if c[:2] == ["kprof", "grid"] and "latest" not in c]
    assert [c[2:4] for c in judged] == [["run-1", "run-3"]]


def test_the_runs_a_profile_made_are_read_from_its_store(race_grids, tmp_path):
    """``_run_ids`` reads a real store: nothing before it exists, then every run begun in it."""
    from kprof.store import RunRecord, RunStore

    store = tmp_path / "rmsnorm.db"
    assert race_grids._run_ids(str(store)) == set()
    st = RunStore(store)
    record = RunRecord(family="rmsnorm", mode="interpreter", command="kprof profile rmsnorm", config={},
                       git_commit="0123456789abcdef", git_dirty=False, git_note=None, source_hashes={},
                       device={"name": "cpu"}, versions={}, profiler="none", profiler_version=None,
                       ceiling_gbps=None, ceiling=None)  # fmt: skip
    first = st.begin_run(record)
    assert race_grids._run_ids(str(store)) == {first}
    second = st.begin_run(record)
    assert race_grids._run_ids(str(store)) == {first, second} and first != second


def test_each_profile_leaves_the_budget_room_for_the_tables_still_to_write(race_grids, monkeypatch, tmp_path):
    """With 100 s, a 15 s tail and one repeated part, no profile may run past 100 - 15 * 2 s from the start: its
    own table and the repeated part's judged table are written within the budget, not after it."""
    limits: dict[str, list[float]] = {"profile": [], "grid": []}

    def run(cmd, log, timeout):
        limits["profile" if cmd[1] == "profile" else "grid"].append(timeout)
        if cmd[1] == "grid":
            Path(cmd[cmd.index("--markdown") + 1]).write_text("table\n")
        return 0, 0.0

    monkeypatch.setattr(race_grids, "_run", run)
    monkeypatch.setattr(race_grids, "_run_ids", lambda store: set())
    part = "rmsnorm:shapes=64x4096:bf16"
    argv = ["race_grids.py", "--out", str(tmp_path), "--budget", "100", "--min-left", "1", "--tail", "15"]
    monkeypatch.setattr(sys, "argv", argv + ["--part", part, "--part", part])
    assert race_grids.main() == 0
    assert len(limits["profile"]) == 2 and all(0 < t <= 70 for t in limits["profile"])
    # a table is given what is left of the budget, at least 10 s
    assert limits["grid"] and all(10 <= t <= 100 for t in limits["grid"])


def test_a_sigterm_stops_the_race_and_still_gzips_the_store_and_prints_what_finished(
    race_grids, monkeypatch, tmp_path, capsys
):
    """An outer ``timeout`` firing mid-part: the first part's table stays, the store comes back gzipped, the summary
    names the stop, and the parts after it are not started."""
    import gzip
    import os
    import signal

    profiles = [0]

    def run(cmd, log, timeout):
        if cmd[1] == "profile":
            profiles[0] += 1
            Path(cmd[cmd.index("--store") + 1]).write_bytes(b"store bytes")
            if profiles[0] == 2:
                os.kill(os.getpid(), signal.SIGTERM)  # the handler main() installed raises here
            return 0, 1.0
        Path(cmd[cmd.index("--markdown") + 1]).write_text("table\n")
        return 0, 0.1

    monkeypatch.setattr(race_grids, "_run", run)
    monkeypatch.setattr(race_grids, "_run_ids", lambda store: set())
    previous = signal.getsignal(signal.SIGTERM)
    try:
        parts = ["rmsnorm:shapes=64x4096:bf16", "rmsnorm:shapes=64x4096:fp16", "rmsnorm:shapes=8x4096:fp16"]
        assert _main(race_grids, monkeypatch, tmp_path, parts) == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert profiles[0] == 2
    assert [p.name for p in tmp_path.glob("grid-*.md")] == ["grid-rmsnorm-points-bf16.md"]
    assert not (tmp_path / "rmsnorm.db").exists()
    with gzip.open(tmp_path / "rmsnorm.db.gz", "rb") as fh:
        assert fh.read() == b"store bytes"
    out = capsys.readouterr().out
    assert "(SIGTERM)" in out and "rmsnorm-points-bf16 " in out


def test_a_command_past_its_limit_is_stopped_with_124_and_its_log_says_so(race_grids, tmp_path):
    """``_run`` on a real process: cut at its limit, exit status 124, the log ends with why."""
    import gzip

    log = tmp_path / "sleep.log.gz"
    rc, took = race_grids._run([sys.executable, "-c", "import time; print('began', flush=True); time.sleep(30)"],
                               log, 2.0)  # fmt: skip
    assert rc == 124 and 2.0 <= took < 20
    text = gzip.open(log, "rt").read()
    assert "stopped after 2 s, the budget's end" in text
