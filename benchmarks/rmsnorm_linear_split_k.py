"""rmsnorm_linear's split-K kernel (``kernels/rmsnorm_linear/split_k.py``) over its tiles and split counts at
decode points, against what the ops API runs there and against cuBLAS's product alone.

Per point, one CUPTI session times every candidate cold (a spin, kprof's read-only L2 flush, one call), in
rotating rounds (``decode_tiles.race``). Candidates: BLOCK_N x BLOCK_K x stages, each unsplit and with K split
so the launch has about 1, 2, 4 or 8 programs per SM (one candidate per distinct split count). Beside them:
``[cublas]``, ``addmm(b, xn, W)`` on rows normalised beforehand (the target's yardstick, the product alone);
``[norm+cublas]``, kprof's norm kernel then that product (the one-row route of ``triton_tuned``);
``[tuned]``, ``triton_tuned`` itself; ``[pinned product]``, kprof's Triton product alone on the normalised
rows (its pinned decode tiles); ``[two kernels]``, the norm then that product (``triton_two_kernels``).
``--shipped-only`` times the split-K kernel with the dispatch's config alone. Every candidate's output is checked against an fp32 op first.

    python benchmarks/rmsnorm_linear_split_k.py --compile-only --shard I/N   # fill Triton's cache in parallel
    python benchmarks/rmsnorm_linear_split_k.py --out DIR [--rows 1,4,8,16,32] [--dtypes bf16,fp16]
    python benchmarks/rmsnorm_linear_split_k.py --score DIR/split_k.csv[.gz] ...   # several machines' races
    python benchmarks/rmsnorm_linear_split_k.py --out DIR --pipelined ...            # x pipelined or not, every tile
    python benchmarks/rmsnorm_linear_split_k.py --out DIR --only-pipelined --twins unguarded  # fp16's check
    python benchmarks/rmsnorm_linear_split_k.py --score-pipelined DIR/split_k.csv[.gz] ...  # and the H200 table
    python benchmarks/rmsnorm_linear_split_k.py --out DIR --shipped-only --folded   # on g folded into W, and the op's

``--score`` reads races (each file one machine) and prints, per dtype and column class, the policies (tiles x
programs per SM) with the smallest worst ratio to each point's fastest candidate, then what the shipped
table (``split_k.SPLIT_TILES``) and dispatch classes (``tuned.SPLIT_K_CLASSES``) give: per (row class, column
class) the geometric mean and worst of split-K over ``[tuned]``, and over ``[cublas]`` in the classes taken.

Writes DIR/split_k.csv (one row per point and candidate: median and every round, us) and prints, per point,
the fastest candidate and the references.
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import math
from pathlib import Path

import torch
from bench_common import candidate_rows, checked, write_csv
from decode_tiles import race

from kprof.kernels import discover, ops
from kprof.kernels.lib import launching
from kprof.kernels.lib import split_k as lib_split_k
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear import fused, split_k, tuned, two_kernels
from kprof.kernels.rmsnorm_linear.fused import folded_weight
from kprof.kernels.rmsnorm_linear.tuned import rmsnorm_linear_tuned

# BLOCK_N x BLOCK_K x stages whose pipelined weight tiles fit 200 KB of shared memory
TILES = [
    (bn, bk, st)
    for bn in (32, 64, 128, 256)
    for bk in (64, 128, 256)
    for st in (3, 4)
    if st * bk * bn * 2 <= 200 * 1024 and bn * bk >= 4096
]
PER_SM = (0, 1, 2, 4, 8)  # 0: no split


# Taller row tiles (``--bms 16,32,64``, for 32-128 rows) with these tiles only: 8 warps from 64 rows
TALL_TILES = [(64, 64, 3), (64, 64, 4), (128, 64, 3), (128, 64, 4), (64, 128, 3), (128, 128, 3)]


def tile_set(bms: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, stages) raced: ``TILES`` with 16-row tiles, ``TALL_TILES`` with taller ones."""
    return [(bm, bn, bk, st) for bm in bms for bn, bk, st in (TILES if bms == (16,) else TALL_TILES)]


def shippable(name: str) -> bool:
    """A candidate the race may call the best: a tile, not a reference (``[...]``) nor the unguarded twin, which is
    wrong wherever fp16 cannot hold x * g."""
    return not name.startswith("[") and "unguarded" not in name


