"""Does a small kernel's ``cold`` time depend on where its input and output lie in device memory?

    python benchmarks/placement.py --out DIR [--shapes 512x3072,512x6144] [--dtype bf16] [--rounds 3]

One arena tensor holds x and y at chosen byte offsets: x at 0, 0.5, 1 or 1.5 MiB past a 2 MiB boundary, y
right after x plus a gap of 0, 0.5, 1, 1.5 or 64 MiB. For each placement rmsnorm's ``triton_tuned`` (writing
into y through ``out=``) and torch.compile (x placed, its output from the allocator) are timed with
``timing.measure_cupti``, every placement in each of ``--rounds`` rounds of a fresh random order, so a
placement that is slow in every round is slow because of where the tensors are, not because of when it ran.
Prints the median cold busy time per placement and writes DIR/placement.csv.
"""

from __future__ import annotations

import random
import statistics

import torch
from bench_common import point_args, rmsnorm_points, write_csv

from kprof import timing
from kprof.kernels import discover

MIB = 1 << 20
X_OFFSETS = (0, MIB // 2, MIB, 3 * MIB // 2)
GAPS = (0, MIB // 2, MIB, 3 * MIB // 2, 64 * MIB)


def _placed(arena: torch.Tensor, offset: int, like: torch.Tensor) -> torch.Tensor:
    n = like.numel() * like.element_size()
    return arena[offset : offset + n].view(like.dtype).view(like.shape)


def main() -> int:
    ap = point_args(__doc__, "512x3072,512x6144")
    ap.add_argument("--rep-ms", type=float, default=20.0)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    tuned, compiled = fam.providers["triton_tuned"].fn, fam.providers["torch_compile"].fn
    rng = random.Random(0)
    rows = []
    for shape_s, _, inputs in rmsnorm_points(fam, args):
        x0, w, eps = inputs["x"], inputs["weight"], inputs["eps"]
        nbytes = x0.numel() * x0.element_size()
        arena = torch.empty(2 * MIB + 2 * nbytes + 70 * MIB, dtype=torch.uint8, device="cuda")
        base = (-arena.data_ptr()) % (2 * MIB)  # the first 2 MiB boundary in the arena
        fns, xs = {}, {}
        for ox in X_OFFSETS:
            x = _placed(arena, base + ox, x0)
            for gap in GAPS:
                y = _placed(arena, base + ox + nbytes + gap, x0)
                fns[("triton_tuned", ox, gap)], xs[("triton_tuned", ox, gap)] = (
                    (lambda x=x, y=y: tuned(x, w, eps, out=y)),
                    x,
                )
            fns[("torch_compile", ox, 0)], xs[("torch_compile", ox, 0)] = (lambda x=x: compiled(x, w, eps)), x
        for k, fn in fns.items():
            xs[k].copy_(x0)
            fn()
        keys = list(fns)
        times: dict = {k: [] for k in keys}
        for _ in range(args.rounds):
            rng.shuffle(keys)
            for k in keys:
                xs[k].copy_(x0)  # x holds its own data again: placements share the arena
                res = timing.measure_cupti(fns[k], host_us=20.0, gpu_us=10.0, rep_ms=args.rep_ms)
                times[k].append(statistics.median(res.cold.busy_us) if res.cold else float("nan"))
        print(f"== {shape_s} {args.dtype}: median cold busy us per placement (x offset past 2 MiB, gap to y)")
        for k in sorted(keys):
            med = statistics.median(times[k])
            print(
                f"  {k[0]:<14} x+{k[1] / MIB:4.2f} MiB  gap {k[2] / MIB:5.2f} MiB  {med:6.3f}  "
                + " ".join(f"{t:.3f}" for t in times[k]),
                flush=True,
            )
            rows.append(
                {
                    "shape": shape_s,
                    "dtype": args.dtype,
                    "provider": k[0],
                    "x_offset_mib": k[1] / MIB,
                    "gap_mib": k[2] / MIB,
                    "cold_us": med,
                    "rounds": " ".join(f"{t:.3f}" for t in times[k]),
                }
            )
        del arena
    write_csv(args.out / "placement.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
