"""Experiment: rmsnorm_linear's rstd kernel and product overlapped by programmatic dependent launch (PDL).

The product launched with ``launch_pdl=True`` may start while the rstd kernel runs: its K loops read only
x and W', and it waits (``griddepcontrol.wait``) before its first epilogue reads rstd. The rstd kernel
lets it start as soon as each of its programs has begun. With few rstd programs (one or two per SM,
each looping over row blocks) a product program fits beside them on every SM from the start - if the
SM's split of L1 and shared memory lets it: the TMA product needs 128 KB of shared memory, and an SM
configured for the rstd kernel's (tiny) needs cannot take it until it drains. "carveout" variants set the
rstd kernel's preferred carveout to all shared memory (cuFuncSetAttribute through ctypes) first.

    python benchmarks/rmsnorm_linear_pdl.py --out DIR [--shapes 2048x4096x4096,...] [--rounds 5]

Every contender is checked against the float64 oracle first (a wrong one is reported and not timed),
then all are timed in interleaved rounds in one process (kprof.harness.race), bf16, L2 flushed.
Writes DIR/rmsnorm_linear_pdl.csv.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
import triton
from bench_common import checked, print_notes, print_race, race_rows, write_csv

from kprof.harness import BenchSettings, race
from kprof.kernels import discover
from kprof.kernels.lib import launching
from kprof.kernels.rmsnorm_linear import rstd_epilogue as re

# (carveout, ROWS, programs, warps) of the rstd kernel; programs None: one per row block (512 at 2048
# rows, ROWS 4). Sweeps 1-4 are device calls 1-4 of the results README (call 1 ran this script's first
# form, which named its variants "PDL, rstd programs N"); 0: none, the shipped provider (its grid from
# rstd_epilogue.overlapped_rstd_grid) against the peers.
SWEEPS = {
    0: (),
    1: tuple((False, 4, p, 4) for p in (None, 132, 264, 528)),
    2: (
        (False, 4, None, 4),
        (True, 4, None, 4),
        (True, 4, 264, 4),
        (True, 4, 132, 4),
        (True, 8, 132, 4),
        (True, 2, 264, 4),
    ),
    3: ((False, 4, None, 4),) + tuple((True, r, p, 4) for r in (1, 2, 4, 8) for p in (66, 132, 264, 396, 528)),
    4: tuple((True, r, p, w) for r, p in ((4, 132), (2, 132), (2, 264)) for w in (1, 2, 4, 8)),
}
# the plain variants launch their own copy of the kernel, so its functions never get the carveout
_plain_rstd = triton.jit(re.row_rstd_kernel.fn)


def rstd_launch(x, rstd, eps, *, pdl: bool, carveout: bool, rows: int, programs: int | None, warps: int) -> None:
    m, k = x.shape
    blocks = triton.cdiv(m, rows)
    kernel = re.row_rstd_kernel if carveout else _plain_rstd
    compiled = kernel[(min(blocks, programs or blocks),)](
        x,
        rstd,
        m,
        k,
        x.stride(0),
        x.stride(1),
        float(eps),
        ROWS=rows,
        BLOCK_K=min(1024, triton.next_power_of_2(k)),
        PDL=pdl,
        num_warps=warps,
    )
    if carveout:
        launching.prefer_shared_memory(compiled)  # from the second call on (the first: the check call)


def graph_check(fam, shape: tuple[int, int, int]) -> None:
    """The provider (PDL launches included) captured in a CUDA graph, replayed after new inputs were copied
    into the captured ones: the result must match the oracle of the new inputs."""
    fn = fam.providers["triton_rstd_epilogue"].fn
    first, second = (fam.make_inputs(shape, "bf16", "cuda", seed=s) for s in (3, 4))
    fn(**first)  # compile, fold, tune outside the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        out = fn(**first)
    first["x"].copy_(second["x"])
    graph.replay()
    torch.cuda.synchronize()
    ref = fam.oracle(**{**first, "x": second["x"]})
    err = ((out.double() - ref).norm() / ref.norm()).item()
    print(f"  CUDA graph replay on new x: rel err {err:.2e} ({'ok' if err < 1e-2 else 'WRONG'})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="2048x4096x4096,8192x4096x4096,8x4096x4096,1000x1000x3000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sweep", type=int, default=0, choices=sorted(SWEEPS))
    ap.add_argument(
        "--graph-check",
        action="store_true",
        help="also capture the provider in a CUDA graph, replay it on new inputs and check the result",
    )
    args = ap.parse_args()
    fam = discover()["rmsnorm_linear"]
    settings = BenchSettings(graph=False)
    rows = []
    for spec in args.shapes.split(","):
        m, k, n = (int(v) for v in spec.split("x"))
        inputs = fam.make_inputs((m, k, n), "bf16", "cuda", seed=1)
        x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
        ref = fam.oracle(**inputs)
        wf = re.folded_weight(g, w)
        rstd = torch.empty(m, dtype=torch.float32, device="cuda")
        y = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
        tma = re.use_tma(x, wf, y)

        def product(pdl: bool) -> None:
            if tma:
                re.tma_product(x, wf, b, y, rstd, pdl=pdl)
            else:
                re.launch_product(x, wf, b, y, eps, norm=2, rstd=rstd, pdl=pdl)

        def op(pdl: bool, carveout: bool, rows: int, programs: int | None, warps: int = 4):
            def call():
                rstd_launch(x, rstd, eps, pdl=pdl, carveout=carveout, rows=rows, programs=programs, warps=warps)
                product(pdl)
                return y

            return call

        rows_default = re.rows_per_program(m)
        candidates = {"rstd kernel, then product": (op(False, False, rows_default, None), ref)}
        for carveout, rows_v, programs, warps in SWEEPS[args.sweep]:
            rows_v = rows_v if rows_default > 1 else 1
            name = f"PDL{' carveout' if carveout else ''} rows {rows_v} programs {programs or 'all'}" + (
                f" warps {warps}" if warps != 4 else ""
            )
            candidates[name] = (op(True, carveout, rows_v, programs, warps), ref)
        re.launch_row_rstd(x, rstd, eps)  # the others write the same values
        candidates["product alone (rstd ready)"] = (lambda: (product(False), y)[1], ref)
        fns, notes = checked(candidates, y)
        fns["[cublas x@W]"] = lambda: x @ w
        for p in ("triton_rstd_epilogue", "torch_compile"):
            fns[f"[{p}]"] = lambda p=p: fam.providers[p].fn(x, g, w, b)
        times = race(fns, settings, rounds=args.rounds)
        print_race(
            f"{spec} ({'TMA' if tma else 'pointer'} product; PDL on this GPU: {launching.pdl_ready(x)})", times, top=12
        )
        print_notes(notes)
        rows += race_rows(spec, times)
        if args.graph_check:
            graph_check(fam, (m, k, n))
    write_csv(args.out / "rmsnorm_linear_pdl.csv", rows)


if __name__ == "__main__":
    main()
