"""Decode-row designs for rmsnorm_linear on a folded weight, raced against what ``ops.PreparedRMSNormLinear`` runs
there, the split-K kernel on the fold in its dispatch's config, and cuBLAS's product alone: column slabs (the split-K
kernel's folded loop unsplit, each program over COLS columns of a power-of-two tile, so N / COLS programs) and the TMA
kernel (``kernels/rmsnorm_linear/tma_decode.py``'s loop: x and W by descriptors, or W alone with x by ``cp.async``).
The first round raced a stream-K kernel (every program the same share of the weight's K steps) with this script at
commit c0e7096, where it was ``kernels/rmsnorm_linear/stream_k.py`` (``git show c0e7096:kernels/rmsnorm_linear/
stream_k.py``); it lost, and was removed.

Per point, one CUPTI session times every candidate cold (a spin, kprof's read-only L2 flush, one call), in rotating
rounds (``decode_tiles.race``). Candidates: ``slab Cc xBK sS`` (C columns a program, BLOCK_K steps, S stages), ``tma
BNxBK sS`` and ``tma-w BNxBK sS`` (W alone by descriptor), each output checked against a float64 oracle first. Beside
them: ``[cublas]``, ``addmm(b, xn, W)`` on rows normalised beforehand (the decode target's yardstick); ``[split-k
folded]``, the split-K kernel on the fold in ``split_k.config_for(..., folded=True)``; ``[prepared op]``, the ops object
itself.

    python benchmarks/rmsnorm_linear_decode_designs.py --out DIR --only slabs|tma|tma-w [--rows 1,16] [--points 3584x4608,...]
    python benchmarks/rmsnorm_linear_decode_designs.py --score DIR/designs.csv[.gz] ...   # one config for every point

Writes DIR/designs.csv (one row per point and candidate: median and every round, us) and prints per point the
references and the fastest candidates. ``--score`` prints, per dtype, the configs with the smallest worst ratio to
each point's fastest candidate, and each point's best and chosen config against the references.
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import math
from pathlib import Path

import torch
import triton
import triton.language as tl
from bench_common import back_to_back_us, candidate_rows, checked, host_us, write_csv
from decode_tiles import race

from kprof.kernels import discover, ops
from kprof.kernels.lib import launching, plans
from kprof.kernels.lib import split_k as lib_split_k
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear import split_k, tma_decode
from kprof.kernels.rmsnorm_linear.fused import folded_weight

SMEM_BYTES = 220 * 1024  # an H100's / H200's 227 KB a block, less room for the epilogue's scratch


def stage_bytes(bn: int, bk: int) -> int:
    """Shared memory of one pipelined step: a BLOCK_K x BLOCK_N 16-bit weight tile and a 16 x BLOCK_K x tile."""
    return 2 * bk * (bn + tma_decode.ROWS)


@triton.jit(do_not_specialize=["M"])
def _slab_kernel(
    x_ptr,  # [M, K] input rows, M <= BLOCK_M
    w_ptr,  # [K, N] weight with g folded in
    b_ptr,  # [N] bias
    y_ptr,  # [M, N] output, contiguous
    M,
    N,
    K,
    stride_xm,
    stride_wk,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    COLS: tl.constexpr,  # columns a program owns (a multiple of 8, at most BLOCK_N): the tile's others are masked
):
    """The split-K kernel's folded, x-pipelined loop unsplit, each program over COLS columns of a BLOCK_N tile:
    the program count is N / COLS, whatever power of two the tile is (a candidate, not shipped)."""
    offs_m, row_ok = lib_split_k.tile_rows(0, M, BLOCK_M, True)
    lanes = tl.arange(0, BLOCK_N)
    offs_n = tl.program_id(0) * COLS + lanes
    col_ok = tl.max_constancy((lanes < COLS) & (offs_n < N), 8)
    offs_n = tl.max_contiguous(tl.multiple_of(offs_n, 8), 8)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + tl.multiple_of(offs_m[:, None].to(tl.int64) * stride_xm, [8, 8]) + offs_k[None, :]
    w_ptrs = w_ptr + tl.multiple_of(offs_k[:, None] * stride_wk, [8, 8]) + offs_n[None, :].to(tl.int64)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    gram = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        here = tl.max_constancy(offs_k < K - k, 8)
        xr = tl.load(x_ptrs, mask=row_ok[:, None] & here[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=here[:, None] & col_ok[None, :], other=0.0)
        gram = tl.dot(xr, tl.trans(xr), gram)
        acc = tl.dot(xr, w, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk
    diagonal = tl.arange(0, BLOCK_M)[:, None] == tl.arange(0, BLOCK_M)[None, :]
    ss = tl.sum(tl.where(diagonal, gram, 0.0), axis=1)
    out = acc * tl.rsqrt(ss / K + eps)[:, None] + tl.load(b_ptr + offs_n, mask=col_ok, other=0.0).to(tl.float32)
    mask = row_ok[:, None] & col_ok[None, :]
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], out.to(y_ptr.dtype.element_ty), mask=mask)


def launch_slab(x, wf, b, y, eps, cols: int, bk: int, stages: int) -> None:
    """The slab candidate on contiguous, 8-aligned 16-bit operands with a bias."""
    m, k = x.shape
    n = wf.shape[1]
    bn = max(16, triton.next_power_of_2(cols))
    _slab_kernel[(triton.cdiv(n, cols),)](
        x, wf, b, y, m, n, k, x.stride(0), wf.stride(0), float(eps), BLOCK_M=16, BLOCK_N=bn, BLOCK_K=bk, COLS=cols,
        num_warps=4, num_stages=stages,
    )  # fmt: skip


@triton.jit(do_not_specialize=["M"])
def _tma_w_kernel(
    w_desc,  # W with g folded in [K, N], blocks [BLOCK_K, BLOCK_N]
    x_ptr,  # x [M, K] contiguous, by cp.async copies, its rows past M masked
    b_ptr,  # [N] bias
    y_ptr,  # [M, N] output, contiguous
    M,
    N,
    K,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """``tma_decode.py``'s kernel with x by pointers, W alone by its descriptor (a candidate, not shipped: a decode
    call's x is new, so its descriptor would be made on a call's host time)."""
    n0 = tl.program_id(0) * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    gram = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
    offs_m, row_ok = lib_split_k.tile_rows(0, M, BLOCK_M, True)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + tl.multiple_of(offs_m[:, None].to(tl.int64) * K, [8, 8]) + offs_k[None, :]
    for k in range(0, K, BLOCK_K):
        here = tl.max_constancy(offs_k < K - k, 8)
        xr = tl.load(x_ptrs, mask=row_ok[:, None] & here[None, :], other=0.0)
        x_ptrs += BLOCK_K
        w = w_desc.load([k, n0])
        gram = tl.dot(xr, tl.trans(xr), gram)
        acc = tl.dot(xr, w, acc)
    diagonal = tl.arange(0, BLOCK_M)[:, None] == tl.arange(0, BLOCK_M)[None, :]
    ss = tl.sum(tl.where(diagonal, gram, 0.0), axis=1)
    cols = n0 + tl.arange(0, BLOCK_N)
    out = acc * tl.rsqrt(ss / K + eps)[:, None] + tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    mask = row_ok[:, None] & (cols < N)[None, :]
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * N + cols[None, :], out.to(y_ptr.dtype.element_ty), mask=mask)


def launch_tma(x, wf, b, y, eps, bn: int, bk: int, stages: int, x_desc: bool = True) -> None:
    """A TMA candidate on contiguous 16-bit operands with a bias: ``tma_decode.py``'s kernel in these tiles, or with
    x by pointers (``x_desc`` False, ``_tma_w_kernel``)."""
    m, k = x.shape
    n = wf.shape[1]
    desc = launching.TensorDescriptor.from_tensor
    tiles = {"BLOCK_M": 16, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": 4, "num_stages": stages}
    if x_desc:
        grid = (triton.cdiv(n, bn),)
        tma_decode.tma_decode_kernel[grid](
            desc(x, [16, bk]), desc(wf, [bk, bn]), b, y, m, n, k, float(eps), HAS_BIAS=True, IEEE=False, **tiles
        )
    else:
        _tma_w_kernel[(triton.cdiv(n, bn),)](desc(wf, [bk, bn]), x, b, y, m, n, k, float(eps), **tiles)


# the first race's (tma-3/): every tile that fits; then (``--only tma-w``) W alone by descriptor, x by pointers, in
# the tiles that came within 10% of the fastest there
TMA_SLABS = {
    f"tma {bn}x{bk} s{st}": (bn, bk, st)
    for bn in (32, 64, 128)
    for bk in (64, 128, 256)
    for st in (3, 4, 5, 6)
    if st * stage_bytes(bn, bk) <= SMEM_BYTES and bn * bk >= 4096
}
TMA_W_SLABS = {
    f"tma{'' if xd else '-w'} {bn}x{bk} s{st}": (bn, bk, st, xd)
    for bn, bk, st in ((64, 256, 3), (64, 256, 4), (64, 256, 5), (64, 128, 5), (64, 128, 6))
    for xd in (True, False)
}


SLABS = {
    f"slab {cols}c x{bk} s{st}": (cols, bk, st)
    for cols in (24, 32, 40, 48, 56, 64)
    for bk in (128, 256)
    for st in (3, 4)
}


def run_point(shape: tuple[int, int, int], dtype: str, rounds: int, slabs: bool, tma: bool, tma_w: bool) -> list[dict]:
    """One point's race (see the module's docstring): the slab candidates where ``slabs``, the TMA ones where ``tma``,
    x by descriptor or pointers where ``tma_w``."""
    inputs = discover()["rmsnorm_linear"].make_inputs(shape, dtype, "cuda", sum(shape))
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    xd = x.double()
    ref = (xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * g.double()) @ w.double() + b.double()
    xn = rmsnorm_tuned(x, g, eps)
    wf = folded_weight(g, w)
    prepared = ops.PreparedRMSNormLinear(g, w)
    y = torch.empty((x.shape[0], w.shape[1]), dtype=x.dtype, device="cuda")
    out = torch.empty_like(y)
    shipped = split_k.config_for(x, w.shape[1], folded=True)
    launches = {
        "[split-k folded]": (lambda: (split_k.launch_split_k(x, g, wf, b, y, eps, shipped, folded=True), y)[1], ref),
        "[prepared op]": (lambda: y.copy_(prepared(x, b, eps)), ref),
        **{
            name: (lambda c=c: (launch_slab(x, wf, b, y, eps, *c), y)[1], ref)
            for name, c in (SLABS.items() if slabs else ())
        },
        **{
            name: (lambda c=c: (launch_tma(x, wf, b, y, eps, *c), y)[1], ref)
            for name, c in (TMA_SLABS.items() if tma else ())
        },
        **{
            name: (lambda c=c: (launch_tma(x, wf, b, y, eps, *c), y)[1], ref)
            for name, c in (TMA_W_SLABS.items() if tma_w else ())
        },
    }
    ok, notes = checked(launches, y)
    fns = {"[cublas]": lambda: torch.addmm(b, xn, w, out=out), **ok}
    fns["[prepared op]"] = lambda: prepared(x, b, eps)  # timed as a model calls it, not with the copy the check adds
    return candidate_rows(dtype, shape, race(fns, rounds), notes)


def read(paths: list[Path]) -> dict[tuple[str, str], dict[str, float]]:
    """(dtype, shape) -> candidate -> median us, from race CSVs (later files win a point raced twice)."""
    out: dict[tuple[str, str], dict[str, float]] = collections.defaultdict(dict)
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            for row in csv.DictReader(f):
                if row["median_us"]:
                    out[(row["dtype"], row["shape"])][row["candidate"]] = float(row["median_us"])
    return out


def score(paths: list[Path]) -> None:
    """Per dtype, the five configs with the smallest worst ratio to each point's fastest candidate; then
    each point's fastest candidate and the best-scoring config against the references."""
    races = read(paths)
    for dtype in sorted({d for d, _ in races}):
        points = {s: med for (d, s), med in races.items() if d == dtype}
        names = sorted(n for n in set.intersection(*(set(m) for m in points.values())) if not n.startswith("["))
        worst = {}
        for n in names:
            ratios = [med[n] / min(med[c] for c in med if not c.startswith("[")) for med in points.values()]
            worst[n] = (max(ratios), math.exp(sum(map(math.log, ratios)) / len(ratios)))
        ranked = sorted(worst, key=lambda n: worst[n])
        print(f"{dtype}: configs by worst ratio to each point's fastest (worst, geometric mean)")
        for n in ranked[:5]:
            print(f"  {n:22} {worst[n][0]:.3f} {worst[n][1]:.3f}")
        pick = ranked[0]
        print(f"{dtype}: point, cuBLAS us, then / cuBLAS: prepared op, split-K folded, fastest candidate, {pick}")
        for shape, med in sorted(points.items()):
            cub = med["[cublas]"]
            best = min((c for c in med if not c.startswith("[")), key=med.get)
            print(
                f"  {shape:16} {cub:7.2f}  {med['[prepared op]'] / cub:.3f}  {med['[split-k folded]'] / cub:.3f}  "
                f"{med[best] / cub:.3f} ({best})  {med[pick] / cub:.3f}"
            )


