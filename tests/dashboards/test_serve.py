"""kprof dashboard's server process warms Streamlit's data cache before the first visitor."""

from __future__ import annotations

import pytest

st = pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from kprof.dashboards import data, serve  # noqa: E402
from kprof.store import RunStore  # noqa: E402


def test_warm_reads_the_default_run_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_STORE", str(tmp_path / "missing" / "kprof.db"))  # the demo store
    st.cache_data.clear()
    st.cache_resource.clear()
    serve.warm()
    runs = data.all_runs()
    newest_gpu = runs[(runs["mode"] == "gpu") & (runs["swept"] == 0)].iloc[0]["id"]

    def no_reads(*a, **k):
        raise AssertionError("the store was read again: warm() did not fill the cache")

    monkeypatch.setattr(RunStore, "__init__", no_reads)
    assert not data.get_metrics(newest_gpu).empty and data.get_run(newest_gpu)["id"] == newest_gpu


def test_warm_leaves_a_corrupt_store_to_the_page(tmp_path, monkeypatch):
    bad = tmp_path / "kprof.db"
    bad.write_bytes(b"not sqlite" * 100)
    monkeypatch.setenv("KPROF_STORE", str(bad))
    st.cache_data.clear()
    st.cache_resource.clear()
    serve.warm()  # no exception: Compare shows "cannot be read" to whoever opens it
    with pytest.raises(data.StoreProblem):
        data.source()
