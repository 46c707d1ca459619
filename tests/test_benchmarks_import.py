"""The GPU benchmark scripts at least import (their kernels compile in the interpreter on the CPU).

A script that needs an optional package that is not installed (Playwright for the dashboard's browser
timing) is skipped with the package's name, not failed: the suite must pass wherever the README's test
command ran, and that command only installs what it can.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "benchmarks"
OPTIONAL = {"playwright"}  # top-level packages a benchmark may need that kprof does not depend on


@pytest.mark.parametrize("script", sorted(p.stem for p in BENCH.glob("*.py")))
def test_benchmark_imports(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    try:
        mod = importlib.import_module(script)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in OPTIONAL:
            raise
        pytest.skip(f"benchmarks/{script}.py needs {exc.name}, which is not installed (pip install {exc.name})")
    finally:
        sys.modules.pop(script, None)
    if script != "bench_common":
        assert callable(mod.main)