# Twins of the candidates with x pipelined, in fp16 (``--twins``): name -> (which tiles, the meta-parameters changed)
TWINS = {
    # fp16's check from the product in steps whose default keeps max|g| in the loop (``split_k.g_top_for``)
    "product-check": (lambda bk: split_k.g_top_for(bk), {"G_TOP": False}),
    # fp16 products with no check at all (PRECISION 0): what the check costs; wrong where fp16 cannot hold x * g,
    # so never shipped (the race's inputs are in range: it passes the oracle check there)
    "unguarded": (lambda bk: True, {"PRECISION": 0}),
    # fp16's second loop inlined between the loop and the epilogue, as before it became a call (``OUTLINED``)
    "inlined": (lambda bk: True, {"OUTLINED": False}),
}


def x_paths(pipelined: bool, only_pipelined: bool) -> tuple[bool, ...]:
    """The ``PIPELINED_X`` values raced: x loaded ahead, pipelined too (``pipelined``), or pipelined alone."""
    return (True,) if only_pipelined else (False, True) if pipelined else (False,)


def twin_metas(twins: tuple[str, ...], block_k: int) -> list[tuple[str, dict]]:
    """(name, meta-parameters changed) of each of ``twins`` (``TWINS``) that applies to steps of ``block_k``."""
    return [(twin, TWINS[twin][1]) for twin in twins if TWINS[twin][0](block_k)]


def candidate_name(bm: int, bn: int, bk: int, stages: int, splits: int, pipelined: bool = False, twin: str = "") -> str:
    """A raced config's name in the race's CSV: tiles, stages, programs per output tile, `` px`` with x pipelined,
    then the twin's name (``TWINS``) where it is one."""
    return f"{bm}x{bn}x{bk} s{stages} split{splits}{' px' if pipelined else ''}{' ' + twin if twin else ''}"


def candidates(
    m: int,
    k: int,
    n: int,
    sms: int,
    bms: tuple[int, ...] = (16,),
    pipelined: bool = False,
    twins: tuple[str, ...] = (),
    only_pipelined: bool = False,
) -> dict[str, object]:
    """name -> config, one per distinct (tiles, split count); with ``pipelined`` each also with x pipelined
    (``PIPELINED_X``, the name ending in `` px``; ``only_pipelined``: those alone), and each of those with the
    ``twins`` (``TWINS``) that apply to its steps."""
    out = {}
    for px in x_paths(pipelined, only_pipelined):
        for bm, bn, bk, st in tile_set(bms):
            for p in PER_SM:
                splits = 1 if p == 0 else lib_split_k.split_count(m, k, n, bm, bn, bk, p * sms)
                splits, _ = lib_split_k.k_ranges(k, splits, bk)
                warps = 8 if bm >= 64 else 4
                cfg = lib_split_k.config(bm, bn, bk, splits, warps, st, PIPELINED_X=px)
                out.setdefault(candidate_name(bm, bn, bk, st, splits, px), cfg)
                for twin, meta in twin_metas(twins, bk) if px else ():
                    cfg = lib_split_k.config(bm, bn, bk, splits, warps, st, PIPELINED_X=True, **meta)
                    out.setdefault(candidate_name(bm, bn, bk, st, splits, True, twin), cfg)
    return out


