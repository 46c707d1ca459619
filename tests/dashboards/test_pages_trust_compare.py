"""Compare with runs added: a version of another run is drawn beside this run's, but never ranked or measured
against this run's baseline when the two were not measured alike (another GPU, another timing mode)."""

from __future__ import annotations

import pytest

st = pytest.importorskip("streamlit")
pytest.importorskip("plotly")  # style's palette
from streamlit.testing.v1 import AppTest  # noqa: E402

from kprof.store import RunStore  # noqa: E402
from tests.dashboards.tables import html_tables, marks  # noqa: E402
from tests.toolkit.test_store import record  # noqa: E402

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def gpu_run(store: RunStore, when: str, device: str, times: dict[str, float], mode: str = "cold") -> str:
    """A finished rmsnorm GPU run at one shape, one case per version with the given time (µs)."""
    run = store.begin_run(record(mode="gpu", device={"name": device}))
    for i, (prov, t) in enumerate(times.items()):
        row = {"case": f"rmsnorm/{prov}/64x4096/bf16", "family": "rmsnorm", "provider": prov, "shape": "64x4096"}
        row |= {"dtype": "bf16", "status": "ok", "ok": True, "gpu_time_us": t, "gbps": 1e3 / t}
        row |= {"kind": "eager" if prov == "torch_eager" else "triton", "timing_mode": mode, "timer": "cupti"}
        row |= {"bytes": 1 << 20, "flops": 1 << 18}
        store.add_case(run, i, row, {"gpu": [t / 1e3] * 10})
    store.finish_run(run, "complete")
    store.connection.execute("UPDATE runs SET created_at = ? WHERE id = ?", (when, run))
    return run


def compare_with(store_path, other: str, monkeypatch) -> AppTest:
    monkeypatch.setenv("KPROF_STORE", str(store_path))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_string("from kprof.dashboards.views import compare\ncompare.render()", default_timeout=120)
    at.run()
    at.toggle(key="compare_add").set_value(True).run()
    (option,) = [o for o in at.multiselect(key="compare_more").options if o.endswith(other)]
    at.multiselect(key="compare_more").select(option).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    return " | ".join(str(e.value) for kind in ("info", "warning", "error", "caption") for e in getattr(at, kind))


@pytest.mark.parametrize(
    "other_device, other_mode, why",
    [(H100, "cold", "H100"), (H200, "warm", "warm")],
    ids=["another GPU", "another timing mode"],
)
def test_an_added_run_measured_otherwise_is_neither_starred_nor_given_a_speedup(
    other_device, other_mode, why, tmp_path, monkeypatch
):
    """This run (an H200, cold calls) against a run added from an H100, or timed warm: its triton_a was 4x
    faster there, and the page starred it as the best version at the shape and gave it a 6x speedup over this
    run's PyTorch, a ranking of two GPUs (or of a cold call against a warm one) that no kprof command makes."""
    path = tmp_path / "s" / "kprof.db"
    store = RunStore(path)
    other = gpu_run(store, "2026-01-01T10:00:00", other_device, {"triton_a": 5.0}, mode=other_mode)
    gpu_run(store, "2026-01-01T11:00:00", H200, {"torch_eager": 30.0, "triton_a": 20.0})
    store.close()
    at = compare_with(path, other, monkeypatch)
    table = html_tables(at)[0].set_index("provider")
    added = f"triton_a @ {other[-4:]}"
    assert table.loc[added, "speedup"] == "—", "speedup of another GPU's (or mode's) time over this run's baseline"
    assert table.loc[added, "best"] != "✓" and table.loc["triton_a", "best"] == "✓"
    assert table.loc["triton_a", "speedup"] == "1.50×"  # this run's own versions keep theirs
    (chart,) = [el.proto.body for el in at.get("html") if "kprof-compare" in el.proto.body]
    assert {e["data-provider"] for e in marks(chart, "class") if "kp-best" in e["class"]} == {"triton_a"}
    assert added in {e["data-provider"] for e in marks(chart, "data-provider")}  # still drawn, for the eye
    assert why in texts(at), texts(at)  # and the page says why it is not ranked


def test_an_added_run_measured_alike_is_ranked(tmp_path, monkeypatch):
    """Same GPU, same timing mode: the added run's versions keep their speedup and may be the best."""
    path = tmp_path / "s" / "kprof.db"
    store = RunStore(path)
    other = gpu_run(store, "2026-01-01T10:00:00", H200, {"triton_a": 5.0})
    gpu_run(store, "2026-01-01T11:00:00", H200, {"torch_eager": 30.0, "triton_a": 20.0})
    store.close()
    table = html_tables(compare_with(path, other, monkeypatch))[0].set_index("provider")
    added = f"triton_a @ {other[-4:]}"
    assert table.loc[added, "speedup"] == "6.00×" and table.loc[added, "best"] == "✓"
