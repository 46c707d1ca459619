"""The H200 gated classes' table: each raced point's time at the H100's choice, the rule before, FAST_MEMORY_MID_ROWS and
kprof's best config, from the three races' CSVs here. Run from this folder: python table.py (writes classes.csv)."""

from pathlib import Path

import pandas as pd

from kprof.kernels.lib import gated

R = str(Path(__file__).resolve().parent) + "/"


def name(c):
    if c.flat:
        return f"flat {c.block_h} w{c.num_warps}"
    return f"tile c{c.block_h} w{c.num_warps}" + (" const" if c.cols_const else "")


def old_rule(h, rows):
    if 512 <= rows <= 1024 and 6144 <= h <= 7168:
        return gated.Config(8192, 1, 16, False, cols_const=True)
    return gated.choose_config(h, 2, rows)


rows_out = []
for sub, machine in (("", "A"), ("edges/", "B"), ("shipped/other-h/", "C")):
    for fam in ("silu_mul", "gelu_mul"):
        d = pd.read_csv(R + sub + fam + "/placed_summary.csv")
        for (shape, dt), g in d.groupby(["shape", "dtype"], sort=False):
            c = dict(zip(g.candidate, g.mean_us))
            n, two = map(int, shape.split()[1].split("x"))
            h = two // 2
            h100 = gated.choose_config(h, 2, n)
            new = gated.choose_config(h, 2, n, fast_memory=True)
            old = old_rule(h, n)
            kp = {k: v for k, v in c.items() if not k.startswith("[")}
            best = min(kp, key=kp.get)
            rows_out.append(
                dict(
                    machine=machine,
                    family=fam,
                    shape=f"{n}x{two}",
                    H=h,
                    dtype=dt,
                    h100=c.get(name(h100), c["op"]),
                    before=c.get(name(old), c["op"]),
                    now=c.get(name(new), c["op"]),
                    new=name(new),
                    best=kp[best],
                    best_name=best,
                    liger=c.get("[liger]"),
                    compile=c.get("[torch_compile]"),
                )
            )
t = pd.DataFrame(rows_out)
t["now/before"] = (t.now / t.before).round(3)
t["now/best"] = (t.now / t.best).round(3)
t.round(3).to_csv(R + "classes.csv", index=False)
print("now/before range", t["now/before"].min(), t["now/before"].max(), "now/best max", t["now/best"].max())
