"""The dashboard in a real browser (Debian's Chromium driven by Playwright, through
:mod:`kprof.dashboards.probe`): `kprof dashboard` started as a user would, on the bundled demo, on a CPU-only
store and on a store of 100 runs. Every page is opened from a fresh browser and waited for to its last
element, then reached by the sidebar, and its main control changed (Compare's baseline, Diff's threshold,
a click on a Trace launch, Correctness's status filter); no page may show an exception.

Timing targets (fresh headless Chromium, 100-run store): first visit <= 2.5 s to the last element, a page
switch or control change <= 1.0 s. CI has 2 shared cores where the targets were set on a quiet machine, so
the asserts allow MARGIN x the target; `benchmarks/dashboard_pages.py` measures them without margin.

Skipped, with the reason, where Chromium or Playwright is missing. Screenshots of the demo go to
$KPROF_SCREENSHOTS (docs/screenshots/ holds the committed ones) or a temporary folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from kprof.dashboards import probe  # noqa: E402

pytestmark = pytest.mark.skipif(probe.missing() is not None, reason=str(probe.missing()))

FIRST_VISIT_S, SWITCH_S = 2.5, 1.0
# 3x for CI's 2 cores, times how oversubscribed the machine is now (a box shared by several jobs at load 12 on
# 2 cores measured 4-15 s first visits that a quiet one serves within the targets); KPROF_TIMING_MARGIN overrides
MARGIN = float(os.environ.get("KPROF_TIMING_MARGIN") or 3 * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)))


def _check(rep: probe.Report, timed: bool) -> None:
    assert not rep.errors, rep.errors
    assert set(rep.first_visit_s) == set(probe.PAGES), rep
    if timed:
        slow = {k: v for k, v in rep.first_visit_s.items() if v > FIRST_VISIT_S * MARGIN}
        slow |= {f"switch {k}": v for k, v in rep.switch_s.items() if v > SWITCH_S * MARGIN}
        slow |= {f"control {k}": v for k, v in rep.control_s.items() if v > SWITCH_S * MARGIN}
        assert not slow, f"slower than the targets x {MARGIN}: {slow} (all: {rep})"


def _save(rep: probe.Report, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"timings-{rep.store}.json").write_text(json.dumps(rep.__dict__, indent=1))


def test_demo_every_page_and_control(tmp_path):
    shots = Path(os.environ.get("KPROF_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with probe.server(tmp_path / "none" / "kprof.db") as (url, _):
        rep = probe.measure(url, "demo", probe.GPU_VISITS, probe.GPU_CONTROLS, shots=shots, demo=True)
    _save(rep, shots)
    _check(rep, timed=False)
    assert {"compare", "diff", "trace"} <= set(rep.control_s)


def test_cpu_only_store_shows_correctness(tmp_path):
    store = probe.cpu_store(tmp_path / "cpu" / "kprof.db", seed=int.from_bytes(os.urandom(2), "little"))
    with probe.server(store) as (url, _):
        rep = probe.measure(url, "cpu", probe.CPU_VISITS, probe.CPU_CONTROLS)
    _check(rep, timed=False)
    assert "correctness" in rep.control_s


def test_hundred_run_store_within_the_timing_targets(tmp_path):
    from tests.dashboards.stores import hundred_runs

    store = hundred_runs(tmp_path / "many" / "kprof.db")
    with probe.server(store) as (url, _):
        rep = probe.measure(url, "100-runs", probe.GPU_VISITS, probe.GPU_CONTROLS)
    rep.__dict__["margin"] = round(MARGIN, 2)  # saved beside the times: what was asserted
    _save(rep, Path(os.environ.get("KPROF_SCREENSHOTS") or tmp_path))
    _check(rep, timed=True)
    # what keeps first visits short: no page needs plotly's code (a 4.7 MB chunk), and only Runs, whose 100 runs
    # are there to sort and scroll, needs the interactive grid's (its tables elsewhere are HTML)
    chunks = {page: {name.split(".")[0] for name in names} for page, names in rep.scripts.items()}
    assert not [page for page, names in chunks.items() if "PlotlyChart" in names], rep.scripts
    assert [page for page, names in chunks.items() if "DataFrame" in names] == ["runs"], rep.scripts


def test_downloads_and_switched_controls_work_in_the_browser(tmp_path):
    """What moved out of the first view to keep it fast still works where a user clicks: Compare's CSV button
    downloads the table shown, its switch shows the add-runs picker; Trace's kernel search (the chart's own
    box) dims the kernels that do not match; Trace's switch shows the Perfetto export (a download of
    Chrome-trace JSON) and the upload box."""
    from playwright.sync_api import sync_playwright

    with probe.server(tmp_path / "none" / "kprof.db") as (url, _), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=probe.CHROMIUM, args=probe.FLAGS)
        page = browser.new_page(viewport=probe.VIEWPORT)
        page.goto(url + "/")
        page.get_by_text("Download the table (CSV)").first.wait_for(timeout=60000)
        with page.expect_download() as got:
            page.get_by_text("Download the table (CSV)").first.click()
        lines = Path(got.value.path()).read_text().splitlines()
        assert got.value.suggested_filename.endswith(".csv") and lines[0].startswith("shape,provider,status")
        assert len(lines) > 2 and all(line.count(",") >= 3 for line in lines[1:])
        # the chart's legend: ticking a version keeps its marks and dims every other version's, in all panels
        box = page.locator(".kprof-compare input[type=checkbox]").nth(1)
        picked = box.get_attribute("data-provider")
        assert _opacities(page, picked) == ({"1"}, {"1"})
        box.click()
        assert _opacities(page, picked) == ({"1"}, {"0.12"})
        box.click()
        assert _opacities(page, picked) == ({"1"}, {"1"})
        page.get_by_text("add runs of this family").first.click()
        page.get_by_text("runs to add").first.wait_for(timeout=60000)
        page.goto(url + "/trace")
        page.get_by_text("rows; source:").first.wait_for(timeout=60000)
        # the kernel search is the chart's own box: what matches stays, the other kernels dim, in the browser
        some, none = _dimmed_after(page, "reduce"), _dimmed_after(page, "no kernel is called this")
        assert 0 < some < none, (some, none)
        page.get_by_text("time window, Perfetto export, open a trace file").first.click()
        page.get_by_text("open a trace file (nsys").first.wait_for(timeout=60000)
        with page.expect_download() as got:
            page.get_by_text("Export this view for ui.perfetto.dev").first.click()
        events = json.loads(Path(got.value.path()).read_text())["traceEvents"]
        assert any(e.get("ph") == "X" for e in events)
        browser.close()


def _dimmed_after(page, text: str) -> int:
    """Type ``text`` into the timeline's search box; how many of its bars are drawn dimmed then."""
    page.locator(".vega-bindings input").first.fill(text)
    page.wait_for_timeout(500)  # Vega redraws on the input event
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('.vega-embed svg.marks g.mark-rect')[0]
            .querySelectorAll('path')).filter(p => p.getAttribute('opacity') === '0.15').length"""
    )


def _opacities(page, provider: str) -> tuple[set[str], set[str]]:
    """The opacities the browser draws Compare's points and lines with: ``provider``'s, everyone else's."""
    page.wait_for_timeout(100)  # style recalculation after a click
    return tuple(
        set(v)
        for v in page.evaluate(
            """(p) => {
            const all = [...document.querySelectorAll('.kprof-compare .kp-m')];
            const o = (e) => getComputedStyle(e).opacity;
            return [all.filter(e => e.dataset.provider === p).map(o), all.filter(e => e.dataset.provider !== p).map(o)];
        }""",
            provider,
        )
    )
