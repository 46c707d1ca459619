"""`kprof dashboard` and its Streamlit server live and die together: a signal to kprof stops the server, and
even SIGKILL of kprof leaves no server behind (Linux asks the kernel to signal the child)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("streamlit")
from kprof.dashboards.probe import free_port  # noqa: E402


def _start(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kprof.cli",
            "dashboard",
            "--port",
            str(port),
            "--store",
            str(tmp_path / "none" / "kprof.db"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("kprof dashboard did not come up")
    return proc, _children(proc.pid)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _gone(pid: int, within_s: float = 30) -> bool:
    deadline = time.time() + within_s
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for our purpose
                if f.read().split(") ")[1].startswith("Z"):
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and ps --ppid")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_kprof_dashboard_stops_its_server(sig, tmp_path):
    proc, servers = _start(tmp_path)
    assert servers, "kprof dashboard runs its server as a child process"
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    left = [p for p in servers if not _gone(p)]
    for p in left:  # do not leave it running for the next test, whatever the outcome
        os.kill(p, signal.SIGKILL)
    assert not left, f"server process(es) {left} outlived `kprof dashboard` after {sig.name}"
    if sig == signal.SIGTERM:
        assert proc.returncode == 0  # stopped on request: not an error
