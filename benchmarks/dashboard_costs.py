"""What each dashboard page costs, beside its time: the JavaScript files a fresh browser loads (and their
bytes), the websocket messages the server sends it, the CPU time the browser and the server spend on the visit,
and the page's size in DOM nodes, per page, on a store of ``--runs`` runs.

    python benchmarks/dashboard_costs.py [--runs 100] [--visits 3] [--pages compare,trace,sweep] [--out DIR]

One server (``kprof dashboard``, as the page-time benchmark starts it), one unmeasured visit of each page (its
first script run fills the server's caches), then ``--visits`` rounds; in each round every page is opened once
from a fresh headless Chromium (pages alternated, so a change in the machine's load hits them alike) and waited
for to its last element (:mod:`kprof.dashboards.probe`'s wait). Per visit (the table: medians):

- ``first_s``: ``goto`` to the last element (wall time: moves with the machine's load);
- ``js_files``, ``js_kb``: JavaScript files fetched and their decoded size (Resource Timing);
- ``ws_msgs``, ``ws_kb``: websocket messages from the server in the page's script run and their bytes;
- ``script_s``: the browser's rerun request to the server's last message of that run (wall time);
- ``main_s``, ``js_s``, ``layout_s``: CPU time of the renderer's main thread in tasks, in JavaScript, in
  layout and style (Chrome's ``Performance.getMetrics`` in thread ticks: a loaded machine stretches wall
  time, much less CPU time);
- ``nodes``: DOM nodes of the page at the end;
- ``browser_cpu_s``: CPU seconds of every Chromium process of the visit (its start-up included, the same for
  every page); ``server_cpu_s``: CPU seconds the server spent during the visit.

On a shared 2-core machine the CPU times are what a change can be judged by when wall times move by a second
between visits. The JSON keeps each visit's file list; the table lists the files a page loads beyond ``--base``
(default: the Sweep page, among the fastest pages) with their sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.dashboards.stores from a checkout
import dashboard_pages  # noqa: E402, F401 - quiets the cached loaders' 'no runtime' warnings, as there


def _tree(root: int) -> list[int]:
    """``root`` and every process under it (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def cpu_s(pids: list[int], only: str = "") -> float:
    """CPU seconds (user + system) the processes have used so far; with ``only``, those whose command line
    holds it."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        try:
            if only and only not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def visit(p, url: str, v, server_pid: int | None = None) -> dict:
    """One fresh-browser visit of ``v`` (a probe.Visit) at ``url`` (the server's address) with its costs;
    ``server_pid``: the server's process, whose CPU time the visit is charged with."""
    from kprof.dashboards import probe

    browser = p.chromium.launch(executable_path=probe.CHROMIUM, args=probe.FLAGS)
    page = browser.new_page(viewport=probe.VIEWPORT)
    cdp = page.context.new_cdp_session(page)
    # durations in CPU time of the thread ("threadTicks"), not wall time: a loaded machine stretches wall time
    cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
    server = _tree(server_pid) if server_pid else []
    server_before = cpu_s(server)
    frames: list[tuple[float, int]] = []
    sent: list[float] = []

    def on_ws(ws) -> None:
        ws.on("framereceived", lambda payload: frames.append((time.perf_counter(), len(payload))))
        ws.on("framesent", lambda payload: sent.append(time.perf_counter()))

    page.on("websocket", on_ws)
    t0 = time.perf_counter()
    page.goto(f"{url}/{'' if v.page == 'compare' else v.page}")
    probe._wait_done(page, v.key, vega=v.vega)
    first = time.perf_counter() - t0
    entries = page.evaluate(
        """() => performance.getEntriesByType('resource').map(e => ({name: e.name.split('/').pop(),
        size: e.decodedBodySize, end: e.responseEnd / 1000}))"""
    )
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    server_cpu = cpu_s(server) - server_before
    browser_cpu = cpu_s(_tree(os.getpid()), only="chromium")  # this visit's browser, launch included
    browser.close()
    js = [e for e in entries if e["name"].endswith(".js")]
    # the rerun request is the browser's first message after the websocket opens (the others are acks)
    start = sent[0] if sent else t0
    run_frames = [f for f in frames if f[0] >= start]
    return {
        "page": v.page,
        "first_s": round(first, 3),
        "js_files": len(js),
        "js_kb": round(sum(e["size"] for e in js) / 1024, 1),
        "ws_open_s": round(start - t0, 3),
        "ws_msgs": len(run_frames),
        "ws_kb": round(sum(n for _, n in run_frames) / 1024, 1),
        "script_s": round(run_frames[-1][0] - start, 3) if run_frames else None,
        "main_s": round(metrics.get("TaskDuration", 0.0), 3),
        "js_s": round(metrics.get("ScriptDuration", 0.0), 3),
        "layout_s": round(metrics.get("LayoutDuration", 0.0) + metrics.get("RecalcStyleDuration", 0.0), 3),
        "nodes": int(metrics.get("Nodes", 0)),
        "browser_cpu_s": round(browser_cpu, 2),
        "server_cpu_s": round(server_cpu, 2),
        "files": {e["name"]: e["size"] for e in js},
    }


COLUMNS = (
    "first_s",
    "js_files",
    "js_kb",
    "ws_msgs",
    "ws_kb",
    "script_s",
    "main_s",
    "js_s",
    "layout_s",
    "nodes",
    "browser_cpu_s",
    "server_cpu_s",
)


def main() -> None:
    from playwright.sync_api import sync_playwright

    from kprof.dashboards import probe
    from tests.dashboards.stores import hundred_runs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--visits", type=int, default=3)
    ap.add_argument("--pages", default="compare,trace,sweep")
    ap.add_argument("--base", default="sweep", help="the page the others' extra JavaScript is listed against")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    why = probe.missing()
    if why:
        raise SystemExit(f"kprof: cannot measure the dashboard here: {why}")
    wanted = args.pages.split(",")
    visits = [v for v in probe.GPU_VISITS if v.page in wanted]
    rows: list[dict] = []
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        store = hundred_runs(Path(tmp) / "kprof.db", args.runs)
        with probe.server(store) as (url, proc), sync_playwright() as p:
            for v in visits:  # unmeasured: the first run of each page fills the server's caches as a first user would
                visit(p, url, v)
            for _ in range(args.visits):
                rows += [visit(p, url, v, proc.pid) for v in visits]
    cols = COLUMNS
    lines = [f"{'page':12s} " + " ".join(f"{c:>9s}" for c in cols) + "   (median of the visits)"]
    for page in wanted:
        mine = [r for r in rows if r["page"] == page]
        lines.append(f"{page:12s} " + " ".join(f"{statistics.median(r[c] or 0 for r in mine):9.3g}" for c in cols))
    lines.append(f"load (1 min) {load:.1f} before, {os.getloadavg()[0]:.1f} after; {os.cpu_count()} CPUs")
    base = {n for r in rows if r["page"] == args.base for n in r["files"]}
    for page in wanted:
        if page == args.base:
            continue
        mine = {n: s for r in rows if r["page"] == page for n, s in r["files"].items()}
        extra = {n: s for n, s in mine.items() if n not in base}
        fewer = sorted(n.split(".")[0] for n in base - set(mine))
        lines.append(
            f"{page} beyond {args.base}: {len(extra)} files, {sum(extra.values()) / 1024:.1f} kB: "
            + ", ".join(f"{n.split('.')[0]} {s / 1024:.1f}" for n, s in sorted(extra.items(), key=lambda x: -x[1]))
            + (f"; not loaded: {', '.join(fewer)}" if fewer else "")
        )
    report(lines, args.out, "costs", {"load_avg_1m": load, "visits": rows})


def report(lines: list[str], out: Path | None, name: str, payload: dict) -> None:
    """Print the table; with ``out``, keep it as ``NAME.txt`` beside the raw visits as ``NAME.json``."""
    print("\n".join(lines))
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps(payload, indent=1))
        (out / f"{name}.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
