"""Host time of rmsnorm_linear's ``triton_rstd_epilogue`` per call, and where it goes (cProfile).

    python benchmarks/rmsnorm_linear_host.py [--shapes 8x4096x4096,2048x4096x4096] [--calls 200]

For each shape: 20 warm-up calls, then ``--calls`` calls without synchronising (host wall time per call,
and the same with the final synchronize), then the same number under cProfile, whose 28 largest
cumulative entries are printed (the profiler's own overhead inflates them; the ranking is what counts).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import torch

from kprof.kernels import discover


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="8x4096x4096,2048x4096x4096")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    fam = discover()["rmsnorm_linear"]
    fn = fam.providers["triton_rstd_epilogue"].fn
    for spec in args.shapes.split(","):
        shape = tuple(int(v) for v in spec.split("x"))
        inputs = fam.make_inputs(shape, "bf16", "cuda", seed=1)
        for _ in range(20):
            fn(**inputs)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.calls):
            fn(**inputs)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(
            f"{shape} host per call {(t1 - t0) / args.calls * 1e6:.1f} us, "
            f"with sync {(t2 - t0) / args.calls * 1e6:.1f} us",
            flush=True,
        )
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            fn(**inputs)
        prof.disable()
        torch.cuda.synchronize()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(28)


if __name__ == "__main__":
    main()
