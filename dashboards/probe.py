"""The dashboard in a real browser, timed: start `kprof dashboard` as a user would, open every page from a fresh
headless Chromium, wait for its last element, switch pages and change each page's main control, and report
the seconds. The browser test and ``benchmarks/dashboard_pages.py`` both drive it.

Needs Playwright's Python client and a Chromium (Debian's ``/usr/bin/chromium``): imported only when used, so
``kprof.dashboards`` imports without them. :func:`missing` says what is absent.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1500, "height": 1100}
PAGES = ("compare", "correctness", "runs", "trace", "diff", "roofline", "sweep")


def missing() -> str | None:
    """Why the browser checks cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs Playwright's Python client (pip install playwright)"
    if not Path(CHROMIUM).exists():
        return "needs Chromium (apt-get install chromium)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(
    store: str | Path, traces: tuple[str, ...] = (), timeout_s: float = 120
) -> Iterator[tuple[str, subprocess.Popen]]:
    """`kprof dashboard` on ``store``, up and answering; stopped (SIGTERM to kprof, which forwards it) after."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kprof.cli", "dashboard", *traces, "--port", str(port), "--store", str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + timeout_s
    try:
        while True:
            try:
                if urllib.request.urlopen(url + "/_stcore/health", timeout=2).status == 200:
                    break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError(
                        f"kprof dashboard did not come up: {proc.stdout.read() if proc.stdout else ''}"
                    ) from None
                time.sleep(0.2)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


@dataclass
class Visit:
    page: str
    key: str  # text of the page's last element, for this store
    vega: int = 0  # Vega-Lite charts the page draws
    first_s: float = float("nan")


@dataclass
class Report:
    store: str
    first_visit_s: dict[str, float] = field(default_factory=dict)
    switch_s: dict[str, float] = field(default_factory=dict)
    control_s: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    scripts: dict[str, list[str]] = field(default_factory=dict)  # page -> JavaScript files its first visit fetched


def _wait_done(page, key: str, timeout_ms: int = 60000, vega: int = 0) -> None:
    """The page's last element is there and its charts are drawn, and the script has stopped running."""
    page.get_by_text(key, exact=False).first.wait_for(timeout=timeout_ms)
    if vega:
        page.locator(".vega-embed canvas, .vega-embed svg.marks").nth(0).wait_for(timeout=timeout_ms)
    # the script has finished and no element is still a skeleton (widgets whose code is still loading)
    page.wait_for_function(
        '() => !document.querySelector(\'[data-testid="stStatusWidget"] [data-testid="stSpinner"]\')'
        " && !document.querySelector('[data-testid*=\"Skeleton\"]')",
        timeout=timeout_ms,
    )


def _problems(page) -> list[str]:
    out = []
    for sel in ('[data-testid="stException"]',):
        if page.locator(sel).count():
            out.append(page.locator(sel).first.inner_text()[:400])
    for text in ("Traceback", "Page not found"):
        if page.get_by_text(text, exact=False).count():
            out.append(text)
    return out


def measure(
    url: str,
    store_label: str,
    visits: list[Visit],
    controls: dict[str, Callable] | None = None,
    shots: Path | None = None,
    demo: bool = False,
) -> Report:
    """Every page's first visit from a fresh browser (one browser per page, as a new user arriving there),
    then in one browser: a switch to each page through the sidebar, and each control in ``controls``
    (page -> function(page) that acts and waits for its result)."""
    from playwright.sync_api import sync_playwright

    rep = Report(store_label)
    with sync_playwright() as p:
        for v in visits:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport=VIEWPORT)
            fetched: list[str] = []
            page.on(
                "request",
                lambda r, into=fetched: into.append(r.url.rsplit("/", 1)[-1]) if r.url.endswith(".js") else None,
            )
            t0 = time.perf_counter()
            page.goto(f"{url}/{'' if v.page == 'compare' else v.page}")
            _wait_done(page, v.key, vega=v.vega)
            rep.first_visit_s[v.page] = round(time.perf_counter() - t0, 2)
            rep.scripts[v.page] = sorted(set(fetched))
            rep.errors += [f"{store_label}/{v.page}: {e}" for e in _problems(page)]
            if demo and not page.get_by_text("Demo data", exact=False).count():
                rep.errors.append(f"{store_label}/{v.page}: the demo is not labelled as such")
            if shots is not None:
                page.wait_for_timeout(300)  # the charts' last transitions
                page.screenshot(path=str(shots / f"{v.page}.png"), full_page=True)
            browser.close()
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url + "/")
        _wait_done(page, visits[0].key, vega=visits[0].vega)
        for v in visits[1:] + visits[:1]:
            t0 = time.perf_counter()
            page.locator(
                f'[data-testid="stSidebarNav"] a[href$="/{"" if v.page == "compare" else v.page}"]'
            ).first.click()
            _wait_done(page, v.key, vega=v.vega)
            rep.switch_s[v.page] = round(time.perf_counter() - t0, 2)
            if controls and v.page in controls:
                t0 = time.perf_counter()
                controls[v.page](page)
                rep.control_s[v.page] = round(time.perf_counter() - t0, 2)
            rep.errors += [f"{store_label}/{v.page} (switch/control): {e}" for e in _problems(page)]
        browser.close()
    return rep


