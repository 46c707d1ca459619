"""Does a small kernel's ``cold`` time depend on how long the GPU spins before each flush?

    python benchmarks/cold_spin.py --out DIR [--shapes 512x7168,512x6144] [--dtype bf16] [--rounds 4]

``cold`` puts a spin kernel, sized from the call's host time (``1.5 x host_us + 10`` us), before the flush
and the call, so that the call's kernels are queued before the flush ends. ``kprof profile`` sizes it from the
provider's measured host time; the race scripts pass 20 us. For rmsnorm's ``triton_tuned`` and
``torch_compile`` this times the same call with ``host_us`` of 5, 20, 50 and 100 us, in rounds of a fresh
random order, and prints the median cold busy time per (provider, host_us). Writes DIR/cold_spin.csv.
"""

from __future__ import annotations

import random
import statistics

from bench_common import point_args, rmsnorm_points, write_csv

from kprof import timing
from kprof.kernels import discover

HOST_US = (5.0, 20.0, 50.0, 100.0)
PROVIDERS = ("triton_tuned", "torch_compile")


def main() -> int:
    ap = point_args(__doc__, "512x7168,512x6144", rounds=4)
    ap.add_argument("--rep-ms", type=float, default=10.0)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    rng = random.Random(0)
    rows = []
    for shape_s, _, inputs in rmsnorm_points(fam, args):
        fns = {p: (lambda f=fam.providers[p].fn: f(**inputs)) for p in PROVIDERS}
        keys = [(p, h) for p in PROVIDERS for h in HOST_US]
        times: dict[tuple[str, float], list[float]] = {k: [] for k in keys}
        for fn in fns.values():
            fn()
        for _ in range(args.rounds):
            rng.shuffle(keys)
            for p, h in keys:
                res = timing.measure_cupti(fns[p], host_us=h, gpu_us=10.0, rep_ms=args.rep_ms)
                times[(p, h)].append(statistics.median(res.cold.busy_us) if res.cold else float("nan"))
        print(f"== {shape_s} {args.dtype}: median cold busy us over {args.rounds} rounds (each a median of calls)")
        for p in PROVIDERS:
            meds = [statistics.median(times[(p, h)]) for h in HOST_US]
            print(f"  {p:<16}" + "".join(f"  host_us {h:>5.0f}: {m:6.2f}" for h, m in zip(HOST_US, meds)))
            rows += [
                {"shape": shape_s, "dtype": args.dtype, "provider": p, "host_us": h, "cold_us": m}
                for h, m in zip(HOST_US, meds)
            ]
    write_csv(args.out / "cold_spin.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
