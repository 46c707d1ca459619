"""Score rmsnorm_linear's product rule (``kernels/rmsnorm_linear/tuned.py``) against races of both products:
at every point raced with ``triton_two_kernels`` and ``triton_norm_cublas``, the time of the product the rule
picks over the faster of the two. The two earlier rules, kept here for comparison, are scored beside it.

    python benchmarks/rmsnorm_linear_rule.py STORE.db [STORE.db ...]

Every run in each store is read; a point raced in several runs of one dtype takes its last run's times.
"""

from __future__ import annotations

import argparse

import pandas as pd

from kprof.kernels.rmsnorm_linear.tuned import cublas_product
from kprof.store import RunStore

TIE = 1.02


def first_rule(m: int, k: int, n: int) -> bool:
    """The rule before the fp16 race: Triton at decode sizes with K > 2048 whatever N."""
    return m >= 512 or (n <= 11008 if m >= 128 else k <= 2048)


def autotuned_rule(m: int, k: int, n: int) -> bool:
    """The rule while the Triton product was autotuned at every size (aeeb4ad): cuBLAS for every weight of up
    to 11008 columns under 512 rows, and under 128 rows at K <= 2048."""
    return m >= 512 or n <= 11008 or (m < 128 and k <= 2048)


def times(paths: list[str]) -> pd.DataFrame:
    frames = []
    for path in paths:
        st = RunStore(path)
        for run in reversed(list(st.runs()["id"])):  # oldest first: later runs win below
            frames.append(st.metrics(run))
    m = pd.concat(frames, ignore_index=True)
    m = m[m["provider"].isin(["triton_two_kernels", "triton_norm_cublas"])]
    m = m.drop_duplicates(["shape", "dtype", "provider"], keep="last")
    return m.pivot_table(index=["dtype", "shape"], columns="provider", values="gpu_time_us").dropna()


def score(t: pd.DataFrame, rule) -> pd.Series:
    ratios = {}
    for (dtype, shape), row in t.iterrows():
        m, k, n = (int(v) for v in shape.split("x"))
        pick = row["triton_norm_cublas"] if rule(m, k, n) else row["triton_two_kernels"]
        ratios[(dtype, shape)] = pick / min(row["triton_two_kernels"], row["triton_norm_cublas"])
    return pd.Series(ratios)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+")
    t = times(ap.parse_args().stores)
    for name, rule in (("rule", cublas_product), ("autotuned", autotuned_rule), ("first rule", first_rule)):
        r = score(t, rule)
        for dtype, d in r.groupby(level=0):
            misses = d[d > TIE].sort_values(ascending=False)
            listed = ", ".join(f"{s} {v:.3f}" for (_, s), v in misses.items())
            print(
                f"{name:10s} {dtype}: within {TIE}x of the faster at {int((d <= TIE).sum())} of {len(d)} points, "
                f"worst {d.max():.3f}x; misses: {listed or 'none'}"
            )


if __name__ == "__main__":
    main()
