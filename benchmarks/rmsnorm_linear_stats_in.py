"""Why does the shipped statistics-in product of rmsnorm_linear run slower than the experiment it came from?

``matmul_ws.py`` measured its in-kernel-statistics variant (no bias) at 98.8 us at 2048x4096x4096 on two
H100s; the shipped kernel (``rstd_epilogue.tma_product(..., stats_in=True)``) then read 100.4 us with a
bias and 105.6 without one on a third. This races, in one process: cuBLAS, the experiment's variant, the
shipped product with and without bias, and the shipped provider with and without bias; then prints each
compiled product kernel's registers, spills and a count of its TTGIR operations. The rstd kernel followed
by the product (the path before) runs in the same race, so each machine compares the two designs.

    python benchmarks/rmsnorm_linear_stats_in.py --out DIR [--shapes 2048x4096x4096,1536x4096x4096] [--rounds 5]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

import torch

from bench_common import checked, print_notes, print_race, race_rows, write_csv
from kprof.harness import BenchSettings, race
from kprof.kernels import discover
from kprof.kernels.rmsnorm_linear import rstd_epilogue
from kprof.kernels.rmsnorm_linear.fused import folded_weight
import matmul_ws


def compiled_kernels(jit_fn) -> list:
    """Every CompiledKernel the JIT function holds (Triton 3.6 and 3.9 keep them in ``device_caches``)."""
    out = []
    for cache in getattr(jit_fn, "device_caches", {}).values():
        kernels = cache[0] if isinstance(cache, tuple) else cache
        out += list(kernels.values())
    return out


def describe(kernel) -> str:
    ttgir = kernel.asm.get("ttgir", "")
    ops = Counter(re.findall(r"\b(tt[gn]?g?\.[a-z_]+)", ttgir))
    try:  # the constexpr values, where this Triton keeps the source object
        consts = {k: v for k, v in kernel.src.constants.items() if not isinstance(v, type(None))}
    except AttributeError:
        consts = {}
    head = f"regs {kernel.n_regs} spills {kernel.n_spills} shared {kernel.metadata.shared} consts {consts}"
    return head + "\n    " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="2048x4096x4096,1536x4096x4096")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for spec in args.shapes.split(","):
        m, k, n = (int(v) for v in spec.split("x"))
        fam = discover()["rmsnorm_linear"]
        inputs = fam.make_inputs((m, k, n), "bf16", "cuda", seed=1)
        x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
        ref = fam.oracle(**inputs)
        ref_nobias = ref - b.double()
        wf = folded_weight(g, w)
        y = torch.empty(m, n, dtype=x.dtype, device="cuda")
        r = torch.empty(m, dtype=torch.float32, device="cuda")
        bar = torch.zeros(2, dtype=torch.int32, device="cuda")
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        variant = next(v for v in matmul_ws.ROUND_2 if v.name == "pers rstd_in sub s4")
        provider = fam.providers["triton_rstd_epilogue"].fn
        candidates = {
            "experiment (no bias)": (matmul_ws.variant_call(variant, x, wf, y, r, bar, eps, 0, sms, True), ref_nobias),
            "shipped product + bias": (lambda: (rstd_epilogue.tma_product(x, wf, b, y, r, eps, stats_in=True), y)[1], ref),
            "shipped product (no bias)": (lambda: (rstd_epilogue.tma_product(x, wf, None, y, r, eps, stats_in=True), y)[1],
                                          ref_nobias),
        }
        fns, notes = checked(candidates, y)

        def rstd_kernel_path():  # the path taken before statistics moved into the product
            rstd_epilogue.row_rstd(x, r, eps)
            rstd_epilogue.tma_product(x, wf, b, y, r, eps)
            return y
        fns["[rstd kernel + product + bias]"] = rstd_kernel_path
        fns["[provider + bias]"] = lambda: provider(x, g, w, b, eps)
        fns["[provider, no bias]"] = lambda: provider(x, g, w, None, eps)
        fns["[cublas x@W]"] = lambda: x @ w
        times = race(fns, BenchSettings(graph=False), rounds=args.rounds)
        print_race(spec, times, top=12)
        print_notes(notes)
        rows += race_rows(spec, times)
    write_csv(args.out / "rmsnorm_linear_stats_in.csv", rows)
    for name, fn in (("experiment", matmul_ws._product_kernel), ("shipped", rstd_epilogue._tma_product_kernel)):
        for kernel in compiled_kernels(fn):
            print(f"{name}: {describe(kernel)}", flush=True)


if __name__ == "__main__":
    main()
