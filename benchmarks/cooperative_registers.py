"""The cooperative kernels (rmsnorm, add_rmsnorm) over elements a thread, warps and a register cap, with what
the meeting and the counters' zeroing cost on their own.

    python benchmarks/cooperative_registers.py --out DIR [--dtypes bf16,fp16] [--rounds 3] [--rep-ms 10] \
        [--families rmsnorm,add_rmsnorm] [--no-caps]

At many rows of 128-256 KB the cooperative kernels read x once yet reach 83-89% (rmsnorm) and 93-96%
(add_rmsnorm) of a device copy of the same bytes on an H100; ncu gave achieved occupancy 34-36% and
"registers" as the limiter for rmsnorm (74 registers a thread, 3 programs of 8 warps an SM). This race asks
whether a register cap (Triton's ``maxnreg`` launch option) that lets a fourth or sixth program onto an SM
closes the gap, and how much of it is the meeting itself:

- ``pt{E} w{W} r{R}``: the family's cooperative kernel with E elements a thread, W warps, at most R registers
  a thread (``r-``: the compiler's choice); the compiled kernel's registers and spills are printed;
- ``pipe pt{E} w{W} p{K}``: the family's pipelined kernel (``launch_pipelined``: a program loads and counts
  in its next chunk before it waits for the row of the one it holds) with chunks of E elements a thread, W
  warps, K programs an SM;
- ``[no meeting]``: the same loads and stores with each program normalising by its own chunk's sum (a wrong
  result on purpose, not checked): what the kernel would take if the meeting cost nothing;
- ``[zeroing]``: the zeroing of the ``1 + rows`` counters alone, which every cooperative call launched first until
  the counters were kept between calls (``launching.meeting_counters``);
- ``[copy]``: a device copy of the bytes the kernel moves (x read, y written; add_rmsnorm: x and the residual
  read, y and h written, as two copies), the yardstick of the 95% target.

Every candidate but ``[no meeting]`` is checked against the float64 oracle before it is timed; ``cold``
times, ``--rounds`` rounds in a fresh random order. Writes DIR/registers.csv and DIR/summary.csv.
"""

from __future__ import annotations

import argparse
import random
import time

import torch
import triton
import triton.language as tl
from bench_common import add_race_args, checked, print_notes, print_race, race_rounds, race_rows, write_csv

from kprof.kernels import discover
from kprof.kernels.add_rmsnorm import cooperative as add_cooperative
from kprof.kernels.add_rmsnorm.cooperative import _add_rmsnorm_cooperative_kernel
from kprof.kernels.lib.split_rows import cooperative_launch_args, launch_meeting
from kprof.kernels.rmsnorm.cooperative import _rmsnorm_cooperative_kernel, launch_pipelined

SHAPES = [(r, n) for r in (512, 2048, 8192) for n in (65536, 131072)]
# (elements a thread, warps, register caps): 64 x 8 is rmsnorm's rule (74 registers: 3 programs an SM),
# 32 x 16 add_rmsnorm's; a cap of 64 admits a fourth 8-warp program, 40 a sixth 4-warp one
RMSNORM_SHAPES = [(64, 8, (None, 64, 56, 48)), (32, 8, (None, 40)), (64, 4, (None, 64)), (128, 4, (None, 64))]
ADD_SHAPES = [(32, 16, (None, 64, 56)), (64, 8, (None, 64)), (32, 8, (None, 40)), (16, 32, (None,))]
# rmsnorm's pipelined kernel (two chunks held a program): (elements a thread per chunk, warps, programs an SM)
PIPELINED = [(32, 8, (3, 4)), (32, 4, (6, 8)), (16, 8, (4, 6)), (16, 4, (8, 12)), (64, 4, (4,))]
# add_rmsnorm's pipelined kernel (two chunks of h held a program), the same form
ADD_PIPELINED = [(32, 8, (3, 4)), (16, 8, (4, 6)), (32, 4, (6, 8)), (16, 16, (2, 3)), (16, 4, (8, 12))]


