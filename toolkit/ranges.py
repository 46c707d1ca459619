"""kprof case ranges: the `kprof::<case id>` labels the harness and replay open, and attributing launches to them.

kprof's harness and replay child open a range named ``kprof::<case id>`` (record_function, NVTX, roctx or
a Proton scope) around the measured calls of each case. A launch call belongs to the innermost such range
open on the same host thread at the moment the call started. Ranges with other names are ignored.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable

import pandas as pd

CASE_PREFIX = "kprof::"


def case_name(label: object) -> str | None:
    """``kprof::rmsnorm/x/64x4096/bf16`` -> ``rmsnorm/x/64x4096/bf16``; anything else -> None."""
    text = str(label) if label is not None else ""
    return text[len(CASE_PREFIX) :] if text.startswith(CASE_PREFIX) else None


def _lane(key: object) -> Hashable:
    """A thread key as a dict key: a damaged trace can hold a list or an object where a process or thread
    id belongs, which then names a lane of its own (by its text) instead of failing the lookup."""
    if isinstance(key, tuple):
        return tuple(_lane(k) for k in key)
    try:
        hash(key)
    except TypeError:
        return repr(key)
    return key  # type: ignore[return-value]


class RangeIndex:
    """Case ranges per host thread, for point lookups."""

    def __init__(self, ranges: Iterable[tuple[Hashable, int, int, str]]) -> None:
        by_key: dict[Hashable, list[tuple[int, int, str]]] = {}
        for key, start, end, label in ranges:
            case = case_name(label)
            if case is not None and start is not None and end is not None:
                by_key.setdefault(_lane(key), []).append((int(start), int(end), case))
        self._spans = {k: sorted(v) for k, v in by_key.items()}
        self._starts = {k: [s for s, _, _ in v] for k, v in self._spans.items()}

    def __len__(self) -> int:
        return sum(len(v) for v in self._spans.values())

    def case_at(self, key: Hashable, t: object) -> object:
        """The innermost case range on ``key`` containing time ``t``, or ``pd.NA``."""
        if t is None or t is pd.NA:
            return pd.NA
        key = _lane(key)
        spans = self._spans.get(key)
        if not spans:
            return pd.NA
        t = int(t)  # type: ignore[call-overload]
        i = bisect.bisect_right(self._starts[key], t) - 1
        # the latest-starting range that contains t is the innermost one; an earlier sibling that ended
        # before t is skipped, an enclosing one is found further back (a run has at most a few hundred)
        for start, end, case in reversed(spans[: i + 1]):
            if start <= t <= end:
                return case
        return pd.NA

    def cases(self, keys: Iterable[Hashable], times: Iterable[object]) -> list[object]:
        return [self.case_at(k, t) for k, t in zip(keys, times)]
