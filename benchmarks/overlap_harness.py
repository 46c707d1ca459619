"""Experiment: what decides whether rmsnorm_linear's stream-K product runs beside its rstd kernel in a timed call.

    python benchmarks/overlap_harness.py --out DIR [--point bf16:8192x8192x5504] [--host-us 20,120,300]

At 8192 rows ``kprof profile`` timed the op's two kernels one after the other with the stream-K product, and beside
each other with whole tiles, where ``stream_k_tail.py --timer cupti`` (the same CUPTI cold mode) timed the stream-K
op overlapped. The two harnesses differ in the spin queued before each cold call (``kprof.timing.measure_cupti``:
1.5x the call's host time plus 10 us; the benchmark assumes 20 us of host time, ``kprof profile`` passes the case's
measured host time) and in the callable (``stream_k_tail.py``'s launches, the family's providers on the family's own
inputs). Here each candidate is timed by ``measure_cupti`` with the spin sized for each host time given:

- ``op-stream-k``, ``op-whole``: the launches ``stream_k_tail.py`` times (``rstd_epilogue.tma_op``: the rstd kernel,
  then the product, PDL where the GPU has it), without a bias as there; ``op-stream-k-bias``: with the family's bias, as
  the providers run;
- ``provider-prepared``, ``provider``: the family's ``triton_rstd_epilogue_prepared`` and ``triton_rstd_epilogue``,
  called as ``kprof profile`` calls them.

Per candidate and spin: the cold busy time, each kernel's median, and the rstd kernel's time over its time alone
(about 1.0: it ran alone, before the product; 1.3-1.5: beside the product)."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
from bench_common import host_us, write_csv
from stream_k_tail import compiled_variants

from kprof.kernels.lib import launching
from kprof.kernels.rmsnorm_linear import rstd_epilogue as re
from kprof.kernels.rmsnorm_linear.family import FAMILY
from kprof.timing import measure_cupti

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def candidates(dtype: str, m: int, k: int, n: int) -> dict:
    """The point's callables (module docstring), every one on inputs of ``dtype``."""
    inputs = FAMILY.make_inputs((m, k, n), dtype, "cuda", 0)
    x, eps = inputs["x"].reshape(m, k), float(inputs["eps"])
    wf = inputs["g"][:, None] * inputs["w"]
    y = torch.empty(m, n, device="cuda", dtype=DTYPES[dtype])
    pdl = launching.pdl_ready(x)

    def op(stream_k: bool, bias: bool = False):
        def run() -> torch.Tensor:
            r = torch.empty(m, dtype=torch.float32, device="cuda")
            re.tma_op(x, wf, inputs["b"] if bias else None, y, r, eps, pdl=pdl, stream_k=stream_k)
            return y

        return run

    def provider(name: str):
        fn = FAMILY.get_provider(name).fn
        return lambda: fn(**inputs)

    return {
        "op-stream-k": op(True),
        "op-whole": op(False),
        "op-stream-k-bias": op(True, bias=True),
        "provider-prepared": provider("triton_rstd_epilogue_prepared"),
        "provider": provider("triton_rstd_epilogue"),
    }


def kernel_medians(cold) -> dict[str, float]:
    """Each kernel's median cold time (us), by name (the first of a name where a call runs it twice)."""
    out: dict[str, float] = {}
    for name, times in zip(cold.kernel_names, cold.kernel_us):
        out.setdefault(name, statistics.median(times))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--point", default="bf16:8192x8192x5504")
    ap.add_argument("--host-us", default="20,120,300", help="host times to size the spin for (us)")
    ap.add_argument("--rep-ms", type=float, default=100.0)
    args = ap.parse_args()
    dt, shape = args.point.split(":")
    m, k, n = (int(v) for v in shape.split("x"))
    fns = candidates(dt, m, k, n)
    for fn in fns.values():
        fn()
    torch.cuda.synchronize()
    r = torch.empty(m, dtype=torch.float32, device="cuda")
    x = FAMILY.make_inputs((m, k, n), dt, "cuda", 1)["x"].reshape(m, k)
    pdl = launching.pdl_ready(x)  # the grid the op runs (overlapped_rstd_grid), with nothing launched after it
    alone = measure_cupti(lambda: re.launch_row_rstd(x, r, 1e-6, pdl=pdl), host_us=20.0, gpu_us=100.0, rep_ms=50)
    rstd_alone = statistics.median(alone.cold.busy_us)
    rows = []
    print(f"{dt} {shape}: the rstd kernel alone (PDL={pdl}'s grid) {rstd_alone:.1f} us")
    print(
        "| candidate | its host time (us) | spin sized for (us) | cold busy (us) | kernels (median us) | rstd / alone |"
    )
    print("|---|---:|---:|---:|---|---:|")
    for name, fn in fns.items():
        host = host_us(fn, 20)
        for spin_host in [float(h) for h in args.host_us.split(",")] + [host]:
            res = measure_cupti(fn, host_us=spin_host, gpu_us=1000.0, rep_ms=args.rep_ms)
            if res.cold is None:
                print(f"| {name} | {host:.1f} | {spin_host:.0f} | not timed: {res.note} | | |")
                continue
            kernels = kernel_medians(res.cold)
            rstd = kernels.get("_row_rstd_kernel", float("nan"))
            busy = statistics.median(res.cold.busy_us)
            listed = ", ".join(f"{kn} {us:.1f}" for kn, us in kernels.items())
            print(f"| {name} | {host:.1f} | {spin_host:.0f} | {busy:.1f} | {listed} | {rstd / rstd_alone:.2f} |")
            rows.append(
                {
                    "point": f"{dt}:{shape}",
                    "candidate": name,
                    "host_us": round(host, 2),
                    "spin_host_us": spin_host,
                    "cold_busy_us": round(busy, 2),
                    "kernels": listed,
                    "rstd_over_alone": round(rstd / rstd_alone, 3),
                }
            )
    for named, kernel in compiled_variants(re.tma_product_kernel, ("STREAM_K", "PDL", "HAS_BIAS")):
        print(f"  product {named}: {kernel.n_regs} registers, {kernel.metadata.shared} B shared")
    for named, kernel in compiled_variants(re.row_rstd_kernel, ("PDL", "ROWS")):
        print(f"  rstd kernel {named}, {kernel.metadata.num_warps} warps: {kernel.n_regs} registers")
    write_csv(args.out / "overlap_harness.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
