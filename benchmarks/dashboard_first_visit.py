"""Where a first visit of the dashboard's default page (Compare) goes, in headless Chromium.

    python benchmarks/dashboard_first_visit.py STORE [--browsers 2]

Starts `kprof dashboard` on STORE (a fresh server), then opens Compare from ``--browsers`` fresh browsers
one after the other (the first meets a server that has just started, the others a warm one) and prints,
per visit, seconds from `goto` to: the load event, the title, the first chart, the download button
(the last element), plus the browser's own paint and plotly-bundle resource timings (ms). Needs
Playwright and Debian's chromium, as tests/dashboards/test_browser.py.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request

CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    from playwright.sync_api import sync_playwright  # here: the script imports (and is tested) without it

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--browsers", type=int, default=2)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t_start = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "kprof.cli", "dashboard", "--port", str(port), "--store", args.store],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                    break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    raise SystemExit(
                        f"kprof dashboard did not come up: {server.stdout.read() if server.stdout else ''}"
                    ) from None
                time.sleep(0.1)
        print(f"server up after {time.perf_counter() - t_start:.2f} s")
        with sync_playwright() as p:
            for visit in range(args.browsers):
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1500, "height": 1100})
                t0 = time.perf_counter()
                marks = {}
                page.goto(url + "/")
                marks["load"] = time.perf_counter() - t0
                page.get_by_text("Compare versions").first.wait_for(timeout=60000)
                marks["title"] = time.perf_counter() - t0
                page.locator(".js-plotly-plot").first.wait_for(timeout=60000)
                marks["chart"] = time.perf_counter() - t0
                page.get_by_text("Download the table (CSV)").first.wait_for(timeout=60000)
                marks["complete"] = time.perf_counter() - t0
                paints = page.evaluate(
                    "() => performance.getEntriesByType('paint').map(e => [e.name, Math.round(e.startTime)])"
                )
                bundle = page.evaluate(
                    "() => performance.getEntriesByType('resource')"
                    ".filter(e => e.name.includes('PlotlyChart'))"
                    ".map(e => [Math.round(e.startTime), Math.round(e.responseEnd)])"
                )
                print(
                    f"browser {visit}: "
                    + "  ".join(f"{k} {v:.2f}" for k, v in marks.items())
                    + f"  | paints (ms) {paints}  plotly bundle requested/received (ms) {bundle}",
                    flush=True,
                )
                browser.close()
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
