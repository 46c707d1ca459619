"""The Diff page: the pair it opens on, and what it says about that pair, as `kprof diff` would."""

from __future__ import annotations

import numpy as np
import pytest

st = pytest.importorskip("streamlit")
pytest.importorskip("plotly")  # style's palette
from streamlit.testing.v1 import AppTest  # noqa: E402

from kprof.store import RunStore  # noqa: E402
from tests.dashboards import test_pages as pages  # noqa: E402
from tests.toolkit.test_store import record  # noqa: E402


def page(store, monkeypatch) -> AppTest:
    return pages.page("diff", store, monkeypatch)


def texts(at: AppTest) -> str:
    return " | ".join(str(e.value) for kind in ("info", "warning", "error", "caption") for e in getattr(at, kind))


def gpu_run(store: RunStore, family: str, when: str, device: str = "NVIDIA H100 80GB HBM3", rng=None) -> str:
    """A finished GPU run of two cases of ``family`` started at ``when``."""
    rng = rng or np.random.default_rng(0)
    run = store.begin_run(
        record(
            mode="gpu",
            family=family,
            device={"name": device},
            config={"profile_repeats": 5, "settings": {"rep_ms": 100}},
        )
    )
    for i, prov in enumerate(("triton_a", "torch_eager")):
        row = {"case": f"{family}/{prov}/64x4096/bf16", "family": family, "provider": prov, "shape": "64x4096"}
        row |= {"dtype": "bf16", "status": "ok", "ok": True, "gpu_time_us": 20.0}
        store.add_case(run, i, row, {"gpu": list(rng.normal(20e-3, 2e-4, 50))})
    store.finish_run(run, "complete")
    store.connection.execute("UPDATE runs SET created_at = ? WHERE id = ?", (when, run))
    return run


def picked(at: AppTest, key: str) -> str:
    return at.selectbox(key=key).value.split(" · ")[-1]


def test_the_default_pair_is_two_runs_of_one_family(tmp_path, monkeypatch):
    """Two rmsnorm runs, then a swiglu run (the newest): the page opened on the newest two, a pair of two families
    with no case in common, and said only that; the pair to open on is the two rmsnorm runs."""
    store = RunStore(tmp_path / "s" / "kprof.db")
    a = gpu_run(store, "rmsnorm", "2026-01-01T10:00:00")
    b = gpu_run(store, "rmsnorm", "2026-01-01T11:00:00")
    gpu_run(store, "swiglu", "2026-01-01T12:00:00")
    store.close()
    at = page(tmp_path / "s" / "kprof.db", monkeypatch)
    assert (picked(at, "diff_a"), picked(at, "diff_b")) == (a, b)
    assert "no case in common" not in texts(at)
    assert sum(int(m.value) for m in at.metric) == 2  # both cases compared


def test_the_default_pair_prefers_one_device(tmp_path, monkeypatch):
    """The newest run's family ran on an H100, then on an H200, then on the H100 again: the default B is the
    newest run and A the newest earlier run of its family on its GPU, not the H200 run in between."""
    store = RunStore(tmp_path / "s" / "kprof.db")
    a = gpu_run(store, "rmsnorm", "2026-01-01T10:00:00")
    gpu_run(store, "rmsnorm", "2026-01-01T11:00:00", device="NVIDIA H200")
    b = gpu_run(store, "rmsnorm", "2026-01-01T12:00:00")
    store.close()
    at = page(tmp_path / "s" / "kprof.db", monkeypatch)
    assert (picked(at, "diff_a"), picked(at, "diff_b")) == (a, b)


def test_the_newest_rev_pair_still_opens_first(tmp_path, monkeypatch):
    """`kprof profile --rev main --rev branch` makes two runs at one start time: the page opens on them, main as A."""
    path = tmp_path / "s" / "kprof.db"
    store = RunStore(path)
    gpu_run(store, "rmsnorm", "2026-01-01T10:00:00")
    main = gpu_run(store, "rmsnorm", "2026-01-01T11:00:00")
    branch = gpu_run(store, "rmsnorm", "2026-01-01T11:00:00")
    command = "kprof profile rmsnorm --rev main --rev branch"
    for run, rev in ((main, "main"), (branch, "branch")):
        store.connection.execute(
            "UPDATE runs SET command = ?, git_note = ? WHERE id = ?", (command, f"--rev {rev}", run)
        )
    store.close()
    at = page(path, monkeypatch)
    assert (picked(at, "diff_a"), picked(at, "diff_b")) == (main, branch)
