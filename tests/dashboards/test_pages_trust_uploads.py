"""Trace files uploaded on the Trace page: each upload is the trace shown under its entry, whatever its name."""

from __future__ import annotations

import pandas as pd
import pytest

st = pytest.importorskip("streamlit")
pytest.importorskip("plotly")  # style's palette
from streamlit.testing.v1 import AppTest  # noqa: E402

from kprof import launch_table  # noqa: E402
from tests.dashboards.tables import html_tables  # noqa: E402


def launch_csv(kernel: str) -> bytes:
    """A launch table as `kprof parse --csv` writes it: two launches of one kernel."""
    df = pd.DataFrame(
        {
            "kernel": [kernel, kernel],
            "start_ns": [0, 2000],
            "duration_ns": [1000, 1000],
            "end_ns": [1000, 3000],
            "case": ["c", "c"],
            "source": ["nsys", "nsys"],
        }
    )
    return launch_table.validate(df).to_csv(index=False).encode()


def test_two_uploads_with_one_name_are_two_traces(tmp_path, monkeypatch):
    """Two traces uploaded under the same file name (`report.sqlite` from two machines, a trace before and after a
    change): each was written to one shared folder under its own name, so the second overwrote the first and both
    entries drew the second trace: an A/B of B against itself, which looks like 'no change'."""
    monkeypatch.setenv("KPROF_STORE", str(tmp_path / "none"))  # the demo store: runs with launch data
    monkeypatch.delenv("KPROF_TRACES", raising=False)
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_string("from kprof.dashboards.views import trace\ntrace.render()", default_timeout=120)
    at.run()
    at.toggle(key="trace_more").set_value(True).run()
    for kernel in ("kernel_before", "kernel_after"):
        at.file_uploader(key="trace_upload").set_value(("trace.csv", launch_csv(kernel), "text/csv")).run()
        assert not at.exception, [e.value for e in at.exception]
    files = [o for o in at.selectbox(key="trace_run").options if o.startswith("file: ")]
    assert len(files) == 2, files
    drawn = []
    for option in files:
        at.selectbox(key="trace_run").set_value(option).run()
        assert not at.exception, [e.value for e in at.exception]
        drawn.append(set(html_tables(at)[0]["kernel"]))
    assert drawn == [{"kernel_before"}, {"kernel_after"}], drawn
