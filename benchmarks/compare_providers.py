"""Is provider A no slower than provider B? Median ratio with a bootstrap 95% interval and a one-sided
Mann-Whitney U test on the stored per-call GPU samples of one run (`kprof show RUN --samples FILE`).

    python benchmarks/compare_providers.py SAMPLES.csv[.gz] --a triton_tuned --b torch_F,torch_compile,liger \
        --dtype bf16 --shapes 4096x4096,16384x4096 [--csv OUT]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu


def compare(samples: pd.DataFrame, a: str, b: str, family: str, shape: str, dtype: str, seed: int = 0) -> dict:
    g = samples[samples["kind"] == "gpu"]
    ta = g[g["case"] == f"{family}/{a}/{shape}/{dtype}"]["value"].to_numpy() * 1e3
    tb = g[g["case"] == f"{family}/{b}/{shape}/{dtype}"]["value"].to_numpy() * 1e3
    if len(ta) == 0 or len(tb) == 0:
        return {"shape": shape, "a": a, "b": b, "note": "no samples"}
    rng = np.random.default_rng(seed)
    boot = [np.median(rng.choice(ta, ta.size)) / np.median(rng.choice(tb, tb.size)) for _ in range(2000)]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {
        "shape": shape,
        "dtype": dtype,
        "a": a,
        "b": b,
        "a_us": np.median(ta),
        "b_us": np.median(tb),
        "ratio_a_over_b": np.median(ta) / np.median(tb),
        "ci95_lo": lo,
        "ci95_hi": hi,
        "p_a_slower": mannwhitneyu(ta, tb, alternative="greater").pvalue,
        "n_a": ta.size,
        "n_b": tb.size,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("samples")
    ap.add_argument("--a", default="triton_tuned")
    ap.add_argument("--b", default="torch_F,torch_compile,liger")
    ap.add_argument("--family", default="rmsnorm")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--shapes", default="4096x4096,16384x4096,32768x8192,4096x1024,64x4096,1x4096")
    ap.add_argument("--csv")
    args = ap.parse_args()
    s = pd.read_csv(args.samples)
    rows = [
        compare(s, args.a, b, args.family, sh, args.dtype) for sh in args.shapes.split(",") for b in args.b.split(",")
    ]
    df = pd.DataFrame(rows)
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if args.csv:
        df.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
