"""The configs this folder's rules ship, at every point raced here: ``shipped.csv``, a row per (call, race, point), with
the time of the config ``triton_tuned`` takes now (on an H200, 16-bit) in that race, the op's (the config it took at the
race's commit), kprof's fastest config's and the peers'.

    python shipped.py    # reads */rmsnorm/ and */add_rmsnorm/placed_summary.csv, writes shipped.csv; needs kprof, no GPU

A race does not time a candidate equal to the op's config twice: where the shipped config is missing from a race it is
the op's config there.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kprof.kernels.add_rmsnorm import tuned as add_tuned
from kprof.kernels.rmsnorm import tuned as rms_tuned

HERE = Path(__file__).parent


def rmsnorm_name(cfg: rms_tuned.Config) -> str | None:
    """``rmsnorm_placed_race.py``'s name for ``cfg``."""
    if cfg.kernel == "two_pass":
        return f"2pass r{cfg.rows} c{cfg.block_n} w{cfg.num_warps}{' const' if cfg.cols_const else ''}"
    if cfg.kernel == "rows" and not cfg.tail:
        return f"r{cfg.rows} w{cfg.num_warps} {'hints' if cfg.hints else 'plain'}"
    return None


def add_rmsnorm_name(cfg: add_tuned.Config) -> str | None:
    """``add_rmsnorm_placed_race.py``'s name for ``cfg``."""
    if cfg.kernel == "looped":
        return f"looped c{cfg.block_n} w{cfg.num_warps}{' const' if cfg.cols_const else ''}{' hints' if cfg.hints else ''}"
    if cfg.kernel in ("one_row", "rows"):
        return f"{cfg.kernel} w{cfg.num_warps}"
    return None


def shipped_name(race: str, n_rows: int, n: int, dtype: str) -> str | None:
    """The race's name for the config an H200 takes now for ``n_rows`` 16-bit rows of ``n``."""
    if race == "rmsnorm":
        return rmsnorm_name(rms_tuned.choose_config(n, 2, n_rows, 132, True, True))
    return add_rmsnorm_name(add_tuned.choose_config(n, 2, n_rows, 132, True, dtype == "fp16", True))


def rows(csv: Path) -> list[dict]:
    """One row per (shape, dtype) of a race's summary."""
    out = []
    for (shape, dtype), g in pd.read_csv(csv).groupby(["shape", "dtype"], sort=False):
        n_rows, n = map(int, shape.split("x"))
        times = g.set_index("candidate")["mean_us"]
        own = times[~times.index.str.startswith("[")]
        name = shipped_name(csv.parts[-2], n_rows, n, dtype)
        shipped = times.get(name, times["op"])
        peer = min(times.get("[torch_compile]", float("inf")), times.get("[liger]", float("inf")))
        out.append({
            "call": csv.parts[-3], "race": csv.parts[-2], "shape": shape, "dtype": dtype, "shipped": name,
            "shipped_us": shipped, "op_us": times["op"], "best": own.idxmin(), "best_us": own.min(),
            "shipped_over_best": shipped / own.min(), "op_over_best": times["op"] / own.min(),
            "torch_compile_us": times.get("[torch_compile]"), "liger_us": times.get("[liger]"),
            "shipped_over_best_peer": shipped / peer, "op_over_best_peer": times["op"] / peer,
        })  # fmt: skip
    return out


def main() -> None:
    races = [csv for csv in sorted(HERE.glob("*/*/placed_summary.csv")) if csv.parts[-2] in ("rmsnorm", "add_rmsnorm")]
    table = [r for csv in races for r in rows(csv)]
    pd.DataFrame(table).round(3).to_csv(HERE / "shipped.csv", index=False)
    print(f"{len(table)} points -> shipped.csv")


if __name__ == "__main__":
    main()
