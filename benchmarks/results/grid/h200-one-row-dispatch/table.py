"""The H200 dispatch classes of this folder, each raced point's time at the class's launch, at the launch before it (the
H100's choice, or the mid-row class through the tile kernel) and at kprof's fastest config, from the placed races' CSVs
here. A candidate equal to the race's own op config is raced under the label ``op``, so a missing label reads ``op``.
Run from this folder: python table.py (writes classes.csv, prints the ranges)."""

from dataclasses import replace
from pathlib import Path

import pandas as pd

from kprof.kernels.add_rmsnorm import tuned
from kprof.kernels.lib import gated

R = Path(__file__).resolve().parent
RACES = ("race", "shipped", "wide-fp16", "wide-rows", "rows-64")  # one H200 each, in the order they ran


def gated_name(c: gated.Config) -> str:
    if c.one_row:
        return f"one_row w{c.num_warps}"
    if c.flat:
        return f"flat {c.block_h} w{c.num_warps}"
    return f"tile c{c.block_h} w{c.num_warps}" + (" const" if c.cols_const else "")


def gated_pair(h: int, rows: int) -> tuple[str, str]:
    """(the class's launch now, the launch before it) for ``rows`` 16-bit rows of H on an H200."""
    now = gated.choose_config(h, 2, rows, fast_memory=True)
    if now.one_row:
        return gated_name(now), gated_name(replace(now, one_row=False))
    if any(r.covers(h, rows) for r in gated.FAST_MEMORY_FEW_ROWS):
        return gated_name(now), gated_name(gated.choose_config(h, 2, rows))
    return gated_name(now), gated_name(now)


def add_name(c: tuned.Config) -> str:
    return f"{c.kernel} w{c.num_warps}"


def add_pair(n: int, rows: int, fp16: bool) -> tuple[str, str]:
    now = tuned.choose_config(n, 2, rows, fp16=fp16, fast_memory=True)
    if now.kernel == "one_row" and rows <= 64:
        return add_name(now), add_name(tuned.choose_config(n, 2, rows, fp16=fp16))
    return add_name(now), add_name(now)


rows_out = []
for race in RACES:
    for fam in ("gelu_mul", "silu_mul", "add_rmsnorm"):
        path = R / race / fam / "placed_summary.csv"
        if not path.exists():
            continue
        d = pd.read_csv(path)
        for (shape, dt), g in d.groupby(["shape", "dtype"], sort=False):
            c = dict(zip(g.candidate, g.mean_us))
            rows, width = map(int, shape.split()[-1].split("x"))
            now, before = gated_pair(width // 2, rows) if fam != "add_rmsnorm" else add_pair(width, rows, dt == "fp16")
            kp = {k: v for k, v in c.items() if not k.startswith("[")}
            best = min(kp, key=kp.get)
            rows_out.append(
                dict(race=race, family=fam, shape=f"{rows}x{width}", dtype=dt, now_launch=now,
                     now=c.get(now, c["op"]), before_launch=before, before=c.get(before, c["op"]), best_launch=best,
                     best=kp[best], torch_compile=c.get("[torch_compile]"), liger=c.get("[liger]"))
            )  # fmt: skip
t = pd.DataFrame(rows_out)
t["now/before"] = (t.now / t.before).round(3)
t["now/best"] = (t.now / t.best).round(3)
t.round(3).to_csv(R / "classes.csv", index=False)
changed = t[t.now_launch != t.before_launch]
print(f"{len(t)} raced points, {len(changed)} where the launch changed")
for fam, g in changed.groupby("family"):
    print(f"{fam}: now/before {g['now/before'].min():.3f}-{g['now/before'].max():.3f}, "
          f"now/best {g['now/best'].min():.3f}-{g['now/best'].max():.3f}")  # fmt: skip
print(changed.sort_values("now/before", ascending=False).head(8).to_string(index=False))
