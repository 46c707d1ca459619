from __future__ import annotations

import pandas as pd
import pytest

from kprof import launch_table
from kprof.errors import LaunchTableError


def minimal(**extra) -> pd.DataFrame:
    base = {"kernel": ["k"], "start_ns": [100], "end_ns": [150], "duration_ns": [50], "source": ["test"]}
    base.update(extra)
    return pd.DataFrame(base)


def test_empty_has_every_column_typed():
    df = launch_table.empty()
    assert list(df.columns) == list(launch_table.COLUMN_NAMES)
    assert str(df["start_ns"].dtype) == "Int64" and str(df["kernel"].dtype) == "string"


def test_optional_columns_added_as_missing_and_extras_dropped():
    df = launch_table.validate(minimal(something_else=[1]))
    assert "something_else" not in df.columns
    assert df["registers_per_thread"].isna().all() and df["case"].isna().all()


def test_float_nanoseconds_are_rounded_not_rejected():
    df = launch_table.validate(minimal(start_ns=[100.0], end_ns=[150.0], duration_ns=[50.0]))
    assert df.loc[0, "duration_ns"] == 50


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"kernel": None}, "required columns missing"),
        ({"duration_ns": [60]}, "end_ns - start_ns"),
        ({"start_ns": [200], "end_ns": [150], "duration_ns": [-50]}, "negative"),
        ({"grid_x": ["wide"]}, "grid_x"),
        ({"kernel": [None]}, "empty values"),
    ],
)
def test_bad_tables_are_rejected_with_the_reason(bad, match):
    df = minimal()
    for k, v in bad.items():
        if v is None:
            df = df.drop(columns=[k])
        else:
            df[k] = v
    with pytest.raises(LaunchTableError, match=match):
        launch_table.validate(df, source="test")


def test_schema_is_documented():
    d = launch_table.describe()
    assert set(d["column"]) == set(launch_table.COLUMN_NAMES)
    assert d["meaning"].str.len().min() > 5
