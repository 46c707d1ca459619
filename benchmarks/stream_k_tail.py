"""Experiment: rmsnorm_linear's TMA product with its last, partial wave shared out along K (stream-K), against the
same product with whole tiles in that wave and cuBLAS's ``x @ W``, at the prefill points where the last wave holds
more than half the SMs (``tiles.tail_split`` leaves it whole: at N 5504, 88 of 132 tiles, 2.67 waves run as 3).

    python benchmarks/stream_k_tail.py --out DIR [--points fp16:2048x2048x5504,...] [--rounds 5] [--bias]

Candidates, per point (M x K x N): ``product-stream-k`` and ``product-whole`` (the product alone, rstd given),
``op-stream-k`` and ``op-whole`` (the rstd kernel and the product, PDL where the GPU has it, by
``rstd_epilogue.tma_op`` as the op launches them), ``[x@W]`` (cuBLAS); with ``--caps 176,...`` also the stream-K
product and op with the product's registers capped (``maxnreg``), ``product-stream-k-r176``, ``op-stream-k-r176``. Each is checked against the float64
product first; cold (kprof's flush; CUDA events, or with ``--timer cupti`` kprof's cold mode), rounds interleaved in a
random order. The compiled product's
registers, spills and shared memory are printed for every variant, with the rstd kernel's, and how many of the rstd
kernel's programs fit on an SM beside one product program (registers and shared memory). The stream-K kernel's ticket counters are checked
back at zero after the race."""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

import torch
from bench_common import checked_against, cold_rounds, print_notes, print_race, write_csv

from kprof.kernels.lib import launching, tiles
from kprof.kernels.rmsnorm_linear import rstd_epilogue as re
from kprof.occupancy import BlockShape, blocks_beside

