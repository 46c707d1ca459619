"""Does a small kernel's ``cold`` time depend on where its code was loaded, within one process?

    python benchmarks/code_copies.py --out DIR [--shapes 512x3072,512x8192] [--dtype bf16] [--copies 8]

rmsnorm's ``triton_tuned`` reads about 0.5 us slower at 512 rows in some processes than in others, from the
process's first measurement on, with torch.compile unchanged (``profile_then_bare.py``). Each copy here is a
new ``JITFunction`` of the same kernel source: the same binary (Triton's cache), loaded as a module of its
own at another address. Every copy runs the dispatch's configuration on the same inputs, timed with
``timing.measure_cupti`` in ``--rounds`` rounds of a fresh random order, beside the ``triton_tuned`` provider
and torch.compile. Copies that split into fast and slow groups say the code's placement decides. Prints the
median cold busy time per copy and writes DIR/code_copies.csv.
"""

from __future__ import annotations

import random
import statistics

import torch
import triton
from bench_common import point_args, rmsnorm_points, write_csv

from kprof import timing
from kprof.kernels import discover
from kprof.kernels.rmsnorm.tuned import _rmsnorm_rows_kernel, config_for


def main() -> int:
    ap = point_args(__doc__, "512x3072,512x8192")
    ap.add_argument("--copies", type=int, default=8)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    rng = random.Random(0)
    rows = []
    for shape_s, shape, inputs in rmsnorm_points(fam, args):
        x, w, eps = inputs["x"], inputs["weight"], inputs["eps"]
        y = torch.empty_like(x)
        cfg = config_for(shape[1], x.element_size(), shape[0], x.device.index)
        assert cfg.kernel == "rows", cfg
        grid = (triton.cdiv(shape[0], cfg.rows),)
        fns = {}
        for c in range(args.copies):
            k = triton.JITFunction(_rmsnorm_rows_kernel.fn)
            fns[f"copy {c}"] = lambda k=k: k[grid](
                x, w, y, x.stride(0), y.stride(0), shape[0], shape[1], eps,
                BLOCK_N=cfg.block_n, ROWS=cfg.rows, HINTS=cfg.hints, I64=False, num_warps=cfg.num_warps,
            )  # fmt: skip
        for p in ("triton_tuned", "torch_compile"):
            fns[f"[{p}]"] = lambda f=fam.providers[p].fn: f(x, w, eps)
        for fn in fns.values():
            fn()
        keys = list(fns)
        times: dict[str, list[float]] = {k: [] for k in keys}
        for _ in range(args.rounds):
            rng.shuffle(keys)
            for k in keys:
                res = timing.measure_cupti(fns[k], host_us=20.0, gpu_us=10.0, rep_ms=20.0)
                times[k].append(statistics.median(res.cold.busy_us) if res.cold else float("nan"))
        print(f"== {shape_s} {args.dtype} ({cfg}): median cold busy us per copy of the kernel", flush=True)
        for k in sorted(times):
            med = statistics.median(times[k])
            print(f"  {k:<16} {med:6.3f}  " + " ".join(f"{t:.3f}" for t in times[k]), flush=True)
            rows.append({"shape": shape_s, "dtype": args.dtype, "variant": k, "cold_us": med,
                         "rounds": " ".join(f"{t:.3f}" for t in times[k])})  # fmt: skip
    write_csv(args.out / "code_copies.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
