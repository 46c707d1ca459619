"""Counter states that the interpreter tests of the wide-row kernels start their meetings from
(``kernels/lib/split_rows.py``): fresh counters, as a process's first launch on a stream finds them, and counters a
long-running process leaves, whose tickets and rows are about to wrap around int32; and the state a launch must
leave them in; and slots of the slotted meeting left by earlier launches."""

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


def stale_slots(n_rows: int, splits: int) -> torch.Tensor:
    """The slotted meeting's ``n_rows`` x ``splits`` int64 slots as earlier launches leave them: generations 5 and 6,
    and sums of 1e30 and NaN, which would show in the output if a launch of generation 7 or later read them as its
    own."""
    sums = torch.tensor([1e30, float("nan")], dtype=torch.float32).view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    slots = sums.repeat(n_rows) | (torch.arange(2 * n_rows) % 2 + 5) << 32
    return slots[: n_rows * splits].contiguous()
