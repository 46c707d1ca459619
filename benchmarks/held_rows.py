"""Where rmsnorm's rows of 128-256 KB are held while their sum is taken, one program a row: part in its registers and
the rest in its SM's L1, against the library's halves kernel, the config before it, the dispatch and a device copy of
the same bytes.

    python benchmarks/held_rows.py --out DIR [--shapes 2048x131072,1024x65536:fp32+bf16] [--dtypes bf16,fp16,fp32] \
        [--l1 65536x65536x32,32768x16384x16x64] [--no-carve] [--rounds 3] [--rep-ms 5]

- ``l1 hH cC wW[ rR]``: one program of W warps a row (registers capped at R a thread, ``maxnreg``, where a layout names
  a fourth number: 64 at 16 warps leaves room for two programs an SM), its first H elements held in registers (loaded
  past L1), the rest read twice in chunks of C, first for the sum (into L1, ``evict_last``) and again for the output,
  from L1 where it kept them; ``carve0``: the kernel's shared-memory carveout set to 0 (as much L1 as the SM has), else left to the driver.
- ``[halves]``: the library's ``tuned.halves_kernel`` (``l1 hN/2 cN/2 w32`` as shipped) where the row is 256 KB;
  ``[before]``: the config an H200 takes without it (``choose_config(..., whole_rows=False)``, fitted).

Rows met in a thread-block cluster instead (``wide_row_clusters.py``) stayed under the dispatch. Every candidate is
checked against the float64 oracle before it is raced. ``cold`` times, ``--rounds`` rounds in a fresh random order.
Writes DIR/times.csv (every round) and DIR/summary.csv (per point: each candidate's median as % of the copy), and
prints registers and spills.
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import pct_of_copy_rows, print_pct_of_copy, print_race, race_rounds, race_rows, write_csv

from kprof.kernels import discover
from kprof.kernels.lib import launching, split_rows
from kprof.kernels.rmsnorm import tuned


@triton.jit
def _l1_kernel(
    x_ptr, w_ptr, y_ptr, x_row_stride, y_row_stride, N, eps,
    HELD: tl.constexpr,  # the row's first HELD elements, held in registers
    CHUNK: tl.constexpr,  # the rest, CHUNK at a time, read twice: the second time from L1
    REST: tl.constexpr,  # chunks after the held part
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    held = tl.arange(0, HELD)
    offs = tl.arange(0, CHUNK)
    ss = tl.zeros([CHUNK], dtype=tl.float32)
    for k in tl.static_range(REST):
        xb = tl.load(x_row + HELD + k * CHUNK + offs, eviction_policy="evict_last").to(tl.float32)
        ss += xb * xb
    x = tl.load(x_row + held, cache_modifier=".cg")
    xf = x.to(tl.float32)
    total = tl.sum(xf * xf, axis=0) + tl.sum(ss, axis=0)
    rstd = tl.rsqrt(total / N + eps)
    w = tl.load(w_ptr + held, cache_modifier=".cg").to(tl.float32)
    tl.store(y_row + held, (split_rows.float32_again(x, total) * rstd * w).to(y_ptr.dtype.element_ty))
    for k in tl.static_range(REST):
        xb = tl.load(x_row + HELD + k * CHUNK + offs, eviction_policy="evict_first").to(tl.float32)
        wb = tl.load(w_ptr + HELD + k * CHUNK + offs, cache_modifier=".cg").to(tl.float32)
        tl.store(y_row + HELD + k * CHUNK + offs, (xb * rstd * wb).to(y_ptr.dtype.element_ty))


def _carve_out_shared(compiled) -> None:
    """The kernel's preferred shared-memory carveout set to 0%: as much of the SM's L1/shared memory as L1."""
    rc = launching.set_carveout(compiled, 0)
    if rc != 0:
        raise RuntimeError(f"cuFuncSetAttribute(carveout 0) returned {rc}")


def _why_wrong(y: torch.Tensor, ref: torch.Tensor) -> str | None:
    """Why ``y`` is not ``ref`` within bf16's rounding (a NaN, or an element off by more than 2% of the largest), else
    None."""
    err = float((y.double() - ref).abs().max() / ref.abs().max())
    if not torch.isfinite(y).all() or err > 2e-2:
        return f"wrong output (max error {err:.1e} of the largest value)"
    return None


def l1_candidates(
    inputs: dict, y: torch.Tensor, layouts: list[tuple[int, ...]], ref: torch.Tensor, carves: tuple = (True, False)
) -> tuple:
    """``l1`` candidates, each with the carveout set to 0 and left (``carves``): (name -> call, name -> why left out,
    name -> (registers, spilled bytes))."""
    x, w, eps = inputs["x"], inputs["weight"], float(inputs["eps"])
    n_rows, n = x.shape
    fns, notes, regs = {}, {}, {}
    for held, chunk, wp, *cap in layouts:
        if held >= n or (n - held) % chunk:
            continue
        options = {"maxnreg": cap[0]} if cap else {}
        for carve in carves:
            name = f"l1 h{held} c{chunk} w{wp}" + (f" r{cap[0]}" if cap else "") + (" carve0" if carve else "")

            def call(held=held, chunk=chunk, wp=wp, carve=carve, options=options):
                c = _l1_kernel[(n_rows,)](x, w, y, x.stride(0), y.stride(0), n, eps, HELD=held, CHUNK=chunk,
                                          REST=(n - held) // chunk, num_warps=wp, num_stages=1, **options)  # fmt: skip
                if carve:
                    _carve_out_shared(c)
                return c

            y.fill_(float("nan"))
            try:
                compiled = call()
                compiled = call()  # the second launch with the carveout set
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - reported, not raced
                notes[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
                continue
            if why := _why_wrong(y, ref):
                notes[name] = why
                continue
            regs[name] = (compiled.n_regs, compiled.n_spills)
            fns[name] = call
    return fns, notes, regs


def library_candidates(inputs: dict, y: torch.Tensor, ref: torch.Tensor, sms: int, notes: dict) -> dict:
    """``[halves]`` (where the row is 256 KB) and ``[before]``: name -> call, each checked against the oracle first
    (a wrong one noted in ``notes`` and left out)."""
    x, w, eps = inputs["x"], inputs["weight"], float(inputs["eps"])
    n_rows, n = x.shape
    before = tuned.choose_config(n, x.element_size(), n_rows, sms, True, True, whole_rows=False)
    configs = {"[before]": tuned.fitted(before, n_rows, n, x.dtype)}
    if n * x.element_size() == tuned._HALVES_ROW_BYTES:
        configs["[halves]"] = tuned.Config("halves", n // 2, 1, tuned._HALVES_WARPS)
    fns = {}
    for name, cfg in configs.items():
        y.fill_(float("nan"))
        tuned.launch_with_config(cfg, x, w, y, eps)
        if why := _why_wrong(y, ref):
            notes[name] = why
            continue
        print(f"  {name}: {cfg}", flush=True)
        fns[name] = lambda cfg=cfg: tuned.launch_with_config(cfg, x, w, y, eps)
    return fns


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="512x131072,2048x131072,8192x131072,512x65536")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument(
        "--l1",
        default="",
        help="l1 layouts, each held x chunk x warps [x register cap]: 65536x65536x32,32768x16384x16x64",
    )
    ap.add_argument("--no-carve", action="store_true", help="l1 layouts only as the driver leaves the carveout")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=5.0)
    args = ap.parse_args()
    l1_layouts = [tuple(int(v) for v in lay.split("x")) for lay in args.l1.split(",") if lay]
    fam = discover()["rmsnorm"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rng = random.Random(20261203)
    times_rows, summary = [], []
    for point in args.shapes.split(","):
        spec, _, dtypes = point.partition(":")  # a point may name its own dtypes: 2048x65536:fp32
        for dtype in (dtypes or args.dtypes).split("+" if dtypes else ","):
            inputs = fam.make_inputs(tuple(int(v) for v in spec.split("x")), dtype, "cuda", 1234)
            y = torch.empty_like(inputs["x"])
            ref = fam.oracle(**inputs)
            fns, notes, regs = l1_candidates(inputs, y, l1_layouts, ref, (False,) if args.no_carve else (True, False))
            fns.update(library_candidates(inputs, y, ref, sms, notes))
            dispatch = fam.providers["triton_tuned"].fn
            fns["[dispatch]"] = lambda inputs=inputs: dispatch(**inputs)
            fns["[copy]"] = lambda x=inputs["x"], y=y: y.copy_(x)
            title = f"rmsnorm/{spec}/{dtype}"
            times = race_rounds(fns, args.rounds, args.rep_ms, rng)
            print_race(title, times, top=12)
            for name, why in notes.items():
                print(f"  left out {name}: {why}", flush=True)
            for name, (r, s) in regs.items():
                print(f"  {name}: {r} registers a thread, {s} bytes spilled", flush=True)
            summary += pct_of_copy_rows(title, times)
            times_rows += race_rows(title, times)
            del inputs, y, ref, fns
            torch.cuda.empty_cache()
    write_csv(args.out / "times.csv", times_rows)
    write_csv(args.out / "summary.csv", summary)
    print_pct_of_copy(summary, 22, statistics.mean)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