@triton.jit
def _no_meeting_kernel(x_ptr, w_ptr, y_ptr, N, eps, CHUNK: tl.constexpr, SPLITS: tl.constexpr):
    """rmsnorm's cooperative kernel without its meeting: each program normalises by its own chunk's sum."""
    pid = tl.program_id(0)
    row, part = (pid // SPLITS).to(tl.int64), pid % SPLITS
    cols = part * CHUNK + tl.arange(0, CHUNK)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0, eviction_policy="evict_first").to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


def _launch(kernel, args: tuple, x2d: torch.Tensor, per_thread: int, warps: int, cap: int | None, what: str):
    chunk = per_thread * 32 * warps
    splits = triton.cdiv(x2d.shape[1], chunk)
    (ws, sync, base), meta = cooperative_launch_args(x2d, splits, what)
    meta["CHUNK"] = chunk  # the cooperative rule's chunk, whatever cdiv(N, splits) rounds to
    options = {"num_warps": warps} | ({"maxnreg": cap} if cap else {})
    grid = (x2d.shape[0] * splits,)
    return launch_meeting(kernel, grid, (*args[:-4], ws, sync, base, *args[-4:]), meta | options, sync, grid[0])


def rmsnorm_candidates(inputs: dict, y: torch.Tensor, ref: torch.Tensor, compiled: dict, capped: bool) -> dict:
    x, w, eps = inputs["x"], inputs["weight"], float(inputs["eps"])
    n_rows, n = x.shape
    out = {}
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    for per_thread, warps, per_sm in PIPELINED:
        for k in per_sm:
            name = f"pipe pt{per_thread} w{warps} p{k}"

            def run(pt=per_thread, wp=warps, k=k, name=name):
                compiled[name] = launch_pipelined(x, w, y, eps, pt * 32 * wp, k * sms, wp)
                return y

            out[name] = (run, ref)
    shapes = RMSNORM_SHAPES if capped else [(64, 8, (None,)), (128, 4, (None,))]
    for per_thread, warps, caps in shapes:
        for cap in caps:
            name = f"pt{per_thread} w{warps} r{cap or '-'}"
            args = (x, w, y, x.stride(0), y.stride(0), n, eps)

            def run(args=args, pt=per_thread, wp=warps, cap=cap, name=name):
                compiled[name] = _launch(_rmsnorm_cooperative_kernel, args, x, pt, wp, cap, "rmsnorm")
                return y

            out[name] = (run, ref)
    return out


def add_candidates(
    inputs: dict, y: torch.Tensor, h: torch.Tensor, ref: torch.Tensor, compiled: dict, capped: bool
) -> dict:
    x, r, w, eps = inputs["x"], inputs["residual"], inputs["weight"], float(inputs["eps"])
    n_rows, n = x.shape
    out = {}
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    for per_thread, warps, per_sm in ADD_PIPELINED:
        for k in per_sm:
            name = f"pipe pt{per_thread} w{warps} p{k}"

            def run(pt=per_thread, wp=warps, k=k, name=name):
                compiled[name] = add_cooperative.launch_pipelined(x, r, w, y, h, eps, pt * 32 * wp, k * sms, wp)
                return y

            out[name] = (run, ref)
    for per_thread, warps, caps in ADD_SHAPES:
        for cap in caps if capped else (None,):
            name = f"pt{per_thread} w{warps} r{cap or '-'}"
            args = (x, r, w, y, h, x.stride(0), r.stride(0), n, eps)

            def run(args=args, pt=per_thread, wp=warps, cap=cap, name=name):
                compiled[name] = _launch(_add_rmsnorm_cooperative_kernel, args, x, pt, wp, cap, "add_rmsnorm")
                return y

            out[name] = (run, ref)
    return out


