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


def test_the_warmed_heap_is_frozen_and_later_garbage_still_collected():
    import gc
    import weakref

    try:
        tracked = len(gc.get_objects())
        serve.freeze_heap()
        assert gc.get_freeze_count() >= tracked * 0.9  # what existed is out of the collector's sight

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle made after the freeze: only the collector can free it
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()


def test_kprof_dashboard_serves_without_a_source_watcher(monkeypatch):
    from kprof import cli
    from kprof.dashboards import process

    seen: list[list[str]] = []
    monkeypatch.setattr(process, "run_forwarding", lambda argv, env: seen.append(list(argv)) or 0)
    from kprof.dashboards.probe import free_port

    monkeypatch.setattr("sys.argv", ["kprof", "dashboard", "--port", str(free_port())])
    cli.main()  # returns once the (stand-in) server has stopped
    argv = seen[0]
    assert argv[argv.index("--server.fileWatcherType") + 1] == "none"
    assert argv[1:3] == ["-m", "kprof.dashboards.serve"]  # the warm-up and the freeze run before Streamlit
