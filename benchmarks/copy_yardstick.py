"""What a bare copy of the same bytes reaches at each rmsnorm shape: the yardstick for "% of the copy
ceiling" at sizes where the 1 GiB ceiling cannot be reached by anything that reads and writes once.

    python benchmarks/copy_yardstick.py --out DIR [--shapes 16384x4096,32768x8192,4096x4096,64x4096] [--rounds 5]

Per shape (bf16): ``y.copy_(x)`` of an x the size of rmsnorm's input (the same bytes read and written as
rmsnorm moves, less its weight), rmsnorm's ``triton_tuned`` and ``torch_compile``, timed in interleaved
rounds with the harness's GPU timer (L2 flushed); each as GB/s and as % of the 1 GiB copy ceiling measured
in the same process (kprof.device.measure_copy_ceiling, what every kprof run stores). Writes
DIR/copy_yardstick.csv.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
from bench_common import print_race, race_rows, write_csv

from kprof.device import measure_copy_ceiling
from kprof.harness import BenchSettings, race
from kprof.kernels import discover


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="16384x4096,32768x8192,4096x4096,64x4096")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    ceiling = measure_copy_ceiling().gbps
    print(f"copy ceiling (1 GiB): {ceiling:.0f} GB/s", flush=True)
    rows = []
    for spec in args.shapes.split(","):
        shape = tuple(int(v) for v in spec.split("x"))
        inp = fam.make_inputs(shape, "bf16", "cuda", 5)
        x = inp["x"]
        y = torch.empty_like(x)
        moved = 2 * x.numel() * x.element_size()
        fns = {
            "copy_ of x": lambda: y.copy_(x),
            "[triton_tuned]": lambda: fam.providers["triton_tuned"].fn(**inp),
            "[torch_compile]": lambda: fam.providers["torch_compile"].fn(**inp),
        }
        times = race(fns, BenchSettings(graph=False), rounds=args.rounds)
        print_race(spec, times)
        for r in race_rows(spec, times):
            t = statistics.median(times[r["variant"]])
            r.update(
                gbps=moved / (t * 1e-6) / 1e9,
                pct_of_ceiling=100 * moved / (t * 1e-6) / 1e9 / ceiling,
                ceiling_gbps=ceiling,
            )
            print(f"  {r['variant']:<28} {r['gbps']:7.0f} GB/s  {r['pct_of_ceiling']:5.1f}% of the ceiling", flush=True)
            rows.append(r)
    write_csv(args.out / "copy_yardstick.csv", rows)


if __name__ == "__main__":
    main()
