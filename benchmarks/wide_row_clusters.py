"""Can rows of 128-256 KB meet in a thread-block cluster instead of in global memory, and does that bring rmsnorm and
add_rmsnorm to a copy's speed on an H200?

    python benchmarks/wide_row_clusters.py --out DIR [--family rmsnorm|add_rmsnorm] [--set one-row|looped|parts|fence] \
        [--shapes 512x65536,2048x131072,8192x65536] [--dtypes bf16,fp16] [--rounds 3] [--rep-ms 5] [--ncu-once]

kprof's wide-row kernels (``kernels/rmsnorm/cooperative.py``, slotted) split a row over programs that each hold a
chunk in registers and meet through 64-bit slots in global memory, polled until every chunk of the row has arrived.
On H200s they reach 87-93% of a copy of the same bytes; without the meeting the same layout reaches 98-100%
(``benchmarks/results/rmsnorm-cooperative/``). Hopper's clusters give a meeting in hardware: the CTAs of a cluster
are scheduled together on one GPC, and ``barrier.cluster`` (release on arrive, acquire on wait, at cluster scope)
replaces the polls.

Each ``cluster cC wW`` candidate launches one cluster of C CTAs a row (W warps each, the row in C chunks). A CTA
loads its chunk, stores its partial sum of squares to a slot of a small buffer, passes the cluster barrier, then reads
the row's C slots (``.cg``: from L2) and stores its normalised chunk. The kernel is compiled as one CTA a program
(``num_ctas=1``) and launched with C in the launch's packed metadata (``(num_warps, C, shared)``), from which Triton's
own launcher (3.6 and 3.9 alike) makes the grid C times wider and sets the cluster's size: no cross-CTA code from the
compiler, which Triton 3.6 cannot build for a reduction (``TritonGPUPlanCTAPass`` fails; 3.9 builds it:
``num_ctas_compile.py``, benchmarks/results/wide-row-clusters/num-ctas-compile/). Results and the conclusion (not
shipped): benchmarks/results/wide-row-clusters/README.md.

``looped cC wW kK`` (``--set looped``, rmsnorm): persistent clusters, K x SMs / C of them, cluster q taking rows q,
q + Q, ... and loading its next row's chunk before it meets on the one it holds, as the slotted kernel does.

``--set parts`` takes the one-row kernel apart: as raced (``meet``), launched as clusters but normalising each chunk
by its own sum (``nomeet``, a wrong result on purpose, not checked), and that launched as plain CTAs (``nomeet
plain``): what the barrier costs, and what launching as clusters costs.

``--set fence``: the one-row kernel's meeting as raced (every thread's arrive a release, and so a fence: ``ncu`` shows
its warps stalled on it) against one release fence a CTA (a CTA barrier, thread 0's ``fence.acq_rel.cluster``, every
thread's arrive relaxed), beside the kernel without its meeting.

``--ncu-once`` races nothing: it launches each candidate of the set once, in order, naming each before it runs (for
``ncu -k regex:cluster_kernel``, which tells launches of one kernel apart only by their order).

Beside them: ``[dispatch]`` (the family's ``triton_tuned``), ``[copy]`` (a device copy of the bytes the op moves: the
target's yardstick). Every candidate is checked against the float64 oracle before and after it is timed; cold times
(CUPTI), ``--rounds`` rounds in a fresh random order. Writes DIR/times.csv and DIR/summary.csv (each candidate's median
as % of the copy) and prints the table.
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import copy_of_op, print_race, race_rounds, race_rows, write_csv

from kprof.kernels import discover
from kprof.launch import direct_launch

# (C CTAs a row, warps a CTA); kept where a CTA holds 16-128 elements a thread
LAYOUTS = [(c, w) for c in (2, 4, 8, 16) for w in (4, 8, 16)]


# The meeting in inline PTX. As raced: every thread's arrive a release (so a fence a thread), the wait an acquire.
MEET_PTX = tl.constexpr("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n\tmov.u32 $0, 0;")
# One release fence a CTA (``--set fence``): after a CTA barrier (which orders the CTA's earlier writes before thread
# 0's fence: PTX fences are cumulative), thread 0 alone fences at cluster scope and every thread arrives relaxed.
ONE_FENCE_PTX = tl.constexpr(
    "{\n\t.reg .pred p;\n\t.reg .u32 t;\n\tmov.u32 t, %tid.x;\n\tsetp.eq.u32 p, t, 0;\n\t"
    "@p fence.acq_rel.cluster;\n\tbarrier.cluster.arrive.relaxed.aligned;\n\t"
    "barrier.cluster.wait.aligned;\n\tmov.u32 $0, 0;\n\t}"
)


@triton.jit
def _cluster_meet(dep, PTX: tl.constexpr):
    """Every thread of every CTA of the cluster passes here before any goes on (``PTX``: :data:`MEET_PTX` or
    :data:`ONE_FENCE_PTX`); returns 0, to be added to what must come after it."""
    return tl.inline_asm_elementwise(PTX, "=r,r", [dep], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _row_total(part_ptr, row, rank, partial, C: tl.constexpr, ONE_FENCE: tl.constexpr = False):
    """The row's sum of squares, from the C CTAs of its cluster (this one's ``partial`` among them)."""
    tl.store(part_ptr + row * C + rank, partial)
    if ONE_FENCE:
        tl.debug_barrier()
        dep = _cluster_meet(rank, ONE_FENCE_PTX)
    else:
        dep = _cluster_meet(rank, MEET_PTX)
    parts = tl.load(part_ptr + row * C + tl.arange(0, C) + dep, cache_modifier=".cg")
    return tl.sum(parts, axis=0)


@triton.jit
def _rmsnorm_cluster_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    part_ptr,
    N,
    eps,
    CHUNK: tl.constexpr,
    C: tl.constexpr,
    MEET: tl.constexpr = True,
    ONE_FENCE: tl.constexpr = False,  # the meeting with one release fence a CTA (``--set fence``)
):
    pid = tl.program_id(0)
    row = pid // C  # a 1-D cluster is C consecutive CTAs
    rank = pid % C
    offs = rank * CHUNK + tl.arange(0, CHUNK)
    mask = offs < N
    base = row.to(tl.int64) * N
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    if MEET:
        total = _row_total(part_ptr, row, rank, tl.sum(x * x, axis=0), C, ONE_FENCE)
    else:  # the chunk's own sum standing for the row's (a wrong result on purpose: the kernel without its meeting)
        total = tl.sum(x * x, axis=0) * C
    r = tl.rsqrt(total / N + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + offs, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _add_rmsnorm_cluster_kernel(
    x_ptr, res_ptr, w_ptr, y_ptr, h_ptr, part_ptr, N, eps, CHUNK: tl.constexpr, C: tl.constexpr
):
    pid = tl.program_id(0)
    row = pid // C
    rank = pid % C
    offs = rank * CHUNK + tl.arange(0, CHUNK)
    mask = offs < N
    base = row.to(tl.int64) * N
    h = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    h += tl.load(res_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    h = h.to(h_ptr.dtype.element_ty)
    tl.store(h_ptr + base + offs, h, mask=mask)
    hf = h.to(tl.float32)
    total = _row_total(part_ptr, row, rank, tl.sum(hf * hf, axis=0), C)
    r = tl.rsqrt(total / N + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + offs, (hf * r * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_looped_cluster_kernel(x_ptr, w_ptr, y_ptr, part_ptr, M, N, eps, CHUNK: tl.constexpr, C: tl.constexpr):
    # persistent: cluster q takes rows q, q + Q, ... and loads its next row's chunk before it meets on this one
    pid = tl.program_id(0)
    cluster = pid // C
    rank = pid % C
    clusters = tl.num_programs(0) // C
    offs = rank * CHUNK + tl.arange(0, CHUNK)
    mask = offs < N
    x = tl.load(x_ptr + cluster.to(tl.int64) * N + offs, mask=mask & (cluster < M), other=0.0)
    for row in range(cluster, M, clusters):
        after = row + clusters
        x_next = tl.load(x_ptr + after.to(tl.int64) * N + offs, mask=mask & (after < M), other=0.0)
        xf = x.to(tl.float32)
        total = _row_total(part_ptr, row, rank, tl.sum(xf * xf, axis=0), C)
        r = tl.rsqrt(total / N + eps)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row.to(tl.int64) * N + offs, (xf * r * w).to(y_ptr.dtype.element_ty), mask=mask)
        x = x_next


REGISTERS: dict[str, tuple] = {}


def cluster_call(
    kernel,
    args: tuple,
    rows: int,
    n: int,
    c: int,
    warps: int,
    name: str,
    stages: int = 3,
    meet: bool | None = None,
    one_fence: bool = False,
):
    """A call launching ``kernel`` as ``rows`` clusters of ``c`` CTAs (compiled once, one CTA a program); ``meet``
    False: the kernel without its meeting, launched as plain CTAs (no cluster); ``one_fence``: the meeting with one
    release fence a CTA (rmsnorm's one-row kernel only)."""
    chunk = triton.next_power_of_2(triton.cdiv(n, c))
    extra = {} if meet is None else {"MEET": meet}
    extra |= {"ONE_FENCE": True} if one_fence else {}
    compiled = kernel.warmup(*args, CHUNK=chunk, C=c, **extra, grid=(rows * c,), num_warps=warps, num_stages=stages)
    compiled._init_handles()
    REGISTERS[name] = (compiled.n_regs, compiled.n_spills)
    num_warps, _, shared = compiled.packed_metadata
    if meet is False and "plain" in name:
        launch, prefix = direct_launch(compiled.run, compiled.function, (num_warps, 1, shared))
        rows *= c
    else:
        launch, prefix = direct_launch(compiled.run, compiled.function, (num_warps, c, shared))
    device = args[0].device.index
    tail = (chunk, c) if meet is None else (chunk, c, meet, one_fence)

    def call() -> None:
        launch(rows, 1, 1, torch._C._cuda_getCurrentRawStream(device), *prefix, *args, *tail)

    return call


LOOPED = [(c, w, k) for c in (4, 8, 16) for w in (4, 8) for k in (2, 3, 4)]  # C, warps, CTAs an SM


def looped_candidates(inputs: dict, outs: tuple) -> dict:
    """``--set looped``: rmsnorm's persistent cluster kernel, K * SMs / C clusters of C CTAs."""
    x = inputs["x"]
    rows, n = x.shape
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    parts = torch.empty(rows * 16, device=x.device, dtype=torch.float32)
    fns = {}
    for c, wp, k in LOOPED:
        if not 16 <= triton.cdiv(n, c) // (32 * wp) <= 64:
            continue
        name = f"looped c{c} w{wp} k{k}"
        args = (x, inputs["weight"], outs[0], parts, rows, n, float(inputs.get("eps", 1e-6)))
        fns[name] = cluster_call(_rmsnorm_looped_cluster_kernel, args, k * sms // c, n, c, wp, name, stages=1)
    return fns


def one_row_variants(inputs: dict, outs: tuple, layouts: tuple, variants: tuple) -> dict:
    """rmsnorm's one-row cluster kernel at each (C, warps) of ``layouts`` (where a thread holds at most 128 elements),
    in each of ``variants``: (label, meet, one fence), named ``cluster cC wW LABEL``."""
    x = inputs["x"]
    rows, n = x.shape
    parts = torch.empty(rows * 16, device=x.device, dtype=torch.float32)
    args = (x, inputs["weight"], outs[0], parts, n, float(inputs.get("eps", 1e-6)))
    fns = {}
    for c, wp in layouts:
        if triton.cdiv(n, c) // (32 * wp) > 128:
            continue
        for label, meet, one in variants:
            name = f"cluster c{c} w{wp} {label}"
            fns[name] = cluster_call(_rmsnorm_cluster_kernel, args, rows, n, c, wp, name, meet=meet, one_fence=one)
    return fns


def parts_candidates(inputs: dict, outs: tuple) -> dict:
    """``--set parts``: rmsnorm's one-row cluster kernel taken apart in three layouts: as raced (``meet``), launched
    as clusters without its meeting (``nomeet``), and as plain CTAs without it (``nomeet plain``)."""
    variants = (("meet", True, False), ("nomeet", False, False), ("nomeet plain", False, False))
    return one_row_variants(inputs, outs, ((8, 8), (16, 4), (8, 4)), variants)


def fence_candidates(inputs: dict, outs: tuple) -> dict:
    """``--set fence``: rmsnorm's one-row cluster kernel with its meeting as raced (a release fence in every thread's
    arrive) and with one fence a CTA (``one fence``), beside it without the meeting (``nomeet``, not checked)."""
    variants = (("meet", True, False), ("one fence", True, True), ("nomeet", False, False))
    return one_row_variants(inputs, outs, ((16, 4), (8, 8), (8, 4)), variants)


def candidates(family: str, inputs: dict, outs: tuple, kind: str = "one-row") -> dict:
    if kind == "fence":
        return fence_candidates(inputs, outs)
    if kind == "looped":
        return looped_candidates(inputs, outs)
    if kind == "parts":
        return parts_candidates(inputs, outs)
    x = inputs["x"]
    rows, n = x.shape
    parts = torch.empty(rows * 16, device=x.device, dtype=torch.float32)
    eps = float(inputs.get("eps", 1e-6))
    fns = {}
    for c, wp in LAYOUTS:
        per_thread = triton.cdiv(n, c) // (32 * wp)
        if not 16 <= per_thread <= 128:
            continue
        name = f"cluster c{c} w{wp}"
        if family == "rmsnorm":
            args = (x, inputs["weight"], outs[0], parts, n, eps)
            kernel = _rmsnorm_cluster_kernel
        else:
            args = (x, inputs["residual"], inputs["weight"], outs[0], outs[1], parts, n, eps)
            kernel = _add_rmsnorm_cluster_kernel
        fns[name] = cluster_call(kernel, args, rows, n, c, wp, name, meet=True if family == "rmsnorm" else None)
    return fns


def check(fn, outs: tuple, refs: tuple) -> str:
    """'' where the call's outputs match the float64 oracle within 16-bit rounding, else why not."""
    for o in outs:
        o.fill_(float("nan"))
    fn()
    torch.cuda.synchronize()
    for o, ref in zip(outs, refs):
        if not bool(torch.isfinite(o).all()):
            return "non-finite output"
        err = float((o.double() - ref).abs().max() / ref.abs().max())
        if err > 2e-2:
            return f"max error {err:.1e} of the largest value"
    return ""


def race_point(family: str, spec: str, dtype: str, args: argparse.Namespace, rng: random.Random):
    fam = discover()[family]
    inputs = fam.make_inputs(tuple(int(v) for v in spec.split("x")), dtype, "cuda", 1234)
    refs = fam.oracle(**inputs)
    refs = refs if isinstance(refs, tuple) else (refs,)
    outs = tuple(torch.empty_like(inputs["x"]) for _ in refs)
    fns, notes = {}, {}
    for name, fn in candidates(family, inputs, outs, args.set).items():
        try:
            why = "" if "nomeet" in name else check(fn, outs, refs)
        except Exception as exc:  # noqa: BLE001 - a candidate that cannot build or launch is reported, not raced
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        if why:
            notes[name] = why
        else:
            fns[name] = fn
    dispatch = fam.providers["triton_tuned"].fn
    fns["[dispatch]"] = lambda: dispatch(**inputs)
    fns["[copy]"] = copy_of_op(inputs, *outs)
    times = race_rounds(fns, args.rounds, args.rep_ms, rng)
    for name, fn in list(fns.items()):  # again after the race: a meeting that raced would show here
        if name.startswith(("cluster", "looped")) and "nomeet" not in name and (why := check(fn, outs, refs)):
            notes[name] = f"after the race: {why}"
    point = f"{family}/{spec}/{dtype}"
    print_race(point, times, top=14)
    for name, why in notes.items():
        print(f"  left out or failed {name}: {why}", flush=True)
    for name in fns:
        if name in REGISTERS:
            print(f"  {name}: {REGISTERS[name][0]} registers a thread, {REGISTERS[name][1]} bytes spilled", flush=True)
    copy_us = statistics.median(times["[copy]"])
    summary = [
        {"point": point, "candidate": k, "median_us": statistics.median(v),
         "pct_of_copy": 100 * copy_us / statistics.median(v), "failed_after": k in notes}
        for k, v in times.items()
    ]  # fmt: skip
    return race_rows(point, times), summary


def launch_once(family: str, spec: str, dtype: str, kind: str) -> None:
    """``--ncu-once``: each candidate of ``kind`` launched once, in order, each named before it runs, for a profiler
    that tells launches of one kernel apart only by their order (``ncu -k regex:cluster_kernel``)."""
    fam = discover()[family]
    inputs = fam.make_inputs(tuple(int(v) for v in spec.split("x")), dtype, "cuda", 1234)
    refs = fam.oracle(**inputs)
    outs = tuple(torch.empty_like(inputs["x"]) for _ in (refs if isinstance(refs, tuple) else (refs,)))
    for i, (name, fn) in enumerate(candidates(family, inputs, outs, kind).items()):
        print(f"launch {i}: {family}/{spec}/{dtype} {name}", flush=True)
        fn()
        torch.cuda.synchronize()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--family", default="rmsnorm", choices=("rmsnorm", "add_rmsnorm"))
    ap.add_argument("--set", default="one-row", choices=("one-row", "looped", "parts", "fence"))
    ap.add_argument("--shapes", default="512x65536,2048x131072,8192x65536")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=5.0)
    ap.add_argument("--ncu-once", action="store_true", help="launch each candidate once, in order, and race nothing")
    args = ap.parse_args()
    if args.ncu_once:
        for dtype in args.dtypes.split(","):
            for spec in args.shapes.split(","):
                launch_once(args.family, spec, dtype, args.set)
        return 0
    rng = random.Random(20261201)
    times_rows, summary = [], []
    for dtype in args.dtypes.split(","):
        for spec in args.shapes.split(","):
            rows, point_summary = race_point(args.family, spec, dtype, args, rng)
            times_rows += rows
            summary += point_summary
            torch.cuda.empty_cache()
    write_csv(args.out / f"times-{args.family}-{args.set}.csv", times_rows)
    write_csv(args.out / f"summary-{args.family}-{args.set}.csv", summary)
    table: dict[str, dict[str, float]] = {}
    for r in summary:
        table.setdefault(r["candidate"], {})[r["point"]] = r["pct_of_copy"]
    points = list(dict.fromkeys(r["point"] for r in summary))
    print("\n% of the copy, per candidate and point:")
    print(f"{'candidate':<20}" + "".join(f"{p.split('/', 1)[1]:>19}" for p in points))
    for name, row in sorted(table.items(), key=lambda kv: -min(kv[1].values())):
        print(f"{name:<20}" + "".join(f"{row.get(p, float('nan')):19.1f}" for p in points))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
