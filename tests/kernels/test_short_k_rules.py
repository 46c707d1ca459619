"""The short-K launch rules against the races they were drawn from (``benchmarks/results/short-k/``, H100s with 132
SMs): at every point raced, the route the rule picks must be within 1% of the faster route measured there. A
change to a rule that the committed measurements contradict fails here; so does a results folder that loses the
candidates a rule stands on."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "short-k"
H100_SMS = 132
SLACK = 1.01  # the rule's pick may be this much slower than the faster route: about the races' round-to-round spread


def _medians(*folders: str) -> dict[tuple[str, str, str, str], dict[str, float]]:
    """(folder, family, dtype, shape) -> {candidate: median us}, from each folder's ``short_k_products.csv``."""
    out: dict[tuple[str, str, str, str], dict[str, float]] = defaultdict(dict)
    for folder in folders:
        path = RESULTS / folder / "short_k_products.csv"
        if not path.exists():
            pytest.fail(f"{path} is missing: the rule's evidence was moved or removed")
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                out[(folder, row["family"], row["dtype"], row["shape"])][row["candidate"]] = float(row["median_us"])
    return out


def test_swiglu_persistent_rule_matches_its_races():
    from kprof.kernels.swiglu.tuned import persistent_launch

    points = _medians("races-104b48d", "races-0656687", "races-fp16-5e857f5")
    checked = 0
    for (_, family, dtype, shape), med in points.items():
        if family != "swiglu" or not {"pers", "plain"} <= med.keys():
            continue
        m, k, n = (int(v) for v in shape.split("x"))
        pick = med["pers"] if persistent_launch(m, n, k, H100_SMS) else med["plain"]
        assert pick <= SLACK * min(med["pers"], med["plain"]), (dtype, shape, med)
        checked += 1
    assert checked >= 24  # the 24 bf16 prefill points of 2048 and 8192 rows, and fp16's four


def test_rmsnorm_linear_tma_tiles_rule_matches_its_races():
    """Where a race timed the halves (``[shipped]`` from 5e857f5 on; at K 8192 with over 32 waves from aed41ff on,
    the whole tiles) beside the whole tiles (``whole-s3``, which are LONG_K_CONFIG), the tiles the rule picks now are
    within 1% of the faster; both sides of the long-K bound are among the points."""
    from kprof.kernels.rmsnorm_linear.rstd_epilogue import LONG_K_CONFIG, LONG_K_SUBTILE, tma_tiles

    points = _medians("races-5e857f5", "races-fp16-5e857f5", "check-aed41ff")
    checked, long_k = 0, 0
    for (_, family, dtype, shape), med in points.items():
        if family != "rmsnorm_linear" or not {"[shipped]", "whole-s3"} <= med.keys():
            continue
        m, k, n = (int(v) for v in shape.split("x"))
        whole = tma_tiles(m, n, k, H100_SMS) == (LONG_K_CONFIG, LONG_K_SUBTILE)
        pick = med["whole-s3"] if whole else med["[shipped]"]
        assert pick <= SLACK * min(med["[shipped]"], med["whole-s3"]), (dtype, shape, med)
        checked += 1
        long_k += whole
    assert checked >= 12 and long_k >= 3
