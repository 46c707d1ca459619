"""The configs this folder's rules ship, at every point raced here: ``shipped.csv``, a row per (call, race, point), with
the time of the config ``triton_tuned`` takes now (on an H200, 16-bit) in that race, the op's (the config it took at the
race's commit), kprof's fastest config's and the peers'.

    python shipped.py    # reads */rmsnorm/ and */add_rmsnorm/placed_summary.csv, writes shipped.csv; needs kprof, no GPU

The shipped config's name is the one the race script gives it (its ``candidates``). A race does not time a candidate
equal to the op's config twice, so a candidate the race makes but its summary lacks is the op's config there (a
candidate with a wrong result is not timed either: the races' logs report none).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parent / "h200-few-rows")]  # benchmarks/, the folder of table.py

import add_rmsnorm_placed_race  # noqa: E402
import rmsnorm_placed_race  # noqa: E402
from table import rows as race_rows  # noqa: E402

from kprof.kernels.add_rmsnorm import tuned as add_tuned  # noqa: E402
from kprof.kernels.rmsnorm import tuned as rms_tuned  # noqa: E402


def shipped_candidates(race: str, n_rows: int, n: int, dtype: str) -> dict:
    """The race's candidates for the point, with the config an H200 takes now for ``n_rows`` 16-bit rows of ``n`` as
    the op's."""
    if race == "rmsnorm":
        op = rms_tuned.choose_config(n, 2, n_rows, 132, True, True)
        cands = rmsnorm_placed_race.candidates(n, n_rows, op, two_pass=True)
        return cands | rmsnorm_placed_race.candidates(n, n_rows, op, ragged=True)
    op = add_tuned.choose_config(n, 2, n_rows, 132, True, dtype == "fp16", True)
    return add_rmsnorm_placed_race.candidates(n, 2, op)


def with_shipped(row: dict, times: pd.Series) -> dict:
    """``row`` (``table.rows``'s) with the shipped config's name and time and the ratios to the fastest and the peers."""
    n_rows, n = map(int, row["shape"].split("x"))
    cands = shipped_candidates(row["race"], n_rows, n, row["dtype"])
    name = next(k for k, cfg in cands.items() if k != "op" and cfg == cands["op"])
    shipped = times.get(name, times["op"])
    peer = min(times.get("[torch_compile]", float("inf")), times.get("[liger]", float("inf")))
    return row | {
        "shipped": name, "shipped_us": shipped, "shipped_over_best": shipped / row["best_us"],
        "shipped_over_best_peer": shipped / peer, "op_over_best_peer": times["op"] / peer,
    }  # fmt: skip


def main() -> None:
    table = []
    for csv in sorted(HERE.glob("*/*/placed_summary.csv")):
        if csv.parts[-2] not in ("rmsnorm", "add_rmsnorm"):
            continue
        summary = pd.read_csv(csv)
        for row in race_rows(csv):
            point = summary[(summary["shape"] == row["shape"]) & (summary["dtype"] == row["dtype"])]
            table.append(with_shipped(row, point.set_index("candidate")["mean_us"]))
    pd.DataFrame(table).round(3).to_csv(HERE / "shipped.csv", index=False)
    print(f"{len(table)} points -> shipped.csv")


if __name__ == "__main__":
    main()
