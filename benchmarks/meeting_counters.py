"""What the wide-row kernels' counters cost when each call zeroes them first, against counters kept between calls.

    python benchmarks/meeting_counters.py --out DIR [--dtypes bf16,fp16] [--families rmsnorm,add_rmsnorm] \
        [--rounds 3] [--rep-ms 5] [--shapes 512x65536,...]

rmsnorm's and add_rmsnorm's cooperative and pipelined kernels (``kernels/lib/split_rows.py``) meet at counters: a
ticket counter and one counter per row. Until the counters were kept per device and stream, every call first
launched a zeroing of ``1 + rows`` of them (``torch.zeros``), about 1 µs of GPU time in front of a kernel of
25-1600 µs. Candidates, each checked against the float64 oracle first, then timed ``cold`` in ``--rounds``
rounds in a fresh random order:

- ``[auto] kept``: the family's ``triton_tuned`` (the dispatch, as ``kprof.kernels.ops`` runs it): the counters
  kept between calls, no launch but the kernel;
- ``[auto] zeroed``: the same call with a zeroed buffer of counters made for it, as every call did before;
- ``[copy]``: a device copy of the bytes the op moves.

Writes DIR/times.csv (every time) and DIR/summary.csv (medians, kept / zeroed, each against the copy).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from typing import Any

import torch
from bench_common import (
    checked,
    copy_of_op,
    print_notes,
    print_race,
    race_rounds,
    race_rows,
    tuned_y,
    wide_row_args,
    wide_row_points,
    write_csv,
)

from kprof.kernels.lib import split_rows


def zeroed(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with the meeting's counters made and zeroed for each call (a ``torch.zeros`` launch before the
    kernel, ticket base 0) and its workspace allocated, as before they were kept."""

    def fresh_buffers(t: torch.Tensor, count: int, partials: int) -> tuple[torch.Tensor, int, torch.Tensor]:
        counters = torch.zeros(count, dtype=torch.int32, device=t.device)
        return counters, 0, torch.empty(partials, dtype=torch.float32, device=t.device)

    def call() -> Any:
        kept = split_rows.meeting_buffers  # what the meeting launches take their buffers from
        split_rows.meeting_buffers = fresh_buffers
        try:
            return fn()
        finally:
            split_rows.meeting_buffers = kept

    return call


def main() -> int:
    args = wide_row_args(__doc__, "bf16,fp16", 300.0).parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    rows, summary = [], []
    for shape, family, _dtype, fam, inputs, ref in wide_row_points(args):
        kept = tuned_y(fam, inputs)
        y = torch.empty_like(inputs["x"])
        fns, notes = checked({"[auto] kept": (kept, ref), "[auto] zeroed": (zeroed(kept), ref)}, y)
        fns["[copy]"] = copy_of_op(inputs, y, torch.empty_like(y) if family == "add_rmsnorm" else None)
        times = race_rounds(fns, args.rounds, args.rep_ms, rng)
        print_race(shape, times, top=5)
        print_notes(notes)
        rows += race_rows(shape, times)
        med = {k: statistics.median(v) for k, v in times.items()}
        kept_us, zeroed_us, copy_us = med.get("[auto] kept"), med.get("[auto] zeroed"), med["[copy]"]
        summary.append(
            {
                "shape": shape,
                "kept_us": kept_us,
                "zeroed_us": zeroed_us,
                "copy_us": copy_us,
                "kept_over_zeroed": kept_us / zeroed_us if kept_us and zeroed_us else None,
                "kept_of_copy": copy_us / kept_us if kept_us else None,
                "zeroed_of_copy": copy_us / zeroed_us if zeroed_us else None,
            }
        )
        del fns, y
    write_csv(args.out / "times.csv", rows)
    write_csv(args.out / "summary.csv", summary)
    print(f"{'shape':<30} {'kept':>9} {'zeroed':>9} {'copy':>9} {'kept/zer':>9} {'kept%':>6} {'zer%':>6}")
    for s in summary:
        print(
            f"{s['shape']:<30} {s['kept_us'] or 0:9.1f} {s['zeroed_us'] or 0:9.1f} {s['copy_us']:9.1f} "
            f"{s['kept_over_zeroed'] or 0:9.3f} {100 * (s['kept_of_copy'] or 0):6.1f} {100 * (s['zeroed_of_copy'] or 0):6.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
