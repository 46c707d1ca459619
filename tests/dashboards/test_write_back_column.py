"""The Compare page's table shows the write-back a cold call left in L2 (kprof.timing.measure_left_behind) beside
GB/s where a run measured it, and no such column for runs from before it was measured."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")  # style's palette
from kprof.dashboards.style import COLUMNS  # noqa: E402
from kprof.dashboards.views.compare import summary_table  # noqa: E402


def _metrics(left: list[float] | None) -> pd.DataFrame:
    rng = np.random.default_rng()
    t = rng.uniform(10, 40, size=3)
    m = pd.DataFrame(
        {
            "shape": "2048x8192",
            "dtype": "bf16",
            "provider": ["triton_tuned", "torch_compile", "torch_eager"],
            "kind": ["triton", "compile", "eager"],
            "status": "ok",
            "ok": True,
            "gpu_time_us": t,
            "gbps": 67e3 / t,
            "pct_peak_bw": 100 * 67e3 / t / 4300,
        }
    )
    return m if left is None else m.assign(cold_writeback_us=left)


def test_the_write_back_column_shows_where_it_was_measured():
    left = [8.1, 8.3, 6.9]
    table = summary_table(_metrics(left), "bf16")
    assert "cold_writeback_us" in table and sorted(table["cold_writeback_us"]) == sorted(left)
    assert list(table.columns).index("cold_writeback_us") == list(table.columns).index("pct_peak_bw") + 1
    assert COLUMNS["cold_writeback_us"][0] == "write-back left in L2 (µs)"
    assert "cold_writeback_us" not in summary_table(_metrics(None), "bf16")
    assert "cold_writeback_us" not in summary_table(_metrics([np.nan] * 3), "bf16")  # not measured: no column
