"""How far does each CUDA-event timer read from the `cold` CUPTI time of the same call, in one process?

    python benchmarks/events_fallback.py --out DIR [--rounds 5] [--calls 40]

When CUPTI gives no records, `kprof profile` falls back to CUDA events around each call
(``kprof.harness.time_gpu``: do_bench's method, Triton's flush buffer zeroed before each call). The route races
of the ops API time with ``kprof.timing.cold_event_times_us`` instead (kprof's read-only flush behind a spin).
This times both against ``kprof.timing.cold_time_us`` (CUPTI busy time after the read-only flush) for
single-kernel calls from a few µs to a few hundred and a multi-kernel one, the three methods in a fresh random
order each round, and prints per call the median of each and the offsets from CUPTI. Writes DIR/events_fallback.csv.
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

from bench_common import write_csv

CASES = (  # family, provider, shape
    ("rmsnorm", "triton_tuned", (64, 4096)),
    ("rmsnorm", "triton_tuned", (4096, 4096)),
    ("rmsnorm", "triton_tuned", (16384, 4096)),
    ("rmsnorm", "torch_eager", (64, 4096)),
    ("silu_mul", "triton_tuned", (4096, 8192)),
    ("swiglu", "triton_tuned", (16, 2048, 5504)),
    ("swiglu", "triton_tuned", (16, 4096, 11008)),
    ("swiglu", "triton_tuned", (2048, 2048, 5504)),
)
METHODS = ("cupti", "events_zero_flush", "events_read_flush")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=40, help="calls per round of the read-flush events timer")
    ap.add_argument("--dtype", default="bf16")
    args = ap.parse_args()

    from kprof import timing
    from kprof.harness import BenchSettings, time_gpu, time_host
    from kprof.kernels import discover

    fams = discover()
    settings = BenchSettings(graph=False)
    rng = random.Random(0)
    rows = []
    print(f"{'call':44s} {'cupti':>9s} {'zero-flush events':>18s} {'read-flush events':>18s}   (us, medians)")
    for family, provider, shape in CASES:
        fam = fams[family]
        inputs = fam.make_inputs(shape, args.dtype, "cuda", seed=1)
        fn = lambda fam=fam, inputs=inputs: fam.providers[provider].fn(**inputs)  # noqa: E731
        fn()
        host = statistics.median(time_host(fn, settings))
        got: dict[str, list[float]] = {m: [] for m in METHODS}
        for _ in range(args.rounds):
            order = list(METHODS)
            rng.shuffle(order)
            for m in order:
                if m == "cupti":
                    got[m].append(timing.cold_time_us(fn, rep_ms=10.0)[0])
                elif m == "events_zero_flush":
                    got[m].append(1e3 * statistics.median(time_gpu(fn, settings, host_us=host)))
                else:
                    got[m].append(statistics.median(timing.cold_event_times_us(fn, args.calls)))
        med = {m: statistics.median(v) for m, v in got.items()}
        name = f"{family}/{provider}/{'x'.join(map(str, shape))}"
        print(
            f"{name:44s} {med['cupti']:9.2f} {med['events_zero_flush']:9.2f} ({med['events_zero_flush'] - med['cupti']:+6.2f})"
            f" {med['events_read_flush']:9.2f} ({med['events_read_flush'] - med['cupti']:+6.2f})"
        )
        for m, v in got.items():
            rows += [{"call": name, "method": m, "round": i, "us": t, "host_us": host} for i, t in enumerate(v)]
    write_csv(args.out / "events_fallback.csv", rows)


if __name__ == "__main__":
    main()
