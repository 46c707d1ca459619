"""Tool discovery and subprocess runs, without any profiler installed."""

from __future__ import annotations

import os
import stat
import sys
import time

import pytest

from kprof.tools import TOOLS, ToolNotFoundError, candidates, find_tool, run_tool, tool_version


def fake_exe(path, body="#!/bin/sh\necho 'Fake Tool version 2025.3.1'\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_missing_tool_lists_every_place_and_the_fix():
    try:
        found = find_tool("nsys", env={"PATH": "/nonexistent"})
    except ToolNotFoundError as exc:
        msg = str(exc)
    else:  # a GPU machine with Nsight installed in one of the usual places
        pytest.skip(f"nsys is installed at {found.path} here, so its absence cannot be provoked")
    assert "$KPROF_NSYS" in msg and "PATH" in msg
    assert "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys" in msg  # the copy bundled with ncu
    assert "/usr/local/cuda/bin/nsys" in msg and "--tool-path" in msg


def test_explicit_path_then_env_then_path(tmp_path):
    exe = fake_exe(tmp_path / "bin" / "ncu")
    assert find_tool("ncu", str(exe), env={}).how == "explicit path"
    assert find_tool("ncu", env={"KPROF_NCU": str(exe), "PATH": ""}).how == "$KPROF_NCU"
    loc = find_tool("ncu", env={"PATH": str(exe.parent)})
    assert loc.how == "PATH" and loc.path == str(exe)
    with pytest.raises(ToolNotFoundError, match="not an executable"):
        find_tool("ncu", str(tmp_path / "nope"))
    with pytest.raises(ToolNotFoundError, match="KPROF_NCU"):
        find_tool("ncu", env={"KPROF_NCU": str(tmp_path / "nope")})


def test_install_places_newest_first(tmp_path, monkeypatch):
    for v in ("2024.1.0", "2025.3.1", "2023.4.2"):
        fake_exe(tmp_path / "nsight-compute" / v / "host" / "target-linux-x64" / "nsys")
    spec = TOOLS["nsys"]
    monkeypatch.setitem(
        TOOLS,
        "nsys",
        type(spec)(
            spec.name, spec.executable, spec.env_var, (str(tmp_path / "nsight-compute/*/host/target-linux-x64/nsys"),)
        ),
    )
    assert "2025.3.1" in candidates(TOOLS["nsys"])[0]
    loc = find_tool("nsys", env={"PATH": ""})
    assert loc.how == "install place" and "2025.3.1" in loc.path
    assert tool_version(loc) == "Fake Tool version 2025.3.1"


def test_version_of_a_broken_tool_is_reported_not_ignored(tmp_path):
    exe = fake_exe(tmp_path / "nsys", "#!/bin/sh\necho boom >&2\nexit 3\n")
    v = tool_version(find_tool("nsys", str(exe)))
    assert v.startswith("unknown") and "exited 3" in v and "boom" in v


def test_failure_keeps_exit_code_and_stderr(tmp_path):
    r = run_tool([sys.executable, "-c", "import sys; print('partial'); sys.exit('it broke')"], timeout=60, cwd=tmp_path)
    assert not r.ok and r.returncode == 1 and "it broke" in r.stderr_tail and "partial" in r.stdout_tail
    assert "exited with status 1" in r.describe() and "it broke" in r.describe()
    assert (tmp_path / "tool.stderr.txt").exists()


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    r = run_tool([sys.executable, "-c", script], timeout=2, cwd=tmp_path)
    assert r.timed_out and r.returncode is None and time.monotonic() - t0 < 30
    assert "timed out" in r.describe()
    grandchild = int(pidfile.read_text())
    time.sleep(0.5)
    assert not _running(grandchild)  # the profiled program went with its profiler


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan killed in a container may wait for a reaper that never comes)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_argv_only():
    with pytest.raises(TypeError, match="argv list"):
        run_tool("echo hi", timeout=1, cwd=None)  # type: ignore[arg-type]
