"""Every placed race of this folder in one table: ``points.csv``, a row per (race, point), with the op's time (the
config ``triton_tuned`` took at that commit), kprof's fastest config and its time, and the peers'.

    python table.py [DIR]    # DIR (this folder if none): reads DIR/*/*/placed_summary.csv, writes DIR/points.csv
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
PEERS = ["[triton_tuned]", "[triton_one_row]", "[torch_compile]", "[liger]"]


def rows(csv: Path) -> list[dict]:
    """One row per (shape, dtype) of a race's summary."""
    out = []
    for (shape, dtype), g in pd.read_csv(csv).groupby(["shape", "dtype"], sort=False):
        times = g.set_index("candidate")["mean_us"]
        own = times[~times.index.str.startswith("[")]
        row = {"call": csv.parts[-3], "race": csv.parts[-2], "shape": shape, "dtype": dtype}
        row |= {
            "op_us": times["op"],
            "best": own.idxmin(),
            "best_us": own.min(),
            "op_over_best": times["op"] / own.min(),
        }
        row |= {peer.strip("[]") + "_us": times.get(peer) for peer in PEERS}
        out.append(row)
    return out


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    table = [r for csv in sorted(root.glob("*/*/placed_summary.csv")) for r in rows(csv)]
    pd.DataFrame(table).round(3).to_csv(root / "points.csv", index=False)
    print(f"{len(table)} points -> points.csv")


if __name__ == "__main__":
    main()
