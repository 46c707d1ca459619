"""The committed grid tables again, with today's ``kprof grid`` rules, from the stores they were made from.

    python benchmarks/grid_rerender.py --out DIR

For every ``grid-*.md`` under ``benchmarks/results/`` (the ``targets/`` copies and ``-ncu`` variants left out),
reads its family and runs from its title line, finds the gzipped store beside it that holds those runs, and
runs ``kprof grid RUN... --store DB`` on it. Writes each new table as DIR/<folder>__<name>.md and
DIR/summary.md: the verdict counts before and after, per table. CPU only: no measurement is repeated.
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
COUNTS = re.compile(r"(\d+) points: \*\*(\d+) win, (\d+) tie, (\d+) loss\*\*, (\d+) uncertain")


def _tables() -> list[Path]:
    found = sorted(RESULTS.glob("**/grid-*.md"))
    return [p for p in found if "targets" not in p.parts and not p.stem.endswith("-ncu")]


def _store_with(folder: Path, runs: list[str], scratch: Path) -> Path | None:
    from kprof.store import RunStore

    for gz in sorted(folder.glob("*.db.gz")):
        db = scratch / f"{abs(hash(gz))}.db"
        if not db.exists():
            with gzip.open(gz) as src, open(db, "wb") as dst:
                shutil.copyfileobj(src, dst)
        have = set(RunStore(db, create=False).runs()["id"])
        if set(runs) <= have:
            return db
    return None


def runs_of(title: str) -> list[str]:
    """The run ids a ``kprof grid`` table's title names (before the device and the kernel code, where it names
    them: the first `` · `` after the runs ends them), or []."""
    m = re.match(r"# kprof grid · (\S+) · runs (.+?)(?: · .*)?$", title)
    return [r.strip() for r in m.group(2).split(",")] if m else []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = ["| table | points | before: win / tie / loss / uncertain | now |", "|---|---:|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for md in _tables():
            title = md.read_text().splitlines()[0]
            runs = runs_of(title)
            old = COUNTS.search(md.read_text())
            if not runs or not old:
                continue
            db = _store_with(md.parent, runs, Path(tmp))
            name = f"{md.parent.relative_to(RESULTS)}/{md.name}"
            if db is None:
                rows.append(f"| `{name}` | {old.group(1)} | {'/'.join(old.groups()[1:])} | store not committed |")
                continue
            cmd = [sys.executable, "-m", "kprof.cli", "grid", *runs, "--store", str(db)]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            new = COUNTS.search(out.stdout)
            (args.out / f"{str(md.parent.relative_to(RESULTS)).replace('/', '__')}__{md.name}").write_text(out.stdout)
            now = "/".join(new.groups()[1:]) if new else f"failed: {out.stderr.strip()[-200:]}"
            rows.append(f"| `{name}` | {old.group(1)} | {'/'.join(old.groups()[1:])} | {now} |")
            print(rows[-1], flush=True)
    (args.out / "summary.md").write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