# ------------------------------------------------------------------------------------ controls
def _caption(page, text: str) -> None:
    page.locator('[data-testid="stCaptionContainer"]', has_text=text).first.wait_for(timeout=60000)


def _select(page, label: str, option: str) -> None:
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    box.get_by_role("combobox").first.click()
    page.get_by_role("option", name=option, exact=False).first.click()


def compare_baseline(page) -> None:
    _select(page, "baseline", "torch.compile")
    _caption(page, "Speedup against torch.compile")
    _wait_done(page, "Download the table (CSV)")


def diff_threshold(page) -> None:
    thumb = page.get_by_role("slider").first
    thumb.focus()
    thumb.press("ArrowRight")
    _caption(page, "beyond ±4%")
    _wait_done(page, "Same code as")


def trace_click(page) -> None:
    """Click a kernel box in the timeline: its full row and its launch -> kernel line appear."""
    bar = _first_kernel_box(page)
    if bar is None:
        raise AssertionError("no kernel box wide enough to click in the timeline")
    page.mouse.click(bar["x"], bar["y"])
    page.get_by_text("Selected launch", exact=False).first.wait_for(timeout=60000)
    _wait_done(page, "rows; source:", vega=1)


def _first_kernel_box(page) -> dict | None:
    """Where to click a kernel launch: the middle of the first bar of the main chart that is at least a few
    pixels wide (the SVG that Vega draws; its first rect group is the main chart's bars)."""
    return page.evaluate(
        """() => {
        const paths = document.querySelectorAll('.vega-embed svg.marks g.mark-rect path');
        for (const p of paths) {
            const r = p.getBoundingClientRect();
            if (r.width >= 3 && r.height >= 8) return {x: r.x + r.width / 2, y: r.y + r.height / 2};
        }
        return null;
    }"""
    )


def correctness_filter(page) -> None:
    box = page.locator('[data-testid="stMultiSelect"]').filter(has_text="status").first
    box.get_by_role("combobox").first.click()
    page.get_by_role("option", name="ok", exact=True).first.click()
    page.keyboard.press("Escape")
    _wait_done(page, "Tolerance: the one")


GPU_VISITS = [
    Visit("compare", "Download the table (CSV)"),
    Visit("correctness", "Tolerance: the one"),
    Visit("runs", "Failed cases:"),
    Visit("trace", "rows; source:", vega=1),
    Visit("diff", "Same code as"),
    Visit("roofline", "Intensity and FLOP/s", vega=1),
    Visit("sweep", "Each cell"),
]
CPU_VISITS = [
    Visit("compare", "No GPU run in the store"),
    Visit("correctness", "Tolerance: the one"),
    Visit("runs", "Failed cases:"),
    Visit("trace", "No run with a launch table"),
    Visit("diff", "two GPU runs"),
    Visit("roofline", "No GPU run in the store"),
    Visit("sweep", "No sweep run"),
]
GPU_CONTROLS = {"compare": compare_baseline, "diff": diff_threshold, "trace": trace_click}
CPU_CONTROLS = {"correctness": correctness_filter}


def cpu_store(path: Path, seed: int = 0) -> Path:
    """A store like the one a user without a GPU has after profiling: one CPU interpreter run, each case ok,
    failed or skipped, with errors and no times."""
    import random

    from kprof.store import RunRecord, RunStore

    rng = random.Random(seed)
    s = RunStore(path)
    run = s.begin_run(
        RunRecord(
            family="rmsnorm",
            mode="interpreter",
            command="kprof profile rmsnorm",
            config={},
            git_commit="0123abcd",
            git_dirty=False,
            git_note=None,
            source_hashes={},
            device={"name": "cpu", "kind": "cpu"},
            versions={},
            profiler="none",
            profiler_version=None,
            ceiling_gbps=None,
            ceiling=None,
        )
    )
    tol = {"fp32": 1e-5, "bf16": 8e-3, "fp16": 1e-3}
    i = 0
    for provider in ("torch_eager", "torch_F", "triton_looped", "triton_one_row"):
        for shape in ("3x37", "17x129", "5x1000"):
            for dtype, t in tol.items():
                err = t * rng.uniform(0.01, 0.9)
                status, note = "ok", None
                if provider == "triton_one_row" and shape == "5x1000" and dtype == "fp16":
                    err = t * rng.uniform(2, 5)
                    status, note = "fail", f"relative error {err:.2e} above tolerance {t:.0e}"
                if provider == "torch_F" and dtype == "fp16":
                    status, note, err = "skipped", "F.rms_norm has no fp16 kernel on this CPU", float("nan")
                s.add_case(
                    run,
                    i,
                    {
                        "case": f"rmsnorm/{provider}/{shape}/{dtype}",
                        "family": "rmsnorm",
                        "provider": provider,
                        "shape": shape,
                        "dtype": dtype,
                        "status": status,
                        "ok": status == "ok",
                        "max_rel_err": err,
                        "max_abs_err": err * 3,
                        "note": note,
                    },
                    {},
                )
                i += 1
    s.finish_run(run, "complete")
    s.close()
    return path
