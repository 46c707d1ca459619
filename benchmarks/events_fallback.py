"""How far does each CUDA-event timer read from the `cold` CUPTI time of the same call, in one process?

    python benchmarks/events_fallback.py --out DIR [--rounds 5] [--calls 40]

When CUPTI gives no records, `kprof profile` falls back to CUDA events around each call
(``kprof.harness.time_gpu``). Until this was measured, that fallback flushed the L2 as do_bench does, by zeroing
Triton's 256 MB buffer; it now uses kprof's read-only flush, as the route races' timer
(``kprof.timing.cold_event_times_us``) does. This times the shipped fallback, the do_bench flush (kept here for
comparison) and the route races' timer against ``kprof.timing.cold_time_us`` (CUPTI busy time after the
read-only flush), for single-kernel calls from a few µs to a few hundred and a multi-kernel one, the methods in
a fresh random order each round; prints per call the median of each and its offset from CUPTI. Writes
DIR/events_fallback.csv.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable
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
METHODS = ("cupti", "time_gpu", "events_zero_flush", "cold_event_times_us")


def zero_flush_times_us(fn: Callable[[], object], calls: int, host_us: float) -> list[float]:
    """CUDA events around each call after do_bench's flush (Triton's buffer zeroed) and a spin."""
    import torch
    from triton import runtime

    drv = runtime.driver.active
    cache = drv.get_empty_cache_for_benchmark()
    cycles = int((1.5 * host_us + 20.0) * 2e3)
    marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
    for start, end in marks:
        drv.clear_cache(cache)
        torch.cuda._sleep(cycles)
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [1000.0 * start.elapsed_time(end) for start, end in marks]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=40, help="calls per round of the two events timers timed here")
    ap.add_argument("--dtype", default="bf16")
    args = ap.parse_args()

    from kprof import timing
    from kprof.harness import BenchSettings, time_gpu, time_host
    from kprof.kernels import discover

    fams = discover()
    settings = BenchSettings(graph=False)
    rng = random.Random(0)
    rows = []
    print(f"{'call':44s} {'cupti':>8s}" + "".join(f"{m:>28s}" for m in METHODS[1:]) + "   (us, medians)")
    for family, provider, shape in CASES:
        fam = fams[family]
        inputs = fam.make_inputs(shape, args.dtype, "cuda", seed=1)
        fn = lambda f=fam.providers[provider].fn, inputs=inputs: f(**inputs)  # noqa: E731
        fn()
        host = statistics.median(time_host(fn, settings))
        got: dict[str, list[float]] = {m: [] for m in METHODS}
        for _ in range(args.rounds):
            order = list(METHODS)
            rng.shuffle(order)
            for m in order:
                if m == "cupti":
                    got[m].append(timing.cold_time_us(fn, rep_ms=10.0)[0])
                elif m == "time_gpu":
                    got[m].append(1e3 * statistics.median(time_gpu(fn, settings, host_us=host)))
                elif m == "events_zero_flush":
                    got[m].append(statistics.median(zero_flush_times_us(fn, args.calls, host)))
                else:
                    got[m].append(statistics.median(timing.cold_event_times_us(fn, args.calls)))
        med = {m: statistics.median(v) for m, v in got.items()}
        name = f"{family}/{provider}/{'x'.join(map(str, shape))}"
        print(
            f"{name:44s} {med['cupti']:8.2f}"
            + "".join(f"{med[m]:20.2f} ({med[m] - med['cupti']:+6.2f})" for m in METHODS[1:])
        )
        for m, v in got.items():
            rows += [{"call": name, "method": m, "round": i, "us": t, "host_us": host} for i, t in enumerate(v)]
    write_csv(args.out / "events_fallback.csv", rows)


if __name__ == "__main__":
    main()
