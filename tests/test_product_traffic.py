"""benchmarks/product_traffic.py's reading of ncu's raw CSV, on the output it captured on an H200
(benchmarks/results/matmul-last-gap/h200-clusters-17b1c9c/): each profiled kernel is labelled with the point and
product that launched it (by launch order), and the table the script wrote there is what it reads from that output."""

from __future__ import annotations

import csv
import gzip
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
RUN = ROOT / "benchmarks" / "results" / "matmul-last-gap" / "h200-clusters-17b1c9c"


@pytest.fixture
def traffic(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("product_traffic")
    finally:
        sys.modules.pop("product_traffic", None)


def _raw() -> str:
    with gzip.open(RUN / "ncu_raw.csv.gz", "rt") as fh:
        return fh.read()


def test_each_kernel_is_labelled_with_the_product_that_launched_it(traffic):
    points = traffic._points(traffic.POINTS)
    rows = traffic._rows(_raw(), points)
    assert len(rows) == 2 * len(points)
    for row in rows:
        kernel = row["Kernel Name"]
        assert ("_tma_product_kernel" in kernel) == (row["product"] == "triton_tma"), row
        assert float(row["gpu__time_duration.sum [ns]"].replace(",", "")) > 0
    assert [(r["dtype"], r["shape"]) for r in rows[::2]] == [(d, "x".join(map(str, s))) for d, s in points]


def test_the_committed_table_is_what_the_script_reads_from_the_committed_output(traffic):
    rows = traffic._rows(_raw(), traffic._points(traffic.POINTS))
    with open(RUN / "product_traffic.csv", newline="") as fh:
        committed = list(csv.DictReader(fh))
    assert [{k: str(v) for k, v in r.items()} for r in rows] == committed


def test_a_missing_kernel_is_said_not_hidden(traffic, capsys):
    raw = _raw()
    lines = raw.splitlines()
    body = [i for i, ln in enumerate(lines) if ln.startswith('"')][2:]  # after the header and units rows
    cut = "\n".join(ln for i, ln in enumerate(lines) if i != body[-1])
    rows = traffic._rows(cut, traffic._points(traffic.POINTS))
    assert len(rows) == len(body) - 1
    assert "the labels may be off" in capsys.readouterr().out