def run_point(
    shape: tuple[int, int, int],
    dtype: str,
    rounds: int,
    shipped_only: bool = False,
    bms: tuple[int, ...] = (16,),
    pipelined: bool = False,
    twins: tuple[str, ...] = (),
    only_pipelined: bool = False,
    folded: bool = False,
) -> list[dict]:
    """One point's race; ``folded``: each split-K candidate also on ``diag(g) W`` (its name ending in `` folded``),
    and ``[prepared op]``, what ``ops.PreparedRMSNormLinear`` runs, beside the references."""
    inputs = discover()["rmsnorm_linear"].make_inputs(shape, dtype, "cuda", sum(shape))
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    xn = rmsnorm_tuned(x, g, eps)
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps) * g.float()) @ w.float() + b.float()
    y = torch.empty((x.shape[0], w.shape[1]), dtype=x.dtype, device="cuda")
    out = torch.empty_like(y)
    fns = {
        "[cublas]": lambda: torch.addmm(b, xn, w, out=out),
        "[norm+cublas]": lambda: torch.addmm(b, rmsnorm_tuned(x, g, eps), w, out=out),
        "[tuned]": lambda: rmsnorm_linear_tuned(x, g, w, b, eps),
        "[pinned product]": lambda: fused.launch_product(xn, w, b, out, eps, norm=0),
        "[two kernels]": lambda: two_kernels.norm_then_triton(x, g, w, b, eps),
    }
    if shipped_only:
        pool = shipped(split_k.config_for(x, w.shape[1]))
    else:
        pool = candidates(
            *shape, launching.sm_count(x), bms, pipelined, twins if dtype == "fp16" else (), only_pipelined
        )
    launches = {
        name: (lambda c=cfg: (split_k.launch_split_k(x, g, w, b, y, eps, c), y)[1], ref) for name, cfg in pool.items()
    }
    if folded:
        wf = folded_weight(g, w)
        prepared = ops.PreparedRMSNormLinear(g, w)
        fns["[prepared op]"] = lambda: prepared(x, b, eps)
        if shipped_only:
            pool = shipped(split_k.config_for(x, w.shape[1], True))
        for name, cfg in pool.items():
            run = (lambda c=cfg: (split_k.launch_split_k(x, g, wf, b, y, eps, c, folded=True), y)[1], ref)
            launches[f"{name} folded"] = run
    ok, notes = checked(launches, y)
    return candidate_rows(dtype, shape, race({**fns, **ok}, rounds), notes)


def run_point_with_ops(*args: object, **kwargs: object) -> list[dict]:
    """:func:`run_point` with the ops' Triton path on (``[prepared op]`` otherwise runs PyTorch's eager op), restored
    after."""
    previous = ops.use_triton(True)
    try:
        return run_point(*args, **kwargs)
    finally:
        ops.use_triton(previous)


def shipped(cfg: object) -> dict[str, object]:
    """The dispatch's config (``--shipped-only``) by its name in the race."""
    k = cfg.kwargs
    return {f"16x{k['BLOCK_N']}x{k['BLOCK_K']} s{cfg.num_stages} split{k['SPLIT_K']} [shipped]": cfg}


def compile_shard(
    shard: str,
    dtypes: list[str],
    bms: tuple[int, ...] = (16,),
    pipelined: bool = False,
    twins: tuple[str, ...] = (),
    only_pipelined: bool = False,
    folded: bool = False,
) -> None:
    """This shard's share of (dtype, tiles, split 1 or more, x pipelined or not, fp16's twins, on g folded into W
    too with ``folded``) launched once at a small shape of the same specialisation (M is not specialised), so Triton's
    cache holds every binary before the timed run."""
    index, count = (int(v) for v in shard.split("/"))
    items = [
        (d, t, s, px, meta)
        for d in dtypes
        for t in tile_set(bms)
        for s in (1, 2)
        for px in x_paths(pipelined, only_pipelined)
        for meta in [{}] + [m for _, m in twin_metas(twins if px and d == "fp16" else (), t[2])]
    ]
    for d, (bm, bn, bk, st), s, px, meta in items[index::count]:
        inputs = discover()["rmsnorm_linear"].make_inputs((4, 512, 512), d, "cuda", 0)
        y = torch.empty((4, 512), dtype=inputs["x"].dtype, device="cuda")
        cfg = lib_split_k.config(bm, bn, bk, s, 8 if bm >= 64 else 4, st, PIPELINED_X=px, **meta)
        for fold in (False, True) if folded and not meta else (False,):
            w = folded_weight(inputs["g"], inputs["w"]) if fold else inputs["w"]
            split_k.launch_split_k(inputs["x"], inputs["g"], w, inputs["b"], y, inputs["eps"], cfg, folded=fold)
    torch.cuda.synchronize()


