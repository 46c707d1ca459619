"""Every measurement the code cites is in the repository: each ``benchmarks/results/...`` path named in the
package's Python sources (the comments and docstrings beside dispatch tables) exists, or, written ``NAME-*``,
matches an entry of its folder."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("kernels", "toolkit", "profilers", "dashboards", "benchmarks")
CITED = re.compile(r"benchmarks/results/[\w./*-]*[\w/*]")
# a path broken over two comment lines: "benchmarks/results/grid/NAME/" then "# wide-64-rows/"
CONTINUED = re.compile(r"/\n\s*#\s*")


def cited_paths() -> dict[str, Path]:
    """Each cited path, with one file that cites it."""
    found: dict[str, Path] = {}
    for folder in SOURCES:
        for source in sorted((ROOT / folder).rglob("*.py")):
            for match in CITED.finditer(CONTINUED.sub("/", source.read_text())):
                found.setdefault(match.group(0).rstrip("."), source)
    return found


def exists(cited: str) -> bool:
    if "*" not in cited:
        return (ROOT / cited).exists()
    folder, _, pattern = cited.rstrip("/").rpartition("/")
    return any((ROOT / folder).glob(pattern))


def test_the_sources_cite_measurements():
    assert len(cited_paths()) >= 50


def test_every_cited_measurement_is_in_the_repository():
    missing = {cited: str(source.relative_to(ROOT)) for cited, source in cited_paths().items() if not exists(cited)}
    assert not missing, missing
