"""Every dashboard page timed in headless Chromium, as a user meets it: first visit from a fresh browser (to
the page's last element, charts drawn), a switch to it through the sidebar, and its main control changed.

    python benchmarks/dashboard_pages.py [--runs 100] [--out DIR] [--repeat 2] [--floors 3]
    python benchmarks/dashboard_pages.py --widgets tables|trace [--visits 4] [--out DIR]

Builds a store of ``--runs`` runs (the bundled demo's real H100 runs copied under new ids), starts
`kprof dashboard` on it, measures with :mod:`kprof.dashboards.probe` (the browser test's driver) ``--repeat``
times on fresh servers, and writes ``timings.json`` and a table to ``--out``. Targets: first visit <= 2.5 s,
switch or control <= 1.0 s. Needs Playwright and Chromium (``/usr/bin/chromium``).

Before each repeat it times the floors: trivial Streamlit apps (a line of text; text and one tiny
Vega-Lite chart; text and one tiny plotly chart), opened ``--floors`` times each from a fresh Chromium to
their last element. No page can beat the floor of what it draws on the same machine at the same moment, so
the table shows each page beside them (a shared machine moves every number; the floors move with it).

``--widgets SET`` times candidate widgets instead, each alone in a trivial app beside the text floor, the apps
alternated: read-only tables (``st.dataframe``, ``st.table``, kprof's HTML table) or the Trace timeline.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.dashboards.stores from a checkout
# the dashboard modules' cached loaders, imported here outside `streamlit run`, would each warn that no
# Streamlit runtime is there (dozens of lines before the table); this process only builds stores and drives
# the browser, so those warnings say nothing
try:
    from streamlit.runtime.caching import cache_data_api  # streamlit sets its loggers' level on import: first

    logging.getLogger(cache_data_api.__name__).setLevel(logging.ERROR)
except ImportError:  # no streamlit: main() says what is missing
    pass


FLOOR_APPS = {  # name -> (app source, selector of its drawn chart or None)
    "text": ("", None),
    "vega": (
        "st.vega_lite_chart({'data': {'values': [{'x': 1, 'y': 1}, {'x': 2, 'y': 3}, {'x': 3, 'y': 2}]}, "
        "'mark': 'line', 'encoding': {'x': {'field': 'x', 'type': 'quantitative'}, "
        "'y': {'field': 'y', 'type': 'quantitative'}}})\n",
        ".vega-embed canvas, .vega-embed svg.marks",
    ),
    "plotly": (
        "import plotly.graph_objects as go\nst.plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 3, 2])))\n",
        ".js-plotly-plot .main-svg",
    ),
}


# Candidate widgets, each alone in a trivial app (``--widgets SET``): what one costs a fresh browser, measured
# beside the text floor. Tables: the same 63 x 16 table (a Compare table's size) as Streamlit's interactive
# grid, as st.table, and as kprof's formatted HTML table (kprof.dashboards.style.html_table).
_TABLE = (
    "import numpy as np, pandas as pd\n"
    "rng = np.random.default_rng(0)\n"
    "n = 63\n"
    "df = pd.DataFrame({'shape': [f'{2**(i % 9 + 6)}x4096' for i in range(n)], 'provider': "
    "[f'triton_v{i % 7}' for i in range(n)], 'status': ['ok'] * n, 'best': [i % 7 == 0 for i in range(n)], "
    "**{c: rng.lognormal(2, 1, n) for c in ('gpu_time_us', 'noise', 'gbps', 'pct_peak_bw', 'speedup', "
    "'warm_us', 'host_time_us', 'launch_latency_us', 'kernels_per_call', 'occupancy_theoretical_pct', "
    "'registers_per_thread', 'max_rel_err')}})\n"
)
WIDGET_SETS = {
    "tables": {
        "text": ("", None),
        "dataframe": (
            _TABLE + "from kprof.dashboards import style\n"
            "st.dataframe(df, hide_index=True, column_config=style.column_config(df))\n",
            '[data-testid="stDataFrame"] canvas',
        ),
        "table": (_TABLE + "st.table(df)\n", '[data-testid="stTable"] table'),
        "html": (
            _TABLE + "from kprof.dashboards import style\n"
            "st.html(style.html_table(df, df['best'].map({True: '#d4f4dd', False: ''})))\n",
            ".kprof-table table",
        ),
    },
}

# Trace: the page's timeline alone (kprof.dashboards.timeline, Vega-Lite) on the page's default view of the
# 100-run store (its first case: 46 launches) and on 4900 launches (just under the limit before folding).
# The plotly timeline it replaced measured 2.64-4.83 s and 7.22-9.52 s here, against 1.73-3.80 s and 4.07-6.12 s
# for a Vega-Lite prototype, alternated in one session (benchmarks/results/dashboard-pages/ has the numbers)
_TRACE = (
    "import pandas as pd\nlt = pd.read_pickle('{folder}/trace_%s.pkl')\nfrom kprof.dashboards import timeline\n"
    "spec, _, _ = timeline.figure({'A': lt}, collapse_ns=100e3)\n"
    "st.vega_lite_chart(spec, on_select='rerun', selection_mode=['pick'], key='t', width='content')\n"
)
WIDGET_SETS["trace"] = {
    "text": ("", None),
    "timeline-46": (_TRACE % "small", ".vega-embed canvas, .vega-embed svg.marks"),
    "timeline-4900": (_TRACE % "large", ".vega-embed canvas, .vega-embed svg.marks"),
}


def trace_inputs(folder: Path) -> None:
    """The launch tables the trace apps draw: the first case of a run of the demo (the page's default view)
    and the run repeated end to end, cut at 4900 launches (just under the page's limit before folding)."""
    import pandas as pd

    from kprof.store import RunStore
    from tests.dashboards.stores import hundred_runs

    store = RunStore(hundred_runs(folder / "trace-store" / "kprof.db", 1))
    runs = [r for r in store.runs()["id"] if store.launches(r)["start_ns"].notna().sum()]
    lt = store.launches(runs[0])
    first = lt.assign(_t=lt["start_ns"].fillna(lt["api_start_ns"])).groupby("case")["_t"].min().idxmin()
    lt[lt["case"] == first].to_pickle(folder / "trace_small.pkl")
    t0 = lt[["start_ns", "api_start_ns"]].min().min()
    span = lt[["end_ns", "api_end_ns"]].max().max() - t0 + 1000
    stamps = ("start_ns", "end_ns", "api_start_ns", "api_end_ns")
    copies = [lt.assign(**{c: lt[c] + k * span for c in stamps}) for k in range(4900 // len(lt) + 1)]
    pd.concat(copies, ignore_index=True).head(4900).to_pickle(folder / "trace_large.pkl")


def time_apps(folder: Path, apps: dict[str, tuple[str, str | None]], n: int) -> dict[str, list[float]]:
    """Seconds from ``goto`` to the last element of each app (a fresh Chromium each time), ``n`` visits of
    each, the apps alternated (so a change in the machine's load hits them alike)."""
    from playwright.sync_api import sync_playwright

    from kprof.dashboards import probe

    out: dict[str, list[float]] = {}
    procs, urls = [], {}
    try:
        for name, (body, _) in apps.items():
            app = folder / f"app_{name}.py"
            body = body.replace("{folder}", str(folder))
            app.write_text(f"import streamlit as st\nst.write('floor')\n{body}st.write('END-MARK')\n")
            port = probe.free_port()
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "streamlit",
                        "run",
                        str(app),
                        "--server.headless",
                        "true",
                        "--server.port",
                        str(port),
                        "--browser.gatherUsageStats",
                        "false",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            urls[name] = f"http://127.0.0.1:{port}"
        for url in urls.values():
            for _ in range(300):
                try:
                    urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                    break
                except OSError:
                    time.sleep(0.2)
        with sync_playwright() as p:
            for name in apps:  # one unmeasured visit each: the server's first run imports its modules
                browser = p.chromium.launch(executable_path=probe.CHROMIUM, args=probe.FLAGS)
                browser.new_page().goto(urls[name])
                browser.close()
            for _ in range(n):
                for name, (_, chart) in apps.items():
                    browser = p.chromium.launch(executable_path=probe.CHROMIUM, args=probe.FLAGS)
                    page = browser.new_page(viewport=probe.VIEWPORT)
                    t0 = time.perf_counter()
                    page.goto(urls[name])
                    page.get_by_text("END-MARK").first.wait_for(timeout=60000)
                    if chart:
                        page.locator(chart).first.wait_for(timeout=60000)
                    out.setdefault(name, []).append(round(time.perf_counter() - t0, 2))
                    browser.close()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
    return out


def floors(folder: Path, n: int) -> dict[str, list[float]]:
    """The trivial apps of :data:`FLOOR_APPS`, timed with :func:`time_apps`."""
    return time_apps(folder, FLOOR_APPS, n)


def widgets(name: str, n: int, out: Path) -> None:
    """``--widgets NAME``: each app of :data:`WIDGET_SETS` [NAME] ``n`` times, alternated; a table and JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        if name == "trace":
            trace_inputs(Path(tmp))
        load = os.getloadavg()[0]
        times = time_apps(Path(tmp), WIDGET_SETS[name], n)
    lines = [f"{'app':12s} {'min s':>6s} {'median s':>9s} {'max s':>6s}  (fresh Chromium, {n} visits each, alternated)"]
    for app, ts in times.items():
        lines.append(f"{app:12s} {min(ts):6.2f} {sorted(ts)[len(ts) // 2]:9.2f} {max(ts):6.2f}  {ts}")
    lines.append(f"load (1 min) {load:.1f} before, {os.getloadavg()[0]:.1f} after; {os.cpu_count()} CPUs")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"widgets-{name}.json").write_text(
        json.dumps({"times_s": times, "load_avg_1m": [load, os.getloadavg()[0]]}, indent=1)
    )
    (out / f"widgets-{name}.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    from kprof.dashboards import probe
    from tests.dashboards.stores import hundred_runs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/dashboard-pages"))
    ap.add_argument("--floors", type=int, default=3, help="fresh-browser visits of each floor app per repeat (0: none)")
    ap.add_argument(
        "--widgets",
        choices=sorted(WIDGET_SETS),
        help="instead of the pages: time each candidate widget of the set alone in a trivial app",
    )
    ap.add_argument("--visits", type=int, default=4, help="with --widgets: fresh-browser visits of each app")
    args = ap.parse_args()
    why = probe.missing()
    if why:
        raise SystemExit(f"kprof: cannot measure the dashboard here: {why}")
    if args.widgets:
        widgets(args.widgets, args.visits, args.out)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    reports = []
    with tempfile.TemporaryDirectory() as tmp:
        store = hundred_runs(Path(tmp) / "kprof.db", args.runs)
        for i in range(args.repeat):
            floor = floors(Path(tmp), args.floors) if args.floors else {}
            load = os.getloadavg()[0]
            with probe.server(store) as (url, _):
                rep = probe.measure(url, f"{args.runs}-runs#{i}", probe.GPU_VISITS, probe.GPU_CONTROLS)
            reports.append(
                {**rep.__dict__, "floors_s": floor, "load_avg_1m": [round(load, 2), round(os.getloadavg()[0], 2)]}
            )
    meta = {
        "cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "python": platform.python_version(),
        "runs_in_store": args.runs,
    }
    (args.out / "timings.json").write_text(json.dumps({"machine": meta, "reports": reports}, indent=1))
    lines = [f"{'page':12s} {'first visit s':>14s} {'switch s':>9s} {'control s':>10s}"]
    for page in probe.PAGES:
        first = max(r["first_visit_s"].get(page, float("nan")) for r in reports)
        switch = max(r["switch_s"].get(page, float("nan")) for r in reports)
        ctrl = [r["control_s"][page] for r in reports if page in r["control_s"]]
        lines.append(f"{page:12s} {first:14.2f} {switch:9.2f} {max(ctrl) if ctrl else float('nan'):10.2f}")
    lines.append(
        f"(worst of {args.repeat}; {meta['cpus']} CPUs, load {meta['load_avg_1m']:.1f}; errors: "
        f"{sum(len(r['errors']) for r in reports)})"
    )
    for i, r in enumerate(reports):
        if r["floors_s"]:
            lines.append(
                f"repeat {i}: floors (s, fresh browser, min-max) "
                + ", ".join(f"{k} {min(v):.2f}-{max(v):.2f}" for k, v in r["floors_s"].items())
                + f"; load {r['load_avg_1m'][0]:.1f} before, {r['load_avg_1m'][1]:.1f} after"
            )
    (args.out / "table.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
