"""The dashboard in a real browser: `kprof dashboard` started as a user would, each page visited with
headless Chromium (Debian's `chromium`, driven by Playwright's Python client), its key content asserted,
a screenshot saved and the time to that content measured.

Skipped, with the reason, where Chromium or Playwright is missing. Screenshots go to $KPROF_SCREENSHOTS
(docs/screenshots/ holds the committed ones) or a temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (apt-get install chromium)")

# page -> text that only appears once the page has rendered its content
# (tables are drawn on a canvas, so the keys are texts outside them)
PAGES = {
    "compare": ("Compare versions", "Download the table (CSV)"),
    "runs": ("Runs", "Failed cases:"),
    "trace": ("Trace", "Per kernel"),
    "diff": ("Diff", "Same code as"),
    "roofline": ("Roofline", "Intensity and FLOP/s"),
    "sweep": ("Sweep", "Selection guide"),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    port = free_port()
    # a missing store shows the demo runs; KPROF_TEST_DASHBOARD_STORE points it at a prepared one (timings)
    store = os.environ.get("KPROF_TEST_DASHBOARD_STORE") or tmp_path_factory.mktemp("empty") / "kprof.db"
    proc = subprocess.Popen([sys.executable, "-m", "kprof.cli", "dashboard", "--port", str(port), "--store", str(store)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail(f"kprof dashboard did not come up: {proc.stdout.read() if proc.stdout else ''}")
    yield url
    os.killpg(proc.pid, 15)
    proc.wait(timeout=30)


def test_every_page_in_chromium(dashboard, tmp_path):
    shots = Path(os.environ.get("KPROF_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    timings = {}
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        for name, (title, key) in PAGES.items():
            t0 = time.perf_counter()
            page.goto(f"{dashboard}/{'' if name == 'compare' else name}")  # Compare is the default page
            page.get_by_text(key, exact=False).first.wait_for(timeout=60000)
            timings[name] = time.perf_counter() - t0
            assert page.get_by_text(title, exact=False).first.is_visible()
            demo = not os.environ.get("KPROF_TEST_DASHBOARD_STORE")
            if demo:
                assert page.get_by_text("Demo data", exact=False).first.is_visible()  # labelled as demo
            if name == "diff" and demo:  # the demo's newest pair is main vs the planted regression
                assert int(page.get_by_test_id("stMetricValue").first.inner_text()) >= 1  # "slower"
            if name in ("compare", "trace", "roofline", "sweep"):
                page.locator(".js-plotly-plot").first.wait_for(timeout=60000)
                assert page.locator(".js-plotly-plot").count() >= 1
            assert page.get_by_text("Traceback", exact=False).count() == 0
            assert page.get_by_text("Page not found", exact=False).count() == 0
            page.wait_for_timeout(500)  # let plotly finish drawing before the picture
            page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        again = {}
        for name, (title, key) in PAGES.items():  # second visit: server warm, frontend cached by the browser
            t0 = time.perf_counter()
            page.goto(f"{dashboard}/{'' if name == 'compare' else name}")
            page.get_by_text(key, exact=False).first.wait_for(timeout=60000)
            again[name] = time.perf_counter() - t0
        browser.close()
    (shots / "timings.json").write_text(json.dumps(
        {"first_visit_s": {k: round(v, 2) for k, v in timings.items()},
         "second_visit_s": {k: round(v, 2) for k, v in again.items()}}, indent=1))
    assert all(v < 30 for v in timings.values()), timings
