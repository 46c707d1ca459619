"""Which step of ``kprof profile``'s case moves a small kernel's ``cold`` time?

    python benchmarks/harness_gap.py --out DIR [--shapes 512x6144,512x7168] [--dtype bf16] [--rounds 3]

At 3-6 us, ``kprof profile`` timed rmsnorm's ``triton_tuned`` about 10% slower than the same
``timing.measure_cupti`` in a script of its own (``cold_spin.py``). This times one case of each provider, in
one process, through each step that ``harness.run_case`` adds on top of the bare measurement, in rounds of a
fresh random order, so that whatever differs between the variants is the step itself:

- ``bare``: the provider on inputs of their own, ``measure_cupti`` with a fixed 20 us host time (the races);
- ``modes``: the case's own inputs (its seed), host time measured first, then ``measure_modes`` (the case's
  timing without its check);
- ``check+modes``: the correctness check (float64 oracle, poisoned allocator) first, then as ``modes``;
- ``recorded+modes``: the check under the launch recorder, as ``run_case`` does, then as ``modes``;
- ``run_case``: ``harness.run_case`` itself (graph timing and peak memory included). Since placements exist
  it times the case at ``BenchSettings.placements`` places in memory; the committed results predate that.

Prints the median cold busy time per (shape, provider, variant) and writes DIR/harness_gap.csv.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable

from bench_common import point_args, write_csv

from kprof import harness, timing
from kprof.kernels import discover
from kprof.registry import Case
from kprof.specialization import recording

PROVIDERS = ("triton_tuned", "torch_compile")
VARIANTS = ("bare", "modes", "check+modes", "recorded+modes", "run_case")


def _median_cold(samples: dict) -> float:
    cold = samples.get("cold") or ()
    return statistics.median(cold) if cold else float("nan")


def _variant(name: str, fam, prov, case: Case, settings: harness.BenchSettings) -> Callable[[], float]:
    def timed_modes(inputs: dict) -> float:
        def call():
            return prov.fn(**inputs)

        rough = harness.rough_gpu_ms(call)
        host = harness.time_host(call, settings, gpu_ms=rough)
        samples, _, _ = harness.measure_modes([harness.Placement(call)], settings, host, rough)
        return _median_cold(samples)

    def case_inputs() -> dict:
        return fam.make_inputs(case.shape, case.dtype, "cuda", harness.case_seed(settings.seed, case))

    def bare() -> float:
        inputs = fam.make_inputs(case.shape, case.dtype, "cuda", 1234)
        res = timing.measure_cupti(lambda: prov.fn(**inputs), host_us=20.0, gpu_us=10.0, rep_ms=settings.rep_ms)
        return statistics.median(res.cold.busy_us) if res.cold else float("nan")

    def modes() -> float:
        return timed_modes(case_inputs())

    def check_modes() -> float:
        inputs = case_inputs()
        harness.check_correctness(fam, prov, case, inputs)
        return timed_modes(inputs)

    def recorded_modes() -> float:
        inputs = case_inputs()
        with recording():
            harness.check_correctness(fam, prov, case, inputs)
        return timed_modes(inputs)

    def run_case() -> float:
        res = harness.run_case(fam, prov, case, device="cuda", settings=settings, timing=True)
        return _median_cold(res.mode_samples_us)

    return {
        "bare": bare,
        "modes": modes,
        "check+modes": check_modes,
        "recorded+modes": recorded_modes,
        "run_case": run_case,
    }[name]


def main() -> int:
    ap = point_args(__doc__, "512x6144,512x7168")
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    settings = harness.BenchSettings()
    rng = random.Random(0)
    rows = []
    for shape_s in args.shapes.split(","):
        shape = tuple(int(v) for v in shape_s.split("x"))
        keys = [(p, v) for p in PROVIDERS for v in VARIANTS]
        fns = {
            (p, v): _variant(v, fam, fam.providers[p], Case("rmsnorm", p, shape, args.dtype), settings) for p, v in keys
        }
        times: dict[tuple[str, str], list[float]] = {k: [] for k in keys}
        for _ in range(args.rounds):
            rng.shuffle(keys)
            for k in keys:
                times[k].append(fns[k]())
        print(f"== {shape_s} {args.dtype}: median cold busy us over {args.rounds} rounds (each a median of calls)")
        for p in PROVIDERS:
            meds = {v: statistics.median(times[(p, v)]) for v in VARIANTS}
            print(f"  {p:<14}" + "".join(f"  {v} {m:6.2f}" for v, m in meds.items()), flush=True)
            rows += [
                {
                    "shape": shape_s,
                    "dtype": args.dtype,
                    "provider": p,
                    "variant": v,
                    "cold_us": meds[v],
                    "rounds": " ".join(f"{t:.3f}" for t in times[(p, v)]),
                }
                for v in VARIANTS
            ]
    write_csv(args.out / "harness_gap.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
