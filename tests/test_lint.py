"""The tree passes ``ruff check`` with the rules in ``pyproject.toml`` and is formatted as ``ruff format``
leaves it (skipped where ruff is not installed; the format check also where another ruff version than the
one pinned in ``pyproject.toml`` is, since a formatter's style moves between its releases)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ruff() -> list[str] | None:
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if Path(exe).is_file():
        return [exe]
    try:
        import ruff  # noqa: F401 - the package ships the binary; `python -m ruff` runs it
    except ImportError:
        return None
    return [sys.executable, "-m", "ruff"]


def _pinned() -> str:
    m = re.search(r'"ruff==([0-9.]+)"', (REPO / "pyproject.toml").read_text())
    assert m, "pyproject.toml's test extra pins ruff (ruff==X.Y.Z)"
    return m.group(1)


def _run(ruff: list[str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*ruff, *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_ruff_check_passes():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install 'kprof[test]' brings it)")
    done = _run(ruff, "check", "--output-format", "concise", ".")
    assert done.returncode == 0, f"ruff check found problems (run `ruff check .` to see them):\n{done.stdout[-4000:]}"


def test_tree_is_ruff_formatted():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install 'kprof[test]' brings it)")
    version = _run(ruff, "--version").stdout.split()[-1]
    if version != _pinned():
        pytest.skip(f"ruff {version} here; the tree is formatted with ruff {_pinned()} (pyproject.toml's pin)")
    done = _run(ruff, "format", "--check", ".")
    assert done.returncode == 0, f"files not formatted (run `ruff format .`):\n{done.stdout[-4000:]}"