POINTS = ",".join(
    f"{dt}:{m}x{k}x{n}"
    for dt in ("bf16", "fp16")
    for m, k, n in (
        (2048, 2048, 5504),
        (2048, 4096, 5504),
        (2048, 8192, 5504),
        (2048, 2048, 14336),
        (2048, 4096, 14336),
        (2048, 2048, 28672),
        (8192, 2048, 5504),
        (8192, 4096, 5504),
        (8192, 2048, 11008),
    )
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def candidates(
    dtype: torch.dtype, m: int, k: int, n: int, caps: tuple[int, ...] = (), bias: bool = False
) -> tuple[dict, dict, str]:
    """The point's candidates, the float64 reference of each (y = (x @ W') * rstd + b; x @ W' + b for cuBLAS's, b
    with ``bias`` only), and the plans' description."""
    x = torch.randn(m, k, device="cuda", dtype=dtype) * (1 + torch.rand(m, 1, device="cuda", dtype=dtype))
    wf = torch.randn(k, n, device="cuda", dtype=dtype) / k**0.5
    eps = 1e-6
    rstd = torch.rsqrt(x.float().pow(2).mean(dim=1) + eps)
    y = torch.empty(m, n, device="cuda", dtype=dtype)
    pdl = launching.pdl_ready(x)
    b = torch.randn(n, device="cuda", dtype=dtype) if bias else None
    ref = (x.double() @ wf.double()) * rstd.double()[:, None] + (b.double() if bias else 0.0)

    def product(stream_k: bool, cap: int | None = None):
        def run() -> torch.Tensor:
            re.tma_launcher(x, wf, b, y, rstd, stream_k=stream_k, maxnreg=cap)()
            return y

        return run

    def op(stream_k: bool, cap: int | None = None):
        def run() -> torch.Tensor:
            r = torch.empty(m, dtype=torch.float32, device="cuda")
            re.tma_op(x, wf, b, y, r, eps, pdl=pdl, stream_k=stream_k, maxnreg=cap)
            return y

        return run

    sk = re.tma_plan(m, k, n, tiles.persistent_sms(x), stream_k=True)
    plan = f"tiles {sk.tiles} programs {sk.programs} split {sk.split} parts {sk.parts}"
    fns = {
        "product-stream-k": product(True),
        "product-whole": product(False),
        "op-stream-k": op(True),
        "op-whole": op(False),
        "[x@W]": (lambda: torch.addmm(b, x, wf)) if bias else (lambda: x @ wf),
    }
    for cap in caps:
        fns[f"product-stream-k-r{cap}"] = product(True, cap)
        fns[f"op-stream-k-r{cap}"] = op(True, cap)
    refs = {name: ref for name in fns}
    refs["[x@W]"] = x.double() @ wf.double() + (b.double() if bias else 0.0)
    return fns, refs, plan


def compiled_variants(fn, names: tuple[str, ...]) -> list[tuple[dict, object]]:
    """(the named constexprs, compiled kernel) of every variant of ``fn`` this process compiled."""
    index = {name: fn.arg_names.index(name) for name in names}
    found = []
    for cache in fn.device_caches.values():
        for kernel in cache[0].values():
            constants = kernel.src.constants
            found.append(({name: constants.get((i,), constants.get(name, "?")) for name, i in index.items()}, kernel))
    return found


def block_shape(kernel) -> BlockShape:
    """What one program of a compiled kernel takes on an SM."""
    return BlockShape(kernel.metadata.num_warps * 32, kernel.n_regs, kernel.metadata.shared)


def compiled_info() -> list[str]:
    """Registers, spills and shared memory of every compiled variant of the product kernel (by its STREAM_K, PDL,
    HAS_BIAS and register cap) and of the rstd kernel, how many rstd programs fit on an SM beside one product program
    (``kprof.occupancy.blocks_beside``, sm_90's limits), or why they could not be read from this Triton's caches."""
    lines = []
    try:
        rstd = compiled_variants(re.row_rstd_kernel, ("PDL", "ROWS"))
        for named, kernel in rstd:
            lines.append(
                f"  rstd kernel PDL={named['PDL']} ROWS={named['ROWS']} {kernel.metadata.num_warps} warps: "
                f"{kernel.n_regs} registers, {kernel.metadata.shared} B shared"
            )
        for named, kernel in compiled_variants(re.tma_product_kernel, ("STREAM_K", "PDL", "HAS_BIAS")):
            beside = [
                f"{blocks_beside((block_shape(kernel),), block_shape(rk))} of ROWS={rnamed['ROWS']}"
                for rnamed, rk in rstd
            ]
            lines.append(
                f"  product STREAM_K={named['STREAM_K']} PDL={named['PDL']} HAS_BIAS={named['HAS_BIAS']} "
                f"maxnreg={getattr(kernel.metadata, 'maxnreg', None)}: {kernel.n_regs} registers, {kernel.n_spills} "
                f"spilled, {kernel.metadata.shared} B shared; rstd programs beside one: "
                f"{', '.join(beside) or 'no rstd kernel compiled'}"
            )
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
        lines.append(f"  compiled variants not read: {type(exc).__name__}: {exc}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--points", default=POINTS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bias", action="store_true", help="every candidate adds a bias (the family's inputs have one)")
    ap.add_argument("--caps", default="", help="registers a thread to cap the stream-K product at, e.g. 176,168")
    ap.add_argument("--calls", type=int, default=10, help="cold calls per candidate per round (events)")
    ap.add_argument(
        "--timer",
        choices=("events", "cupti"),
        default="events",
        help="cold calls timed by CUDA events, or by kprof's cold mode (CUPTI busy time, calls at a low SM clock set "
        "aside), as `kprof profile` times them",
    )
    args = ap.parse_args()
    rng = random.Random(0)
    torch.manual_seed(0)
    rows, summary = [], []
    for point in args.points.split(","):
        dt, shape = point.split(":")
        m, k, n = (int(v) for v in shape.split("x"))
        caps = tuple(int(c) for c in args.caps.split(",") if c)
        every, refs, plan = candidates(DTYPES[dt], m, k, n, caps, args.bias)
        fns, notes = {}, {}
        for name, fn in every.items():
            kept, why = checked_against({name: fn}, refs[name])
            fns.update(kept)
            notes.update(why)
        times = cold_rounds(fns, args.rounds, rng, args.calls, args.timer)
        print_race(f"{dt} {shape}: {plan}", times, top=8)
        print_notes(notes)
        med = {name: statistics.median(v) for name, v in times.items()}
        for name, v in times.items():
            rows.append(
                {
                    "dtype": dt,
                    "shape": shape,
                    "plan": plan,
                    "candidate": name,
                    "median_us": med[name],
                    "rounds": " ".join(f"{u:.2f}" for u in v),
                }
            )
        cublas = med.get("[x@W]", float("nan"))
        summary.append(
            (dt, shape, plan, *(med.get(c, float("nan")) for c in ("product-whole", "product-stream-k")), cublas)
            + tuple(med.get(c, float("nan")) for c in ("op-whole", "op-stream-k"))
        )
    counters = launching.ticket_counters(torch.empty(0, device="cuda"), 1)
    print(f"ticket counters back at zero: {bool((counters == 0).all())} ({counters.numel()})")
    print("\n".join(compiled_info()))
    write_csv(args.out / "stream_k_tail.csv", rows)
    print(
        "\n| dtype | point | plan | product whole | product stream-K | x@W | whole / x@W | stream-K / x@W "
        "| op whole / x@W | op stream-K / x@W |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    for dt, shape, plan, pw, ps, cb, ow, os_ in summary:
        print(
            f"| {dt} | {shape} | {plan} | {pw:.2f} | {ps:.2f} | {cb:.2f} | {pw / cb:.3f} | {ps / cb:.3f} "
            f"| {ow / cb:.3f} | {os_ / cb:.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