def host_rows(shape: tuple[int, int, int], dtype: str, rounds: int, calls: int = 200) -> list[dict]:
    """The prepared object's host time per call at ``shape`` on its TMA decode plan and, forced, on the split-K plan it
    ran there before (``tma_decode.serves`` off), in ``rounds`` alternating rounds in one process (plans are kept by
    signature, so each round drops them and makes its own, after two calls): from an idle GPU (``host_us``) and back
    to back (``back_to_back_us``), with the same x every call (its descriptor's encoding kept) and with a new x every
    call (a copy made in the call: its address may repeat as PyTorch's allocator hands blocks back)."""
    inputs = discover()["rmsnorm_linear"].make_inputs(shape, dtype, "cuda", sum(shape))
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    serves = tma_decode.serves
    prepared = ops.PreparedRMSNormLinear(g, w)
    names = ("tma decode plan", "split-k plan")
    rows = []
    try:
        for r in range(rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                tma_decode.serves = serves if name == names[0] else (lambda *a: False)
                plans.reset()
                prepared(x, b, eps)
                prepared(x, b, eps)
                for fresh in (False, True):
                    fn = (lambda: prepared(x.clone(), b, eps)) if fresh else (lambda: prepared(x, b, eps))
                    row = {"dtype": dtype, "shape": "x".join(map(str, shape)), "plan": name, "new x": fresh}
                    rows.append(row | {"round": r, "idle_us": host_us(fn, calls), "b2b_us": back_to_back_us(fn, calls)})
    finally:
        tma_decode.serves = serves
        plans.reset()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--rows", default="1,16")
    ap.add_argument("--points", default="3584x4608,4096x4608,5120x4608,4096x6144,5120x7168,2048x5504,4096x5504")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--only", choices=("slabs", "tma", "tma-w", "all"), default="all", help="which candidates to race")
    ap.add_argument("--score", nargs="+", type=Path, help="races to score (CSV files), instead of racing")
    ap.add_argument(
        "--host", action="store_true", help="the prepared object's host time per call, TMA decode plan or not"
    )
    args = ap.parse_args()
    if args.score:
        score(args.score)
        return
    if args.host:
        previous = ops.use_triton(True)
        rows = []
        try:
            for dtype in args.dtypes.split(","):
                for m in (int(v) for v in args.rows.split(",")):
                    for kn in args.points.split(","):
                        k, n = (int(v) for v in kn.split("x"))
                        point = host_rows((m, k, n), dtype, args.rounds)
                        rows += point
                        for name in ("tma decode plan", "split-k plan"):
                            for fresh in (False, True):
                                mine = [r for r in point if r["plan"] == name and r["new x"] == fresh]
                                idle = sorted(r["idle_us"] for r in mine)[len(mine) // 2]
                                b2b = sorted(r["b2b_us"] for r in mine)[len(mine) // 2]
                                print(f"{dtype} {m}x{k}x{n} {name:16} {'new x ' if fresh else 'same x'} idle {idle:6.1f} "
                                      f"us  back to back {b2b:6.1f} us", flush=True)  # fmt: skip
                write_csv(args.out / "host.csv", rows)
        finally:
            ops.use_triton(previous)
        return
    previous = ops.use_triton(True)  # the prepared object's Triton path, not PyTorch's eager op
    rows: list[dict] = []
    try:
        for dtype in args.dtypes.split(","):
            for m in (int(v) for v in args.rows.split(",")):
                for kn in args.points.split(","):
                    k, n = (int(v) for v in kn.split("x"))
                    point = run_point(
                        (m, k, n),
                        dtype,
                        args.rounds,
                        *(args.only in (what, "all") for what in ("slabs", "tma", "tma-w")),
                    )
                    rows += point
                    med = {r["candidate"]: r["median_us"] for r in point if r["median_us"] != ""}
                    cub = med["[cublas]"]
                    sk = sorted((c for c in med if not c.startswith("[")), key=med.get)[:3]
                    print(
                        f"{dtype} {m}x{k}x{n:<6} cublas {cub:6.2f}  prepared {med['[prepared op]'] / cub:.3f}x  "
                        f"split-k folded {med.get('[split-k folded]', math.nan) / cub:.3f}x  "
                        + "  ".join(f"{c} {med[c] / cub:.3f}x" for c in sk),
                        flush=True,
                    )
                    write_csv(args.out / "designs.csv", rows)
    finally:
        ops.use_triton(previous)


if __name__ == "__main__":
    main()
