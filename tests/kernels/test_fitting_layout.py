"""``split_rows.fitting_layout``: which persistent wide-row layout an H200 launches once the compiled kernels' registers
are known (``kernels/rmsnorm/tuned.py``'s and ``kernels/add_rmsnorm/tuned.py``'s ``fitted``)."""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from kprof.kernels.lib import split_rows
from kprof.kernels.lib.split_rows import RacedLayout, fitting_layout

RACED, WIDE = RacedLayout(8192, 8, 4, 4), RacedLayout(16384, 16, 2, 2)


def test_the_raced_layout_stays_where_it_fits_and_gives_way_where_it_does_not():
    assert fitting_layout((RACED, WIDE), {RACED: 4, WIDE: 2}.__getitem__) is RACED
    assert fitting_layout((RACED, WIDE), {RACED: 3, WIDE: 2}.__getitem__) is WIDE  # 74-77 registers: 3 of 4 fit
    # neither fits as raced: the one holding more in flight (3 x 8192 against 1 x 16384), then the earlier on a tie
    assert fitting_layout((RACED, WIDE), {RACED: 3, WIDE: 1}.__getitem__) is RACED
    assert fitting_layout((RACED, WIDE), {RACED: 2, WIDE: 1}.__getitem__) is RACED
    assert fitting_layout((RACED, WIDE), {RACED: 1, WIDE: 1}.__getitem__) is WIDE


def test_more_programs_fitting_than_launched_count_as_those_launched():
    # neither fits as raced; the second launches 1 program an SM where 5 would fit: 16384 in flight, not 81920
    one = RacedLayout(16384, 16, 1, 2)
    assert fitting_layout((RACED, one), {RACED: 3, one: 5}.__getitem__) is RACED


layouts = st.lists(
    st.builds(
        RacedLayout,
        st.sampled_from([2048, 4096, 8192, 16384]),
        st.sampled_from([4, 8, 16]),
        st.integers(1, 8),
        st.integers(1, 8),
    ),  # fmt: skip
    min_size=1,
    max_size=4,
    unique=True,
)


@given(layouts, st.data())
def test_the_first_that_fits_as_raced_else_the_most_in_flight(candidates, data):
    fit = {lay: data.draw(st.integers(0, 10)) for lay in candidates}
    got = fitting_layout(candidates, fit.__getitem__)
    fitting = [lay for lay in candidates if min(fit[lay], lay.per_sm) >= lay.fit]
    if fitting:
        assert got is fitting[0]
    else:
        in_flight = [min(fit[lay], lay.per_sm) * lay.chunk for lay in candidates]
        assert got is candidates[in_flight.index(max(in_flight))]


def test_a_compile_that_fails_keeps_the_raced_layout_and_says_why():
    """The fit check is an optimisation: where the offline compile fails (no ptxas, a moved compiler API) the dispatch
    keeps the raced layout and a RuntimeWarning names the reason, once."""

    def broken(*args):
        raise FileNotFoundError("ptxas")

    layouts = (RACED, WIDE)
    with pytest.warns(RuntimeWarning, match="could not compile rmsnorm-test's wide-row kernel.*ptxas"):
        got = split_rows.fitted_layout("rmsnorm-test", layouts, 1024, 81920, torch.float16, broken)
    assert got is RACED
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # kept: no second compile, no second warning
        assert split_rows.fitted_layout("rmsnorm-test", layouts, 2048, 81920, torch.float16, broken) is RACED
