"""``kprof dashboard``'s server as a child that lives and dies with it.

Streamlit runs in a child process. Killing ``kprof dashboard`` by its PID used to leave that child serving:
SIGTERM / SIGINT / SIGHUP are now forwarded to it and waited for, and on Linux the child also asks the kernel
for SIGTERM when its parent dies, so even ``kill -9`` of ``kprof dashboard`` leaves no server behind."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # no glibc: forwarding alone still covers every signal but SIGKILL
        pass


def run_forwarding(argv: Sequence[str], env: Mapping[str, str], grace_s: float = 10.0) -> int:
    """Run ``argv``; forward termination signals to it; return its exit status (0 when stopped by a signal we
    forwarded). A child that ignores the forwarded signal for ``grace_s`` is killed."""
    proc = subprocess.Popen(list(argv), env=dict(env), preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    stopping: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        stopping.append(signum)
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        while True:
            try:
                rc = proc.wait(timeout=grace_s if stopping else None)
                break
            except subprocess.TimeoutExpired:
                proc.kill()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return 0 if stopping else rc
