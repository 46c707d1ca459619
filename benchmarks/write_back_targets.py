"""Where counting the write-back could turn a memory-bound target or verdict, read from runs that measured it.

    python benchmarks/write_back_targets.py STORE [STORE ...] [--csv OUT.csv]

Each STORE (a ``kprof profile`` run store, plain or ``.gz``) holds runs of one family each, with ``triton_tuned``, a
peer and the ``copy_bytes`` yardstick at each point. Per point it prints: the version's cold time and the write-back
each side left in L2 (``cold_writeback_us``); the ratio to the copy by cold times and with the write-back counted;
each side's ``cold_with_writeback_noise``; whether the counted ratio lies on the other side of the family's target;
whether that is past the cold ratio's own tolerance alone (the rule ``kprof grid`` applied before the counted times'
spread was part of it) and past the counted times' spread too (the rule now); and ``kprof grid``'s target and
verdict. Nothing is measured here: it reads the stores, on the CPU.
"""

from __future__ import annotations

import argparse
import gzip
import math
import sys
import tempfile
from pathlib import Path

import pandas as pd

from kprof.grid import counted_spread, grid_table, pair_spread, with_writeback
from kprof.kernels import discover
from kprof.store import RunStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import write_csv  # noqa: E402


def _open(path: Path, tmp: Path) -> RunStore:
    if path.suffix == ".gz":
        plain = tmp / path.stem
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        path = plain
    return RunStore(path, create=False)


def point_rows(m: pd.DataFrame, family: str) -> list[dict]:
    """One row a point of one run's metrics (``m``): the figures above, against the family's targets."""
    targets = discover()[family].grid_targets()
    table = grid_table(m, "triton_tuned", targets=targets).set_index(["shape", "dtype"])
    rows = []
    for (shape, dtype), r in table.iterrows():
        g = m[(m["shape"] == shape) & (m["dtype"] == dtype) & (m["status"] == "ok")]
        by = {p: g[g["provider"] == p].iloc[0] for p in ("triton_tuned", "copy_bytes") if (g["provider"] == p).any()}
        if len(by) < 2:
            continue
        kp, yard = by["triton_tuned"], by["copy_bytes"]
        target = targets.for_point(shape, str(kp["bound"]), float(kp["bytes"]))
        if target is None or not hasattr(target, "ratio"):
            continue
        cold, counted = float(kp["cold_us"]) / float(yard["cold_us"]), with_writeback(kp, yard)
        other_side = (counted <= target.ratio) != (cold <= target.ratio)
        gap = abs(counted - target.ratio) / target.ratio
        rows.append(
            {
                "family": family,
                "dtype": dtype,
                "shape": shape,
                "cold_us": round(float(kp["cold_us"]), 2),
                "left_us": round(float(kp["cold_writeback_us"]), 2),
                "copy_left_us": round(float(yard["cold_writeback_us"]), 2),
                "vs_copy_cold": round(cold, 3),
                "vs_copy_counted": round(counted, 3),
                "noise_counted": round(float(kp.get("cold_with_writeback_noise", math.nan)), 3),
                "copy_noise_counted": round(float(yard.get("cold_with_writeback_noise", math.nan)), 3),
                "other_side": other_side,
                "past_cold_tolerance": other_side and gap > max(pair_spread(kp, yard), 0.0),
                "past_counted_spread": other_side and gap > counted_spread(pair_spread(kp, yard), kp, yard),
                "target_met": r["target_met"],
                "verdict": r["verdict"],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args(argv)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.stores:
            st = _open(path, Path(tmp))
            for run in st.runs()["id"]:
                m = st.metrics(run)
                rows += point_rows(m, str(m["family"].iloc[0]))
    if not rows:
        print("no point with triton_tuned, copy_bytes and a yardstick target", file=sys.stderr)
        return 1
    df = pd.DataFrame(rows)
    print(df.to_string(index=False))
    print(
        f"\n{len(df)} points: counted ratio on the other side of the target at {int(df['other_side'].sum())}, past "
        f"the cold tolerance alone at {int(df['past_cold_tolerance'].sum())}, past the counted times' spread at "
        f"{int(df['past_counted_spread'].sum())}"
    )
    if args.csv:
        write_csv(args.csv, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
