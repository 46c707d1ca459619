"""The correctness gate: which cases fail a run, and the one line each prints."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from kprof.gate import run_failures, summary


def metrics(rows):
    cols = ["case", "status", "note", "max_rel_err", "max_abs_err"]
    return pd.DataFrame(rows, columns=cols)


def test_wrong_and_raising_cases_fail_skips_do_not():
    rng = np.random.default_rng()
    rel, mx = float(rng.uniform(0.02, 0.08)), float(rng.uniform(0.1, 3))
    m = metrics(
        [
            ("f/triton_a/3x37/fp32", "fail", f"relative error {rel:.2e} above tolerance 1e-05", rel, mx),
            (
                "f/triton_b/3x37/fp32",
                "error",
                "Traceback...\nValueError: f: x is empty (shape (0, 64))",
                math.nan,
                math.nan,
            ),
            ("f/triton_c/3x37/fp32", "skipped", "GPU only", math.nan, math.nan),
            ("f/torch_eager/3x37/fp32", "ok", None, 1e-7, 1e-7),
        ]
    )
    got = run_failures({"id": "r1", "config": {"revision": "B"}}, m)
    assert [(f.case, f.status) for f in got] == [("f/triton_a/3x37/fp32", "fail"), ("f/triton_b/3x37/fp32", "error")]
    fail, err = (f.line() for f in got)
    assert fail.startswith("kprof: FAIL f/triton_a/3x37/fp32 [run r1, --rev B]: ")
    assert f"{rel:.2e} above tolerance 1e-05" in fail and f"max abs error {mx:.3g}" in fail
    assert err.endswith("raised ValueError: f: x is empty (shape (0, 64))") and "\n" not in err
    assert "exit status 1" in summary(got, allow=False) and "2 case(s)" in summary(got, allow=False)


def test_a_run_that_checked_nothing_fails():
    m = metrics([("f/t/3x5/fp32", "skipped", "GPU only", math.nan, math.nan)] * 2)
    got = run_failures({"id": "r2", "config": {}}, m)
    assert [f.status for f in got] == ["unchecked"] and "all 2 cases were skipped" in got[0].line()
    assert "no case was checked" in summary(got, allow=True) and "--allow-failures" in summary(got, allow=True)
    assert run_failures({"id": "r3", "config": {}}, metrics([("f/t/3x5/fp32", "ok", None, 0.0, 0.0)])) == []


def test_a_run_whose_only_run_cases_are_yardsticks_checked_nothing():
    """A copy of the bytes (roofline) or cuBLAS's product alone (floor) runs "ok" without an oracle check: a run in
    which every kernel version was skipped and only the yardsticks ran checked nothing, and exited 0."""
    m = pd.DataFrame(
        {
            "case": ["f/triton_a/3x5/fp32", "f/copy_bytes/3x5/fp32", "f/cublas_mm/3x5/fp32"],
            "kind": ["triton", "roofline", "floor"],
            "status": ["skipped", "ok", "ok"],
            "note": ["GPU only", None, None],
            "max_rel_err": [math.nan] * 3,
            "max_abs_err": [math.nan] * 3,
        }
    )
    got = run_failures({"id": "r4", "config": {}}, m)
    assert [f.status for f in got] == ["unchecked"], got
    assert "1 skipped, 2 yardsticks" in got[0].line()
    checked = m.assign(status=["ok", "ok", "ok"])
    assert run_failures({"id": "r5", "config": {}}, checked) == []
