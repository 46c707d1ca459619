"""Does a page's first visit cost more because of where it falls in a fresh server's life? Each page opened
once from a fresh headless Chromium, on fresh servers, in two orders alternated server by server.

    python benchmarks/dashboard_order.py [--runs 100] [--servers 4] [--orders A;B] [--out DIR]

``--orders``: page orders separated by ``;``, each a comma list (default: the page-time benchmark's order,
Compare first, and that order reversed, so each page meets the fresh server early in one order and late
in the other). Each server gets one order, the orders taking turns, and every visit is one of
``dashboard_costs.visit`` (wall time to the last element, the script's span on the websocket, the browser's
main-thread CPU time, the server's CPU time). The table gives, per page and order, the median and range of
the first visits and of the script spans per visit slot, so a page's cost as a server's first or second page
can be read apart from its cost later (``"compare,compare"`` separates Compare's first run on a server from
its second).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.dashboards.stores from a checkout
import dashboard_costs  # noqa: E402

DEFAULT = "compare,correctness,runs,trace,diff,roofline,sweep"


def _span(xs: list[float]) -> str:
    return f"{statistics.median(xs):5.2f} [{min(xs):.2f}-{max(xs):.2f}]"


def table(orders: list[list[str]], rows: list[dict]) -> list[str]:
    """Per order, one line per visit slot (a page visited twice has two): median [range] of the first visits
    and of the script spans on the websocket, over the servers that ran that order."""
    lines = []
    for k, order in enumerate(orders):
        lines.append(f"order {k}: {','.join(order)}  (first visit s, script span s: median [min-max])")
        for pos, page in enumerate(order):
            mine = [r for r in rows if r["order"] == k and r["position"] == pos]
            if mine:
                first, script = [r["first_s"] for r in mine], [r["script_s"] or 0 for r in mine]
                lines.append(f"  #{pos} {page:12s} {_span(first)}  {_span(script)}  ({len(mine)} servers)")
    return lines


def main() -> None:
    from playwright.sync_api import sync_playwright

    from kprof.dashboards import probe
    from tests.dashboards.stores import hundred_runs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--orders", default=f"{DEFAULT};{','.join(reversed(DEFAULT.split(',')))}")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    orders = [o.split(",") for o in args.orders.split(";")]
    by_page = {v.page: v for v in probe.GPU_VISITS}
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = hundred_runs(Path(tmp) / "kprof.db", args.runs)
        for i in range(args.servers):
            k = i % len(orders)
            load = os.getloadavg()[0]
            with probe.server(store) as (url, proc), sync_playwright() as p:
                for pos, page in enumerate(orders[k]):
                    r = dashboard_costs.visit(p, url, by_page[page], proc.pid)
                    r.pop("files")
                    rows.append({**r, "order": k, "position": pos, "server": i, "load": round(load, 2)})
                    print(
                        f"server {i} order {k} #{pos} {page:12s} {r['first_s']:.2f} s script {r['script_s']} s "
                        f"main {r['main_s']} s server cpu {r['server_cpu_s']} s (load {load:.1f})",
                        flush=True,
                    )
    lines = table(orders, rows)
    loads = [r["load"] for r in rows]
    lines.append(f"{args.servers} servers, orders alternated; load (1 min) {min(loads):.1f}-{max(loads):.1f}")
    dashboard_costs.report(lines, args.out, "order", {"orders": orders, "visits": rows})


if __name__ == "__main__":
    main()
