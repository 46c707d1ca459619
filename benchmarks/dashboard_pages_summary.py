"""Summarise alternated `dashboard_pages.py` runs of two trees: per page, the median [min-max] first visit,
switch and control, and how many were within the targets (2.5 s first visit, 1.0 s switch or control).

    python benchmarks/dashboard_pages_summary.py DIR     # DIR holds before1/, after1/, before2/, ... each with timings.json

The tree is the folder's name without its trailing digits.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

FIRST_VISIT_S, SWITCH_S = 2.5, 1.0


def collect(root: Path) -> dict[str, dict[str, list[float]]]:
    """{"compare" or "switch compare" or "control compare": {tree: [seconds, ...]}} over every report."""
    out: dict[str, dict[str, list[float]]] = {}
    for d in sorted(p for p in root.iterdir() if (p / "timings.json").exists()):
        tree = d.name.rstrip("0123456789")
        for rep in json.loads((d / "timings.json").read_text())["reports"]:
            for key, prefix in (("first_visit_s", ""), ("switch_s", "switch "), ("control_s", "control ")):
                for page, v in rep[key].items():
                    out.setdefault(prefix + page, {}).setdefault(tree, []).append(v)
    return out


def cell(values: list[float], target: float) -> str:
    if not values:
        return ""
    within = sum(v <= target for v in values)
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}] ({within}/{len(values)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--trees", default="before,after", help="tree names in column order")
    args = ap.parse_args()
    trees = args.trees.split(",")
    print(f"{'page':22s}" + "".join(f"{t:>30s}" for t in trees) + "   (within target / visits)")
    for page, by_tree in collect(args.root).items():
        target = FIRST_VISIT_S if " " not in page else SWITCH_S
        print(f"{page:22s}" + "".join(f"{cell(by_tree.get(t, []), target):>30s}" for t in trees))


if __name__ == "__main__":
    main()
