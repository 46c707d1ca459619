"""Does a small kernel's ``cold`` time depend on where the flush buffer lies, within one process?

    python benchmarks/flush_buffers.py --out DIR [--shapes 512x3072,512x8192] [--dtype bf16] [--buffers 6]

``cold`` reads a buffer of four times L2 before each call (``timing.L2Flush``), allocated once per process.
Here ``--buffers`` flush buffers are allocated side by side in one process, and rmsnorm's ``triton_tuned``
and torch.compile are timed after each (``timing.measure_cupti`` with that buffer as the process's flush),
on the same inputs, in ``--rounds`` rounds of a fresh random order. Buffers that split into fast and slow
groups say the flush's placement decides what the call finds in L2. Prints the median cold busy time per
(provider, buffer) and writes DIR/flush_buffers.csv.
"""

from __future__ import annotations

import random
import statistics

from bench_common import point_args, rmsnorm_points, write_csv

from kprof import timing
from kprof.kernels import discover

PROVIDERS = ("triton_tuned", "torch_compile")


def main() -> int:
    ap = point_args(__doc__, "512x3072,512x8192")
    ap.add_argument("--buffers", type=int, default=6)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    flushes = [timing.L2Flush() for _ in range(args.buffers)]
    rng = random.Random(0)
    rows = []
    for shape_s, _, inputs in rmsnorm_points(fam, args):
        fns = {p: (lambda f=fam.providers[p].fn: f(**inputs)) for p in PROVIDERS}
        for fn in fns.values():
            fn()
        keys = [(p, b) for p in PROVIDERS for b in range(args.buffers)]
        times: dict[tuple[str, int], list[float]] = {k: [] for k in keys}
        for _ in range(args.rounds):
            rng.shuffle(keys)
            for p, b in keys:
                timing._FLUSH["obj"] = flushes[b]  # the process's flush, for this measurement
                res = timing.measure_cupti(fns[p], host_us=20.0, gpu_us=10.0, rep_ms=20.0)
                times[(p, b)].append(statistics.median(res.cold.busy_us) if res.cold else float("nan"))
        print(f"== {shape_s} {args.dtype}: median cold busy us after each flush buffer", flush=True)
        for p in PROVIDERS:
            meds = [statistics.median(times[(p, b)]) for b in range(args.buffers)]
            print(f"  {p:<14}" + "".join(f"  #{b}@{flushes[b].buf.data_ptr():#x} {m:6.3f}" for b, m in enumerate(meds)))
            rows += [
                {"shape": shape_s, "dtype": args.dtype, "provider": p, "buffer": b,
                 "buffer_addr": hex(flushes[b].buf.data_ptr()), "cold_us": m,
                 "rounds": " ".join(f"{t:.3f}" for t in times[(p, b)])}
                for b, m in enumerate(meds)
            ]  # fmt: skip
    write_csv(args.out / "flush_buffers.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