def read_race(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """(dtype, shape) -> candidate -> median us, from one race's CSV (gzipped or not)."""
    opener = gzip.open if path.suffix == ".gz" else open
    out: dict[tuple[str, str], dict[str, float]] = collections.defaultdict(dict)
    with opener(path, "rt") as f:
        for r in csv.DictReader(f):
            if r["median_us"]:
                out[(r["dtype"], r["shape"])][r["candidate"]] = float(r["median_us"])
    return out


def policy_time(
    times: dict[str, float],
    shape: str,
    tile: tuple[int, int, int, int],
    sms: int = 132,
    pipelined: bool = False,
    twin: str = "",
) -> float | None:
    """The time of the candidate a policy (BLOCK_N, BLOCK_K, stages, programs per SM; 0: no split; x pipelined or
    not; a twin's name, ``TWINS``) ran at."""
    m, k, n = (int(v) for v in shape.split("x"))
    bn, bk, stages, per_sm = tile
    splits = 1 if per_sm == 0 else lib_split_k.split_count(m, k, n, 16, bn, bk, per_sm * sms)
    splits, _ = lib_split_k.k_ranges(k, splits, bk)
    return times.get(candidate_name(16, bn, bk, stages, splits, pipelined, twin))


def geo(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def score_pipelined(paths: list[Path]) -> None:
    """Per dtype, column class and K of races run with --pipelined: the policies (tiles, programs per SM, x
    pipelined or not) with the smallest worst ratio to each point's fastest candidate, and what the H200's table
    (``split_k.fast_memory_pipelined_tiles``) runs there against the fastest, the op as raced ([tuned]) and cuBLAS."""
    groups: dict[tuple[str, int, int], list[tuple[str, dict[str, float]]]] = collections.defaultdict(list)
    for p in paths:
        for (dtype, shape), times in read_race(p).items():
            _, k, n = (int(v) for v in shape.split("x"))
            groups[(dtype, n, k)].append((shape, times))
    policies = [
        ((bn, bk, st, p), px, twin)
        for bn, bk, st in TILES
        for p in PER_SM
        for px, twin in ((False, ""), (True, ""), (True, "product-check"))
    ]
    torch_dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    for (dtype, n, k), group in sorted(groups.items()):
        fastest = [min(v for c, v in t.items() if shippable(c)) for _, t in group]
        ranked = []
        for tile, px, twin in policies:
            ratios = [policy_time(t, s, tile, pipelined=px, twin=twin) for s, t in group]
            if all(ratios):
                ranked.append((max(r / f for r, f in zip(ratios, fastest)), (*tile, px) + ((twin,) if twin else ())))
        ranked.sort()
        table = split_k.fast_memory_pipelined_tiles(k, n, torch_dtypes[dtype])
        line = f"{dtype} K {k} N~{n} ({len(group)} points): " + "  ".join(f"{p} {w:.3f}" for w, p in ranked[:3])
        if table is not None:
            times = [policy_time(t, s, table, pipelined=True) for s, t in group]
            best = [v / f for v, f in zip(times, fastest)]
            tuned_r = [v / t["[tuned]"] for v, (_, t) in zip(times, group)]
            cublas_r = [v / t["[cublas]"] for v, (_, t) in zip(times, group)]
            line += (
                f"\n    H200 table {table}: <= {max(best):.3f}x the fastest, {min(tuned_r):.3f}-{max(tuned_r):.3f}x "
                f"[tuned], {min(cublas_r):.3f}-{max(cublas_r):.3f}x cuBLAS"
            )
        print(line)


def score(paths: list[Path]) -> None:
    races = [read_race(p) for p in paths]
    dtypes = sorted({d for race in races for d, _ in race})
    policies = [(bn, bk, st, p) for bn, bk, st in TILES for p in PER_SM]
    for dtype in dtypes:
        torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        for col in split_k.SPLIT_TILES[torch.bfloat16]:
            ranked = []
            for pol in policies:
                ratios = []
                for one in races:
                    for (d, shape), times in one.items():
                        t = policy_time(times, shape, pol) if d == dtype and int(shape.split("x")[2]) == col else 0
                        if t:
                            ratios.append(t / min(v for c, v in times.items() if not c.startswith("[")))
                if ratios:
                    ranked.append((max(ratios), geo(ratios), pol))
            ranked.sort()
            shipped = split_k.SPLIT_TILES[torch_dtype][col]
            print(f"{dtype} N~{col}: shipped {shipped}; best by worst ratio to the fastest candidate:")
            for worst, mean, pol in ranked[:3]:
                print(f"    {pol}  worst {worst:.3f}  geometric mean {mean:.4f}")
        for row in tuned.SPLIT_K_ROWS:
            cells = []
            for col in split_k.SPLIT_TILES[torch.bfloat16]:
                vs_tuned, vs_cublas = [], []
                for one in races:
                    for (d, shape), times in one.items():
                        m, _, n = (int(v) for v in shape.split("x"))
                        if d == dtype and m == row and n == col:
                            t = policy_time(times, shape, split_k.SPLIT_TILES[torch_dtype][col])
                            vs_tuned.append(t / times["[tuned]"])
                            vs_cublas.append(t / times["[cublas]"])
                taken = (row, col) in tuned.SPLIT_K_CLASSES.get(torch_dtype, {})
                cells.append(
                    f"{col}{'*' if taken else ' '} {geo(vs_tuned):.3f}/{max(vs_tuned):.3f} "
                    f"(cuBLAS {geo(vs_cublas):.3f})"
                )
            print(f"{dtype} {row:2} rows, split-K / [tuned] geo/worst (* taken): " + "  ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--rows", default="1,4,16")
    ap.add_argument("--ks", default="2048,4096,8192")
    ap.add_argument("--cols", default="5504,11008,14336,28672")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--bms", default="16", help="row tiles raced, e.g. 16,32,64 (taller ones race TALL_TILES)")
    ap.add_argument("--shipped-only", action="store_true", help="only the config the dispatch runs, no race of tiles")
    ap.add_argument("--pipelined", action="store_true", help="race every tile with x pipelined too (names end in px)")
    ap.add_argument("--only-pipelined", action="store_true", help="race the tiles with x pipelined alone")
    ap.add_argument(
        "--twins",
        default="",
        help="with x pipelined, race fp16 twins of each tile too (comma-separated: " + ", ".join(TWINS) + ")",
    )
    ap.add_argument(
        "--folded",
        action="store_true",
        help="race each candidate on g folded into W too (names end in folded), and what ops.PreparedRMSNormLinear runs",
    )
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--score", nargs="+", type=Path, help="races to score (CSV files), instead of racing")
    ap.add_argument("--score-pipelined", nargs="+", type=Path, help="races run with --pipelined, scored by K too")
    args = ap.parse_args()
    if args.score:
        score(args.score)
        return
    if args.score_pipelined:
        score_pipelined(args.score_pipelined)
        return
    dtypes = args.dtypes.split(",")
    twins = tuple(t for t in args.twins.split(",") if t)
    bms = tuple(int(v) for v in args.bms.split(","))
    if args.compile_only:
        compile_shard(args.shard, dtypes, bms, args.pipelined, twins, args.only_pipelined, args.folded)
        return
    rows: list[dict] = []
    ints = [[int(v) for v in s.split(",")] for s in (args.rows, args.ks, args.cols)]
    for dtype in dtypes:
        for shape in [(m, k, n) for m in ints[0] for k in ints[1] for n in ints[2]]:
            point = run_point_with_ops(
                shape,
                dtype,
                args.rounds,
                args.shipped_only,
                bms,
                args.pipelined,
                twins,
                args.only_pipelined,
                args.folded,
            )
            rows += point
            med = {r["candidate"]: r["median_us"] for r in point if r["median_us"] != ""}
            best = min((c for c in med if shippable(c) and "folded" not in c), key=med.get, default=None)
            best_folded = min((c for c in med if shippable(c) and "folded" in c), key=med.get, default=None)
            unguarded = min((c for c in med if "unguarded" in c), key=med.get, default=None)
            cub = med["[cublas]"]
            print(
                f"{dtype} {'x'.join(map(str, shape)):14} cublas {cub:7.2f} norm+cublas {med['[norm+cublas]']:7.2f} "
                f"tuned {med['[tuned]']:7.2f} ({med['[tuned]'] / cub:.3f}x)  two kernels {med['[two kernels]']:7.2f}  "
                f"best {best} {med.get(best, 0):7.2f} ({med.get(best, 0) / cub:.3f}x)"
                + (f"  unguarded (never shipped) {unguarded} {med[unguarded]:7.2f}" if unguarded else "")
                + (
                    f"  best folded {best_folded} {med[best_folded]:7.2f} ({med[best_folded] / cub:.3f}x)"
                    f"  prepared op {med['[prepared op]']:7.2f} ({med['[prepared op]'] / cub:.3f}x)"
                    if best_folded
                    else ""
                ),
                flush=True,
            )
            write_csv(args.out / "split_k.csv", rows)


if __name__ == "__main__":
    main()