def _rule(family: str, dtype: str, n_rows: int) -> str:
    """The candidate the family's dispatch runs (``kernels/*/tuned.py``)."""
    if family == "rmsnorm" or dtype == "fp16":
        return "pipe pt32 w8 p4"
    return "pipe pt16 w16 p3" if 512 <= n_rows < 8192 else "pt32 w16 r-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_race_args(ap, dtypes="bf16,fp16", budget_s=300.0)
    ap.add_argument("--families", default="rmsnorm,add_rmsnorm")
    ap.add_argument("--no-caps", action="store_true", help="leave out the register caps")
    ap.add_argument("--shapes", help="ROWSxCOLS,... instead of the 6 points of 512-8192 rows")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    fams = discover()
    rng = random.Random(0)
    rows, summary = [], []
    t0 = time.monotonic()
    for family in args.families.split(","):
        for dtype in args.dtypes.split(","):
            shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else SHAPES
            for n_rows, n in shapes:
                if time.monotonic() - t0 > args.budget_s:
                    print(f"budget spent: {family} {dtype} {n_rows}x{n} and later not raced", flush=True)
                    break
                fam = fams[family]
                inputs = fam.make_inputs((n_rows, n), dtype, "cuda", 1234)
                compiled: dict = {}
                if family == "rmsnorm":
                    ref = fam.oracle(**inputs)
                    y = torch.empty_like(inputs["x"])
                    cands = rmsnorm_candidates(inputs, y, ref, compiled, not args.no_caps)
                    copies = [(y, inputs["x"])]
                else:
                    ref = fam.oracle(**inputs)[0]
                    y, h = torch.empty_like(inputs["x"]), torch.empty_like(inputs["x"])
                    cands = add_candidates(inputs, y, h, ref, compiled, not args.no_caps)
                    copies = [(y, inputs["x"]), (h, inputs["residual"])]
                fns, notes = checked(cands, y)
                if family == "rmsnorm":
                    x, w = inputs["x"], inputs["weight"]
                    chunk = 64 * 32 * 8
                    fns["[no meeting]"] = lambda x=x, w=w, y=y, c=chunk: _no_meeting_kernel[
                        (x.shape[0] * triton.cdiv(x.shape[1], c),)
                    ](x, w, y, x.shape[1], 1e-6, CHUNK=c, SPLITS=triton.cdiv(x.shape[1], c), num_warps=8)
                fns["[zeroing]"] = lambda k=n_rows: torch.zeros(1 + k, dtype=torch.int32, device="cuda")
                fns["[copy]"] = lambda cp=copies: [dst.copy_(src) for dst, src in cp]
                shape = f"{family}/{n_rows}x{n}/{dtype}"
                print("  " + ", ".join(f"{k}: {c.n_regs} regs {c.n_spills} spills" for k, c in compiled.items()))
                times = race_rounds(fns, args.rounds, args.rep_ms, rng)
                print_race(shape, times, top=30)
                print_notes(notes)
                raced = race_rows(shape, times)
                for r in raced:
                    k = compiled.get(r["variant"])
                    r.update({"regs": k.n_regs if k else "", "spills": k.n_spills if k else ""})
                rows += raced
                med = {r["variant"]: r["time_us"] for r in raced}
                best_us, best = min((v, k) for k, v in med.items() if not k.startswith("["))
                rule = _rule(family, dtype, n_rows)
                summary.append(
                    {
                        "shape": shape,
                        "rule_us": med.get(rule),
                        "best": best,
                        "best_us": best_us,
                        "no_meeting_us": med.get("[no meeting]"),
                        "zeroing_us": med["[zeroing]"],
                        "copy_us": med["[copy]"],
                        "rule_of_copy": med["[copy]"] / med[rule] if med.get(rule) else None,
                        "best_of_copy": med["[copy]"] / best_us,
                    }
                )
                del inputs, ref, y, cands, fns, copies
                torch.cuda.empty_cache()
    write_csv(args.out / "registers.csv", rows)
    write_csv(args.out / "summary.csv", summary)
    print(
        f"{'shape':<30} {'rule':>8} {'best':>8} {'nomeet':>8} {'zero':>6} {'copy':>8} {'rule%':>6} {'best%':>6}  best"
    )
    for s in summary:
        print(
            f"{s['shape']:<30} {s['rule_us'] or 0:8.1f} {s['best_us']:8.1f} {s['no_meeting_us'] or 0:8.1f} "
            f"{s['zeroing_us']:6.2f} {s['copy_us']:8.1f} {100 * (s['rule_of_copy'] or 0):6.1f} "
            f"{100 * s['best_of_copy']:6.1f}  {s['best']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
