"""Do large calls' cold times move with the SM clock the power cap sets, and does idling between calls hold it?

    python benchmarks/power_cap.py --out DIR [--family rmsnorm_linear] [--dtype fp16]
        [--shapes 8192x4096x14336,...] [--providers cublas_xw,triton_tuned,triton_norm_cublas]
        [--idle 0,1,4] [--rounds 3] [--rep-ms 40]

``benchmarks/large_placement.py`` found one call at one place in memory 1-13% apart between rounds, and
``nvidia-smi`` showed the software power cap active with the SM clock anywhere from 1380 to 1980 MHz. Each cold
call in kprof's ``cold`` mode follows a GPU spin of a known number of cycles (``timing._spin_cycles``), so the
spin's recorded duration gives the SM clock just before that call. This script times every (provider, idle)
with ``timing.measure_cupti``, ``--idle K`` lengthening each spin by K times the call's own time (the GPU
mostly idle between calls, so the average power stays further under the cap), in ``--rounds`` rounds of a fresh
random order, and prints, per point, provider and idle: the median cold time over the rounds, how far the
rounds are apart, and the SM clock the spins measured (median, lowest). Every cold call is written to
DIR/power_cap.csv.

``--summarize CSV`` reads such a CSV (gzipped or not) instead and prints, per point and provider, how far apart
the per-round medians are over all cold calls and over the calls at 95% or more of ``--full-mhz`` only, and the
median at full clock.

With ``--trace``, one more session of the last point's first provider, back to back (idle 0) on the GPU the
rounds left hot, is kept as a Chrome trace ``DIR/timing_power_capped.json.gz`` with what the direct Kineto
path computed from it (``DIR/timing_power_capped_expected.json``): the CPU tests replay it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import statistics
from pathlib import Path

import torch
from bench_common import write_csv

from kprof import timing
from kprof.kernels import discover

SHAPES = "8192x4096x14336,2048x8192x14336,8192x2048x5504,2048x4096x11008"


def _measured(fn, idle_us: float, gpu_us: float, rep_ms: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(cold busy times us, SM clock MHz each started at) of one session, ``idle_us`` spun before each call."""
    res = timing.measure_cupti(fn, host_us=20.0, gpu_us=gpu_us, rep_ms=rep_ms, idle_us=idle_us)
    return (res.cold.busy_us, res.cold.clock_mhz) if res.cold else ((), ())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--summarize", type=Path, help="a power_cap.csv(.gz) to summarise instead of measuring")
    ap.add_argument("--full-mhz", type=float, default=1980.0, help="the GPU's highest SM clock, for --summarize")
    ap.add_argument("--family", default="rmsnorm_linear")
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--providers", default="cublas_xw,triton_tuned,triton_norm_cublas")
    ap.add_argument("--idle", default="0,1,4", help="extra spin before each cold call, in multiples of the call")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=40.0)
    ap.add_argument("--trace", action="store_true", help="also keep one power-capped session as a Chrome trace")
    args = ap.parse_args()
    if args.summarize:
        return _summarize(args.summarize, args.full_mhz)
    if args.out is None:
        ap.error("--out is required to measure")
    fam = discover()[args.family]
    idles = [float(v) for v in args.idle.split(",")]
    rng = random.Random(0)
    rows: list[dict] = []
    print(f"{'point':<18} {'provider':<20} {'idle':>4} {'cold us':>9} {'rounds':>7} {'clock MHz':>10} {'lowest':>7}")
    for shape_s in args.shapes.split(","):
        inputs = fam.make_inputs(tuple(int(v) for v in shape_s.split("x")), args.dtype, "cuda", 1234)
        calls = {n: (lambda n=n, inputs=inputs: fam.providers[n].fn(**inputs)) for n in args.providers.split(",")}
        rough = {n: timing.cold_time_us(fn, rep_ms=5.0)[0] for n, fn in calls.items()}  # compiles and warms too
        keys = [(n, k) for n in calls for k in idles]
        got: dict[tuple[str, float], list[tuple[float, list[float]]]] = {k: [] for k in keys}
        for r in range(args.rounds):
            rng.shuffle(keys)
            for n, k in keys:
                busy, clocks = _measured(calls[n], k * rough[n], rough[n], args.rep_ms)
                got[(n, k)].append((statistics.median(busy), clocks))
                rows += [
                    {"shape": shape_s, "provider": n, "idle": k, "round": r, "cold_us": b, "spin_clock_mhz": c}
                    for b, c in zip(busy, clocks)
                ]
        for n in calls:
            for k in idles:
                meds = [m for m, _ in got[(n, k)]]
                clocks = [c for _, cs in got[(n, k)] for c in cs]
                print(
                    f"{shape_s:<18} {n:<20} {k:4g} {statistics.median(meds):9.2f} {max(meds) / min(meds) - 1:7.1%} "
                    f"{statistics.median(clocks):10.0f} {min(clocks):7.0f}",
                    flush=True,
                )
        if args.trace and shape_s == args.shapes.split(",")[-1]:
            name = args.providers.split(",")[0]
            _keep_trace(args.out, calls[name], rough[name], f"{args.family}/{name}/{shape_s}/{args.dtype}")
        del calls, inputs
        torch.cuda.empty_cache()
    write_csv(args.out / "power_cap.csv", rows)
    return 0


def _summarize(path: Path, full_mhz: float) -> int:
    import pandas as pd

    d = pd.read_csv(path)
    d["full"] = d["spin_clock_mhz"] >= timing.CLOCK_FULL_FRACTION * full_mhz
    print(f"{'point':<18} {'provider':<20} {'all calls':>10} {'full clock':>11} {'at full, us':>12} {'calls full':>11}")
    for (shape, prov), g in d.groupby(["shape", "provider"], sort=False):
        meds = g.groupby(["idle", "round"])["cold_us"].median()
        full = g[g["full"]].groupby(["idle", "round"])["cold_us"].median()
        print(
            f"{shape:<18} {prov:<20} {meds.max() / meds.min() - 1:10.1%} {full.max() / full.min() - 1:11.1%} "
            f"{g[g['full']]['cold_us'].median():12.2f} {g['full'].mean():11.0%}"
        )
    return 0


def _keep_trace(out: Path, fn, gpu_us: float, case: str) -> None:
    from kprof.device import max_sm_clock_mhz

    out.mkdir(parents=True, exist_ok=True)
    path = out / "timing_power_capped.json"
    kept: list = []

    def collect(run):
        kept.extend(timing.collect_device_records(run, trace_path=path))
        return kept

    host_us = 20.0
    res = timing.measure_cupti(fn, host_us=host_us, gpu_us=gpu_us, rep_ms=40.0, collect=collect)
    with open(path, "rb") as src, gzip.open(f"{path}.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    expected = {
        "case": case,
        "spin_cycles": timing._spin_cycles(host_us),
        "n_cold": sum(timing.FLUSH_KERNEL_NAME in r.name for r in kept) - 1,
        "cold_busy_us": list(res.cold.busy_us) if res.cold else None,
        "clock_mhz": list(res.cold.clock_mhz) if res.cold else None,
        "sm_clock_max": max_sm_clock_mhz(torch.cuda.current_device()),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
    }
    path.unlink()
    (out / "timing_power_capped_expected.json").write_text(json.dumps(expected, indent=1))


if __name__ == "__main__":
    raise SystemExit(main())
