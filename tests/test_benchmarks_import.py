"""The GPU benchmark scripts at least import (their kernels compile in the interpreter on the CPU)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[1] / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.stem for p in BENCH.glob("*.py")))
def test_benchmark_imports(script, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    mod = importlib.import_module(script)
    if script != "bench_common":
        assert callable(getattr(mod, "main"))
    sys.modules.pop(script, None)
