"""Every dashboard page with Streamlit's AppTest: on the bundled demo store (real H100 runs) and on edge-case
stores (empty, corrupt, a run with failed cases, a run without launch data). Asserts what is shown."""

from __future__ import annotations

import gzip
import io
import json
import shutil

import pandas as pd
import pytest

st = pytest.importorskip("streamlit")
pytest.importorskip("plotly")  # style's palette
from streamlit.testing.v1 import AppTest  # noqa: E402

from kprof.store import RunStore  # noqa: E402
from tests.dashboards.tables import html_tables, marks, num  # noqa: E402
from tests.toolkit.test_store import record  # noqa: E402

PAGES = ("compare", "runs", "trace", "diff", "roofline", "sweep")


def page(name: str, store, monkeypatch) -> AppTest:
    monkeypatch.setenv("KPROF_STORE", str(store))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_string(f"from kprof.dashboards.views import {name}\n{name}.render()", default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    parts = [
        e.value
        for kind in ("title", "info", "warning", "error", "caption", "markdown", "subheader")
        for e in getattr(at, kind)
    ]
    return " | ".join(str(p) for p in parts)


@pytest.fixture
def demo_copy(tmp_path):
    from kprof.dashboards.data import DEMO

    out = tmp_path / "real" / "kprof.db"
    out.parent.mkdir()
    with gzip.open(DEMO, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


@pytest.mark.parametrize("name", PAGES)
def test_missing_store_opens_on_labelled_demo_data(name, tmp_path, monkeypatch):
    at = page(name, tmp_path / "none", monkeypatch)
    assert "Demo data" in texts(at) and "H100" in texts(at)


def test_compare_on_real_runs(demo_copy, monkeypatch):
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    served: dict[str, bytes] = {}  # what the server would hand out for each download button's address
    keep = MemoryMediaFileStorage.load_and_get_id

    def spy(self, data, mimetype, kind, filename=None):
        file_id = keep(self, data, mimetype, kind, filename)
        served[file_id] = data.encode() if isinstance(data, str) else bytes(data)
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", spy)
    at = page("compare", demo_copy, monkeypatch)
    assert "Demo data" not in texts(at)
    # neither plotly's, Vega-Lite's nor the grid's code is needed: the chart and the table are HTML
    assert not at.get("plotly_chart") and not at.get("vega_lite_chart") and not at.dataframe
    (chart,) = [el.proto.body for el in at.get("html") if "kprof-compare" in el.proto.body]
    titles = [e["_text"] for e in marks(chart, "class") if e["class"] == "kp-title"]
    assert titles == [
        "GPU time per call",
        "Bandwidth",
        "Speedup over best PyTorch per shape",
        "Theoretical occupancy of the main kernel",
    ]
    df = html_tables(at)[0]
    times = num(df["gpu_time_us"])
    # default baseline: the fastest PyTorch provider at each shape, so the best PyTorch version reads 1.00x
    pytorch = df[df["provider"].isin(["torch_eager", "torch_F", "torch_compile"])]
    fastest = pytorch.loc[times[pytorch.index].groupby(pytorch["shape"]).idxmin()]
    assert (fastest["speedup"] == "1.00×").all()
    run_id = at.selectbox(key="compare_run").value.split(" · ")[-1]
    assert list(dict.fromkeys(df["shape"])) == list(dict.fromkeys(RunStore(demo_copy).metrics(run_id)["shape"]))
    assert {"triton_tuned", "torch_eager", "torch_F"} <= set(df["provider"])
    best = df[df["best"] == "✓"]
    assert len(best) == df["shape"].nunique()  # one best provider per shape, shaded
    assert (times[best.index].groupby(best["shape"]).min() == times.groupby(df["shape"]).min()).all()
    assert {df.attrs["shade"][i] for i in best.index} == {"#d4f4dd"}
    button = at.get("download_button")[0].proto
    assert button.label == "Download the table (CSV)" and button.url  # the server hands the file out on a click
    shown = pd.read_csv(io.StringIO(served[button.url.rsplit("/", 1)[-1].split(".")[0]].decode()))
    assert len(shown) == len(df) and list(shown["provider"]) == list(df["provider"])  # the table shown, as CSV
    at.selectbox(key="compare_baseline").set_value("PyTorch eager").run()
    eager = html_tables(at)[0]
    assert (eager[eager["provider"] == "torch_eager"]["speedup"] == "1.00×").all()
    assert any("Speedup over PyTorch eager" in el.proto.body for el in at.get("html"))


def test_runs_trace_diff_roofline_on_real_runs(demo_copy, monkeypatch):
    runs = page("runs", demo_copy, monkeypatch)
    shown = runs.dataframe[0].value  # 100 runs to sort and scroll: the interactive grid
    assert len(shown) == len(RunStore(demo_copy).runs()) and set(shown["profiler"]) >= {"torch", "ncu", "nsys"}
    trace = page("trace", demo_copy, monkeypatch)
    assert "Per kernel" in texts(trace) and len(trace.get("vega_lite_chart")) == 1 and not trace.get("plotly_chart")
    assert num(html_tables(trace)[0]["launches"]).sum() > 0
    diff = page("diff", demo_copy, monkeypatch)
    metrics = {m.label: m.value for m in diff.metric}
    # the demo's two newest runs are main vs the planted-regression branch: bf16 slowdowns of triton_looped
    assert int(metrics["slower"]) >= 1
    slower = html_tables(diff)[0]
    assert set(slower[slower["verdict"] == "SLOWER"]["case"].str.split("/").str[1]) == {"triton_looped"}
    roof = page("roofline", demo_copy, monkeypatch)
    assert len(roof.get("vega_lite_chart")) == 1 and not roof.get("plotly_chart")
    assert "memory" in set(html_tables(roof)[0]["bound"])  # rmsnorm: memory-bound everywhere


def test_sweep_page_on_the_real_h100_sweeps(demo_copy, monkeypatch):
    import json

    at = page("sweep", demo_copy, monkeypatch)
    assert not at.get("vega_lite_chart") and not at.get("plotly_chart")  # the heatmap is HTML
    guide = html_tables(at)[0]
    # the newest sweep in the demo is rmsnorm one_row under ncu at 16384x4096: the guide's best is the
    # fastest correct configuration stored for that shape
    run_id = at.selectbox(key="sweep_run").value.split(" · ")[-1]
    m = RunStore(demo_copy).metrics(run_id)
    swept = m[m["params"].notna() & (m["status"] == "ok")].sort_values("gpu_time_us")
    best = json.loads(swept["params"].iloc[0])
    assert guide["best"].iloc[0] == " ".join(f"{k}={v}" for k, v in best.items())
    (heat,) = [el.proto.body for el in at.get("html") if "kprof-heatmap" in el.proto.body]
    cells = marks(heat, "data-value")
    # the heatmap's best cell is the guide's best configuration (same time), its hover has the resources
    top = min(cells, key=lambda c: float(c["data-value"]))
    assert top["data-config"] == guide["best"].iloc[0] and "regs" in top["title"]
    at.radio(key="sweep_metric").set_value("pct_roof").run()
    assert not at.exception and any("pct_roof over" in el.proto.body for el in at.get("html"))


def test_sweep_page_without_sweeps_says_how_to_make_one(tmp_path, monkeypatch):
    path = tmp_path / "s" / "kprof.db"
    RunStore(path).begin_run(record(mode="gpu"))
    assert "kprof sweep rmsnorm" in texts(page("sweep", path, monkeypatch))


def test_empty_and_corrupt_stores_are_explained(tmp_path, monkeypatch):
    empty = tmp_path / "empty" / "kprof.db"
    RunStore(empty).close()
    assert "has no runs yet" in texts(page("runs", empty, monkeypatch))
    corrupt = tmp_path / "bad" / "kprof.db"
    corrupt.parent.mkdir()
    corrupt.write_bytes(b"not sqlite at all" * 100)
    at = page("compare", corrupt, monkeypatch)
    assert "cannot be read" in texts(at) and "not a readable kprof store" in texts(at)


def test_failed_cases_are_loud_and_never_plotted(tmp_path, monkeypatch):
    path = tmp_path / "s" / "kprof.db"
    s = RunStore(path)
    run = s.begin_run(record(mode="gpu", profiler="none"))
    base = {"family": "rmsnorm", "shape": "64x4096", "dtype": "bf16", "bytes": 1 << 20, "flops": 1 << 18}
    s.add_case(
        run,
        0,
        {
            **base,
            "case": "rmsnorm/torch_eager/64x4096/bf16",
            "provider": "torch_eager",
            "status": "ok",
            "ok": True,
            "gpu_time_us": 30.0,
            "gbps": 30.0,
            "tflops": 0.01,
        },
        {"gpu": [0.03] * 10},
    )
    s.add_case(
        run,
        1,
        {
            **base,
            "case": "rmsnorm/triton_x/64x4096/bf16",
            "provider": "triton_x",
            "status": "fail",
            "ok": False,
            "gpu_time_us": 1.0,
            "note": "max rel err 0.3 > 8e-3",
        },
        {},
    )
    s.finish_run(run, "incomplete")
    at = page("compare", path, monkeypatch)
    assert "1 cases failed" in texts(at) and "triton_x" in texts(at)
    (chart,) = [el.proto.body for el in at.get("html") if "kprof-compare" in el.proto.body]
    drawn = {e["data-provider"] for e in marks(chart, "data-provider")}
    assert "triton_x" not in drawn and "torch_eager" in drawn  # a wrong result is never drawn as a time
    assert "No occupancy in this run" in texts(at)
    trace = page("trace", path, monkeypatch)
    assert "No run with a launch table" in texts(trace)
    assert "two GPU runs" in texts(page("diff", path, monkeypatch))


def test_a_new_run_shows_up_without_restarting(tmp_path, monkeypatch):
    path = tmp_path / "s" / "kprof.db"
    s = RunStore(path)
    s.begin_run(record(mode="gpu"))
    monkeypatch.setenv("KPROF_STORE", str(path))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_string("from kprof.dashboards.views import runs\nruns.render()", default_timeout=60)
    at.run()
    assert len(at.dataframe[0].value) == 1
    s.begin_run(record(mode="gpu"))
    at.run()
    assert len(at.dataframe[0].value) == 2


def test_compare_two_runs_side_by_side(demo_copy, monkeypatch):
    at = page("compare", demo_copy, monkeypatch)
    shown = at.selectbox(key="compare_run").value.split(" · ")[-1]
    assert at.selectbox(key="compare_run").value.startswith("main ")  # the demo opens on main, by name
    at.toggle(key="compare_add").set_value(True).run()
    offered = at.multiselect(key="compare_more").options
    assert not any("sweep" in o for o in offered) and len(offered) < 6  # sweeps have their own page
    other = next(o for o in offered if "planted-regression" in o)
    other_id = other.split(" · ")[-1]
    at.multiselect(key="compare_more").select(other).run()
    assert not at.exception
    providers = set(html_tables(at)[0]["provider"])
    assert "triton_looped" in providers and f"triton_looped @ {other_id[-4:]}" in providers
    (chart,) = [el.proto.body for el in at.get("html") if "kprof-compare" in el.proto.body]
    added = [e for e in marks(chart, "data-provider") if e["data-provider"] == f"triton_looped @ {other_id[-4:]}"]
    # drawn in every panel, as diamonds on dashed lines
    assert {e.get("data-panel") for e in added} >= {"gpu_time_us", "gbps", "speedup"} and shown != other_id
    assert all("dashed" in e["style"] for e in added if "kp-line" in e.get("class", ""))
    assert all("rotate(45deg)" in e["style"] for e in added if "kp-pt" in e.get("class", ""))


def test_an_added_run_whose_id_prefixes_other_runs(tmp_path, monkeypatch):
    """Run ids where one is the start of others (a run and its copies in a 100-run store): Compare adds the run
    picked, not an error about an ambiguous prefix."""
    from tests.dashboards.stores import hundred_runs

    at = page("compare", hundred_runs(tmp_path / "many" / "kprof.db", 12), monkeypatch)
    at.toggle(key="compare_add").set_value(True).run()
    offered = at.multiselect(key="compare_more").options
    prefix = next(
        o for o in offered if any(p != o and p.split(" · ")[-1].startswith(o.split(" · ")[-1]) for p in offered)
    )
    at.multiselect(key="compare_more").select(prefix).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(p.endswith(" @ " + prefix.split(" · ")[-1][-4:]) for p in html_tables(at)[0]["provider"])


def test_a_trace_too_large_to_draw_is_folded_and_the_window_zooms_back_to_launches(data_file, tmp_path, monkeypatch):
    """A real nsys trace repeated end to end (each copy shifted past the last) until it holds more launches
    than the timeline draws one by one: the page folds it and says so; a narrow time window draws launches."""

    from kprof.dashboards.timeline import LIMIT as TRACE_LIMIT
    from kprof.profilers import nsys

    one = nsys.parse(data_file("nsys_rmsnorm.sqlite"))
    t0 = one[["start_ns", "api_start_ns"]].min().min()
    span = one[["end_ns", "api_end_ns"]].max().max() - t0 + 1000
    copies = TRACE_LIMIT // len(one) + 2
    big = pd.concat(
        [
            one.assign(**{c: one[c] + k * span for c in ("start_ns", "end_ns", "api_start_ns", "api_end_ns")})
            for k in range(copies)
        ],
        ignore_index=True,
    )
    path = tmp_path / "s" / "kprof.db"
    s = RunStore(path)
    run = s.begin_run(record(mode="gpu", profiler="nsys"))
    s.add_launches(run, big)
    s.finish_run(run, "complete")
    at = page("trace", path, monkeypatch)
    at.multiselect(key="trace_cases").set_value([]).run()  # every case: the whole trace
    assert not at.exception
    assert f"{len(big)} launches, more than a browser draws one by one" in texts(at)
    bars = json.loads(at.get("vega_lite_chart")[0].proto.spec)["vconcat"][0]["layer"][0]["data"]["values"]
    kernels = int((big["kind"].fillna("kernel") != "sync").sum())
    assert sum(b["events"] for b in bars if b["key"] != "launch / sync calls") == kernels  # folded, none lost
    assert num(html_tables(at)[0]["launches"]).sum() == len(big)  # the per-kernel table counts every row
    assert "The time window is under" in texts(at)  # the folded note says where the way back to launches is
    at.toggle(key="trace_more").set_value(True).run()
    lo, hi = at.slider[0].value
    at.slider[0].set_value((lo, lo + (hi - lo) / copies)).run()  # about one copy of the trace
    assert not at.exception and "more than a browser draws" not in texts(at)
    bars = json.loads(at.get("vega_lite_chart")[0].proto.spec)["vconcat"][0]["layer"][0]["data"]["values"]
    assert "events" not in bars[0] and "_rmsnorm_looped_kernel" in {b["name"] for b in bars}  # single launches
    assert 0 < num(html_tables(at)[0]["launches"]).sum() < len(big)


def test_diff_threshold_changes_match_kprof_diff(demo_copy, monkeypatch):
    """The page re-decides verdicts at a new threshold from the pair's intervals; that must be what
    `kprof diff --threshold` says, case by case."""
    from kprof.diff import DiffRule, diff_runs

    at = page("diff", demo_copy, monkeypatch)
    a = at.selectbox(key="diff_a").value.split(" · ")[-1]
    b = at.selectbox(key="diff_b").value.split(" · ")[-1]
    assert at.selectbox(key="diff_a").value.startswith("main ")  # baseline revision before the other
    at.slider(key="diff_threshold").set_value(1).run()
    assert not at.exception
    shown = html_tables(at)[0].set_index("case")["verdict"]
    full = diff_runs(RunStore(demo_copy), a, b, DiffRule(threshold=0.01)).cases.set_index("case")["verdict"]
    assert shown.sort_index().equals(full.sort_index())
    assert int({m.label: m.value for m in at.metric}["slower"]) >= 1


def test_correctness_page_on_a_cpu_store(tmp_path, monkeypatch):
    from kprof.dashboards.probe import cpu_store
    from kprof.dashboards.views import correctness

    store = cpu_store(tmp_path / "cpu" / "kprof.db", seed=7)
    at = page("correctness", store, monkeypatch)
    m = RunStore(store).metrics("latest")
    counts = {x.label: int(x.value) for x in at.metric}
    assert counts == {s: int((m["status"] == s).sum()) for s in ("ok", "fail", "error", "skipped")}
    table = html_tables(at)[0]
    table["err_vs_tol"] = num(table["err_vs_tol"])
    failed = table[table["status"] == "fail"]
    assert len(failed) == 1 and (failed["err_vs_tol"] > 1).all()  # the failure is above its tolerance
    ok = table[table["status"] == "ok"]
    assert (ok["err_vs_tol"] < 1).all() and (ok["tolerance"] != "—").all()
    assert set(failed.index) == {i for i, c in enumerate(table.attrs["shade"]) if c}  # the failure is shaded
    assert "1 cases failed" in texts(at)
    (strip,) = [el.proto.body for el in at.get("html") if "kprof-strip" in el.proto.body]
    drawn, (line,) = marks(strip, "data-err-vs-tol"), marks(strip, "data-tolerance")
    # every case with an error, each at its error / tolerance, coloured by its status, left of the line if it passed
    assert sorted(round(float(c["data-err-vs-tol"]), 3) for c in drawn) == pytest.approx(
        sorted(table["err_vs_tol"].dropna())
    )
    assert {c["data-status"] for c in drawn} == {"ok", "fail"}
    for c in drawn:
        left = float(c["data-x"]) < float(line["data-x"])
        assert left == (float(c["data-err-vs-tol"]) < 1) == (c["data-status"] == "ok")
        assert f"background:{correctness.STATUS_COLOURS[c['data-status']]}" in c["style"]
        assert "error / tolerance" in c["title"]  # the hover details
    assert not at.get("vega_lite_chart")  # no chart code for a fresh browser to fetch
    assert "No GPU run" in texts(page("compare", store, monkeypatch))  # and says where to look


def test_a_trace_file_opens_directly_and_exports_for_perfetto(data_file, tmp_path, monkeypatch):
    """`kprof dashboard TRACE` passes the file to the Trace page, which opens on it; the export holds the
    events drawn."""
    import json

    trace = data_file("nsys_rmsnorm.sqlite")
    monkeypatch.setenv("KPROF_TRACES", str(trace))
    at = page("trace", tmp_path / "none", monkeypatch)
    assert at.selectbox(key="trace_run").value == f"file: {trace}"
    assert len(at.get("vega_lite_chart")) == 1 and num(html_tables(at)[0]["launches"]).sum() > 0
    # the export, the time window and the upload box wait behind one switch (their code is a fresh browser's
    # slowest part of this page); switched on, all three are there
    assert not at.get("download_button") and not at.get("file_uploader") and not at.slider
    at.toggle(key="trace_more").set_value(True).run()
    assert "ui.perfetto.dev" in at.get("download_button")[0].proto.label
    assert len(at.get("file_uploader")) == 1 and len(at.slider) == 1
    from kprof.dashboards.views.trace import perfetto_json
    from kprof.profilers import nsys

    events = json.loads(perfetto_json(nsys.parse(trace), "t"))["traceEvents"]
    assert sum(e.get("ph") == "X" for e in events) >= len(nsys.parse(trace)) // 2  # the launches, as slices


def test_a_run_on_two_gpu_kinds_is_compared_within_one_kind(demo_copy, monkeypatch):
    """A fan-out run whose cases ran on an H100 and an H200: the GPU pages offer the kinds and show the cases
    of one kind only, so no version is ranked against a case measured on another GPU."""
    store = RunStore(demo_copy)
    kind_of = {}
    for run_id in store.runs()["id"]:
        m = store.metrics(run_id)
        shapes = sorted(m["shape"].unique())
        for case, shape in zip(m["case"], m["shape"]):
            kind = "NVIDIA H100 80GB HBM3" if shapes.index(shape) % 2 == 0 else "NVIDIA H200"
            kind_of[case] = kind
            store.add_case_device(run_id, case, {"worker": kind[-4:], "gpu_name": kind, "gpu_index": 0, "attempt": 1})
    store.close()
    at = page("compare", demo_copy, monkeypatch)
    radio = next(r for r in at.radio if r.label.startswith("GPU kind"))
    assert list(radio.options) == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    for kind in radio.options:
        radio.set_value(kind).run()
        assert not at.exception
        shapes = set(html_tables(at)[0]["shape"])
        expected = {c.split("/")[2] for c, k in kind_of.items() if k == kind}
        assert shapes and shapes <= expected, (kind, shapes - expected)


def test_diff_page_says_an_unfinished_run_b_never_measured_cases_of_a(tmp_path, monkeypatch):
    """The page says what `kprof diff --fail-on-regression` fails on: run B stopped before it measured cases A did."""
    import time

    import numpy as np

    store = RunStore(tmp_path / "s.db")
    rng = np.random.default_rng()
    provs = [f"triton_v{i}" for i in range(int(rng.integers(2, 5)))]
    for keep, finish in ((len(provs), True), (1, False)):
        run = store.begin_run(record(mode="gpu", config={"profile_repeats": 5, "settings": {"rep_ms": 100}}))
        for i, prov in enumerate(provs[:keep]):
            row = {"case": f"rmsnorm/{prov}/64x4096/bf16", "family": "rmsnorm", "provider": prov, "shape": "64x4096"}
            row |= {"dtype": "bf16", "status": "ok", "ok": True}
            store.add_case(run, i, row, {"gpu": list(rng.normal(20e-3, 2e-4, 50))})
        if finish:
            store.finish_run(run, "complete")
        time.sleep(1.1)  # B the newer run: the page's default pair is (second newest, newest)
    store.close()
    at = page("diff", tmp_path / "s.db", monkeypatch)
    errors = " | ".join(str(e.value) for e in at.error)
    assert f"never measured {len(provs) - 1} case(s) of A" in errors and run in errors


def test_diff_page_shows_a_case_wrong_in_b_that_a_never_had_wrong(tmp_path, monkeypatch):
    """A version added wrong in B: no case of both runs says so, and `kprof diff --fail-on-regression` fails on it,
    so the page shows it as an error as well."""
    import time

    import numpy as np

    store = RunStore(tmp_path / "s.db")
    rng = np.random.default_rng()
    new = f"triton_v{int(rng.integers(2, 9))}"
    for provs in (["triton_v1"], ["triton_v1", new]):
        run = store.begin_run(record(mode="gpu", config={"profile_repeats": 5, "settings": {"rep_ms": 100}}))
        for i, prov in enumerate(provs):
            row = {"case": f"rmsnorm/{prov}/64x4096/bf16", "family": "rmsnorm", "provider": prov, "shape": "64x4096"}
            wrong = prov == new
            row |= {"dtype": "bf16", "status": "fail" if wrong else "ok", "ok": not wrong}
            store.add_case(run, i, row, {} if wrong else {"gpu": list(rng.normal(20e-3, 2e-4, 50))})
        store.finish_run(run, "complete")
        time.sleep(1.1)  # B the newer run: the page's default pair is (second newest, newest)
    store.close()
    at = page("diff", tmp_path / "s.db", monkeypatch)
    errors = " | ".join(str(e.value) for e in at.error)
    assert f"rmsnorm/{new}/64x4096/bf16: wrong in B, never wrong in A" in errors, errors
