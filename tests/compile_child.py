"""Kernels compiled for the GPU in a child process, as ``kprof profile`` compiles them offline: Triton's compiler and
ptxas run on the CPU there with the interpreter off, where this test process runs kernels under it."""

from __future__ import annotations

import json
import subprocess
import sys

from kprof.specialization import compiler_env


def child_json(args: list[str], stdin: str | None = None, timeout: float = 600.0) -> object:
    """``python ARGS`` (a ``-c`` probe or ``-m kprof.specialization``) in a child that compiles for the GPU; the
    JSON its last line of output prints. A child that fails fails the test with the end of what it wrote."""
    res = subprocess.run(
        [sys.executable, *args], input=stdin, capture_output=True, text=True, env=compiler_env(), timeout=timeout
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])
