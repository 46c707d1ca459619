"""Counter states that the interpreter tests of the wide-row kernels start their meetings from
(``kernels/lib/split_rows.py``): fresh counters, as a process's first launch on a stream finds them, and counters a
long-running process leaves, whose tickets and rows are about to wrap around int32; and the state a launch must
leave them in."""

from __future__ import annotations

import torch

from kprof.kernels.lib.split_rows import GENERATION

STARTS = ["fresh", "wrapping"]


def meeting_start(n_rows: int, start: str) -> tuple[torch.Tensor, int]:
    """(the meeting's ``1 + n_rows`` int32 counters, the ticket base) at ``start``."""
    if start == "fresh":
        return torch.zeros(1 + n_rows, dtype=torch.int32), 0
    base = 2**31 - 2  # the launch's third ticket is drawn at 2**31 - 1 + 1, which wraps to -2**31
    rows = [(2**31 - GENERATION.value) if i % 2 else -GENERATION.value for i in range(n_rows)]  # to -2**31 and 0
    return torch.tensor([base, *rows], dtype=torch.int32), base


def meeting_end(before: torch.Tensor, tickets: int) -> list[int]:
    """The counters after a launch from ``before`` that drew ``tickets`` tickets: every row one ``GENERATION`` on,
    the ticket counter ``tickets`` on, both wrapping as int32."""
    return [_int32(int(before[0]) + tickets)] + [_int32(int(c) + GENERATION.value) for c in before[1:]]


def _int32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31
