"""The tree passes ``ruff check`` with the rules in ``pyproject.toml`` (skipped where ruff is not installed)."""

from __future__ import annotations

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


def test_ruff_check_passes():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install 'kprof[test]' brings it)")
    done = subprocess.run([*ruff, "check", "--output-format", "concise", "."], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"ruff check found problems (run `ruff check .` to see them):\n{done.stdout[-4000:]}"
