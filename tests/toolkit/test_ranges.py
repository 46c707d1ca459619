"""Case ranges per host thread: the innermost range containing a time, whatever a damaged trace put in the key."""

from __future__ import annotations

import pandas as pd
import pytest

from kprof.ranges import CASE_PREFIX, RangeIndex


def _index(key: object) -> RangeIndex:
    return RangeIndex(
        [
            (key, 100, 900, f"{CASE_PREFIX}outer"),
            (key, 200, 300, f"{CASE_PREFIX}first"),
            (key, 400, 500, f"{CASE_PREFIX}second"),
            (key, 150, 160, "not a case range"),
        ]
    )


@pytest.mark.parametrize("key", [(7, 11), ("host", 3), ([1, 2], 3), ({"pid": 1}, [4])])
def test_the_innermost_range_is_found_on_its_thread_even_under_an_unhashable_id(key):
    idx = _index(key)
    assert len(idx) == 3  # the range without the case prefix is not a case
    assert idx.case_at(key, 250) == "first" and idx.case_at(key, 450) == "second"
    assert idx.case_at(key, 350) == "outer" and idx.case_at(key, 155) == "outer"
    assert idx.case_at(key, 950) is pd.NA and idx.case_at(key, None) is pd.NA
    assert idx.cases([key, key], [250, 50]) == ["first", pd.NA]


def test_another_thread_sees_none_of_them():
    idx = _index((7, 11))
    assert idx.case_at((7, 12), 250) is pd.NA and idx.case_at(([7], 11), 250) is pd.NA
