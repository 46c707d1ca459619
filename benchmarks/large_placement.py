"""Does a large call's ``cold`` time depend on where its tensors lie in device memory?

    python benchmarks/large_placement.py --out DIR [--family rmsnorm_linear] [--dtype fp16]
        [--shapes 2048x2048x5504,...] [--providers triton_tuned,triton_norm_cublas,cublas_xw]
        [--placements 4] [--rounds 3] [--rep-ms 40]

kprof times a case whose tensors total at most ``harness.PLACEMENT_MAX_BYTES`` at several places in memory;
a larger case is timed where its inputs happen to lie. In rmsnorm_linear's prefill grids two providers that
run the same kernels read 0.84-1.09x each other as two cases of one run, and interleaving them in time did not
narrow that. This script separates where from when: each point's inputs are made once, then copied into
``--placements - 1`` memory pools of their own (``harness.relocated``, random spacers before and after, the
call's outputs allocated in the same pool), and every (provider, placement) is timed cold with
``timing.cold_time_us`` in each of ``--rounds`` rounds of a fresh random order. A placement slow in every round
is slow because of where its tensors lie; a spread between rounds at one placement is the machine in time.

Prints, per point and provider, each placement's median over the rounds, how far the placements' medians are
apart, and how far one placement's rounds are apart (the median over placements), and writes every sample to
DIR/large_placement.csv.
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

import torch
from bench_common import write_csv
from rmsnorm_placed_race import places

from kprof import timing
from kprof.kernels import discover

SHAPES = "2048x2048x5504,2048x8192x14336,8192x2048x5504,8192x4096x14336,512x4096x14336,2048x4096x11008"


def _spread(values: list[float]) -> float:
    return max(values) / min(values) - 1


def _places(fam, shape: tuple[int, ...], dtype: str, count: int, rng: random.Random) -> list[tuple]:
    """(inputs, memory pool or None, what to keep alive) for the inputs as made and ``count - 1`` copies."""
    made = places(fam.make_inputs(shape, dtype, "cuda", 1234), count, rng, outputs=0)
    return [(inputs, pool, keep) for inputs, _, pool, keep in made]


def _timed(fn, pool, rep_ms: float) -> float:
    if pool is None:
        return timing.cold_time_us(fn, rep_ms=rep_ms)[0]
    with torch.cuda.use_mem_pool(pool):
        return timing.cold_time_us(fn, rep_ms=rep_ms)[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--family", default="rmsnorm_linear")
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--providers", default="triton_tuned,triton_norm_cublas,cublas_xw")
    ap.add_argument("--placements", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=40.0)
    args = ap.parse_args()
    fam = discover()[args.family]
    names = args.providers.split(",")
    rng = random.Random(0)
    rows: list[dict] = []
    print(f"{'point':<18} {'provider':<20} {'per placement (median of rounds, us)':<44} {'between':>8} {'rounds':>8}")
    for shape_s in args.shapes.split(","):
        shape = tuple(int(v) for v in shape_s.split("x"))
        places = _places(fam, shape, args.dtype, args.placements, rng)
        calls = {
            (n, p): (lambda n=n, inputs=inputs: fam.providers[n].fn(**inputs), pool)
            for n in names
            for p, (inputs, pool, _) in enumerate(places)
        }
        for fn, pool in calls.values():  # compile and warm every call before any is timed
            _timed(fn, pool, 1.0)
        times: dict[tuple[str, int], list[float]] = {k: [] for k in calls}
        for r in range(args.rounds):
            order = list(calls)
            rng.shuffle(order)
            for k in order:
                times[k].append(_timed(*calls[k], args.rep_ms))
                rows.append(
                    {
                        "shape": shape_s,
                        "dtype": args.dtype,
                        "provider": k[0],
                        "placement": k[1],
                        "round": r,
                        "cold_us": times[k][-1],
                    }
                )
        for n in names:
            per = [statistics.median(times[(n, p)]) for p in range(len(places))]
            within = statistics.median(_spread(times[(n, p)]) for p in range(len(places)))
            print(
                f"{shape_s:<18} {n:<20} {' '.join(f'{v:9.2f}' for v in per):<44} {_spread(per):8.1%} {within:8.1%}",
                flush=True,
            )
        del calls, places
        torch.cuda.empty_cache()
    write_csv(args.out / "large_placement.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
