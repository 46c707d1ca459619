"""Every dashboard page timed in headless Chromium, as a user meets it: first visit from a fresh browser (to
the page's last element, charts drawn), a switch to it through the sidebar, and its main control changed.

    python benchmarks/dashboard_pages.py [--runs 100] [--out DIR] [--repeat 2]

Builds a store of ``--runs`` runs (the bundled demo's real H100 runs copied under new ids), starts
`kprof dashboard` on it, measures with :mod:`kprof.dashboards.probe` (the browser test's driver) ``--repeat``
times on fresh servers, and writes ``timings.json`` and a table to ``--out``. Targets: first visit <= 2.5 s,
switch or control <= 1.0 s. Needs Playwright and Chromium (``/usr/bin/chromium``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.dashboards.stores from a checkout


def main() -> None:
    from kprof.dashboards import probe
    from tests.dashboards.stores import hundred_runs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/dashboard-pages"))
    args = ap.parse_args()
    why = probe.missing()
    if why:
        raise SystemExit(f"kprof: cannot measure the dashboard here: {why}")
    args.out.mkdir(parents=True, exist_ok=True)
    reports = []
    with tempfile.TemporaryDirectory() as tmp:
        store = hundred_runs(Path(tmp) / "kprof.db", args.runs)
        for i in range(args.repeat):
            with probe.server(store) as (url, _):
                rep = probe.measure(url, f"{args.runs}-runs#{i}", probe.GPU_VISITS, probe.GPU_CONTROLS)
            reports.append(rep.__dict__)
    meta = {"cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0], "python": platform.python_version(),
            "runs_in_store": args.runs}
    (args.out / "timings.json").write_text(json.dumps({"machine": meta, "reports": reports}, indent=1))
    lines = [f"{'page':12s} {'first visit s':>14s} {'switch s':>9s} {'control s':>10s}"]
    for page in probe.PAGES:
        first = max(r["first_visit_s"].get(page, float("nan")) for r in reports)
        switch = max(r["switch_s"].get(page, float("nan")) for r in reports)
        ctrl = [r["control_s"][page] for r in reports if page in r["control_s"]]
        lines.append(f"{page:12s} {first:14.2f} {switch:9.2f} {max(ctrl) if ctrl else float('nan'):10.2f}")
    lines.append(f"(worst of {args.repeat}; {meta['cpus']} CPUs, load {meta['load_avg_1m']:.1f}; errors: "
                 f"{sum(len(r['errors']) for r in reports)})")
    (args.out / "table.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
