"""swiglu's split-K kernel (``kernels/swiglu/split_k.py``) over its tiles and split counts at decode points,
against what the ops API runs there (``[tuned]``) and cuBLAS's product of both weights (``[cublas]``,
``x @ [Wg Wu]``, the target's yardstick).

Per point, one CUPTI session times every candidate cold, in rotating rounds (``decode_tiles.race``). Candidates:
BLOCK_N x BLOCK_K x stages (both weights' pipelined tiles within 200 KB of shared memory), each unsplit and
with K split so the launch has about 1, 2, 4 or 8 programs per SM. Every candidate's output is checked
against an fp32 op first.

    python benchmarks/swiglu_split_k.py --compile-only --shard I/N
    python benchmarks/swiglu_split_k.py --out DIR [--rows 1,4,16] [--dtypes bf16,fp16]
    python benchmarks/swiglu_split_k.py --score DIR/split_k.csv[.gz] ...   # several machines' races
    python benchmarks/swiglu_split_k.py --out DIR --rows-masked [--rows 1,2,4,16]   # the op's config, a tile's
                                                                # rows past M wrapped (read again) or masked

``--score`` prints, per dtype and column class, the policies (tiles x programs per SM) with the smallest worst
ratio to each point's fastest candidate, and per (row class, column class) the best policy's time over
``[tuned]`` and over ``[cublas]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
import triton
from bench_common import candidate_rows, checked, write_csv
from decode_tiles import race
from rmsnorm_linear_split_k import PER_SM, geo, read_race

from kprof.kernels import discover
from kprof.kernels.lib import launching
from kprof.kernels.lib import split_k as lib_split_k
from kprof.kernels.swiglu import split_k
from kprof.kernels.swiglu.tuned import swiglu_tuned

TILES = [
    (bn, bk, st)
    for bn in (32, 64, 128, 256)
    for bk in (64, 128, 256)
    for st in (3, 4)
    if 2 * st * bk * bn * 2 <= 200 * 1024 and bn * bk >= 4096
]


def name(bn: int, bk: int, st: int, splits: int) -> str:
    return f"16x{bn}x{bk} s{st} split{splits}"


def candidates(m: int, k: int, n: int, sms: int) -> dict[str, object]:
    """name -> config, one per distinct (tiles, split count)."""
    out = {}
    for bn, bk, st in TILES:
        for p in PER_SM:
            splits = 1 if p == 0 else lib_split_k.split_count(m, k, n, 16, bn, bk, p * sms)
            splits, _ = lib_split_k.k_ranges(k, splits, bk)
            out.setdefault(name(bn, bk, st, splits), lib_split_k.config(16, bn, bk, splits, 4, st))
    return out


def run_point(shape: tuple[int, int, int], dtype: str, rounds: int, rows_masked: bool = False) -> list[dict]:
    inputs = discover()["swiglu"].make_inputs(shape, dtype, "cuda", sum(shape))
    x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
    both = torch.cat([wg, wu], dim=1)
    gate, up = x.float() @ wg.float(), x.float() @ wu.float()
    ref = gate * torch.sigmoid(gate) * up
    y = torch.empty((x.shape[0], wg.shape[1]), dtype=x.dtype, device="cuda")
    out = torch.empty((x.shape[0], both.shape[1]), dtype=x.dtype, device="cuda")
    fns = {"[cublas]": lambda: torch.mm(x, both, out=out), "[tuned]": lambda: swiglu_tuned(x, wg, wu)}
    if rows_masked:  # the op's config, its tile's rows past M wrapped (read again) and masked
        cfg = split_k.config_for(x, wg.shape[1])
        pool = {
            f"op config, rows {'masked' if m else 'wrapped'}": triton.Config(
                {**cfg.kwargs, "MASK_ROWS": m}, num_warps=cfg.num_warps, num_stages=cfg.num_stages
            )
            for m in (False, True)
        }
    else:
        pool = candidates(*shape, launching.sm_count(x))
    launches = {
        label: (lambda c=cfg: (split_k.launch_split_k(x, wg, wu, y, c), y)[1], ref) for label, cfg in pool.items()
    }
    ok, notes = checked(launches, y)
    return candidate_rows(dtype, shape, race({**fns, **ok}, rounds), notes)


def compile_shard(shard: str, dtypes: list[str]) -> None:
    """This shard's share of (dtype, tiles, split 1 or more) launched once at a small shape of the same
    specialisation, so Triton's cache holds every binary before the timed run."""
    index, count = (int(v) for v in shard.split("/"))
    items = [(d, t, s) for d in dtypes for t in TILES for s in (1, 2)]
    for d, (bn, bk, st), s in items[index::count]:
        inputs = discover()["swiglu"].make_inputs((4, 512, 512), d, "cuda", 0)
        y = torch.empty((4, 512), dtype=inputs["x"].dtype, device="cuda")
        split_k.launch_split_k(
            inputs["x"], inputs["w_gate"], inputs["w_up"], y, lib_split_k.config(16, bn, bk, s, 4, st)
        )
    torch.cuda.synchronize()


def score(paths: list[Path]) -> None:
    races = [read_race(p) for p in paths]
    dtypes = sorted({d for one in races for d, _ in one})
    cols = sorted({int(s.split("x")[2]) for one in races for _, s in one})
    rows_seen = sorted({int(s.split("x")[0]) for one in races for _, s in one})
    for dtype in dtypes:
        for col in cols:
            ranked = []
            for bn, bk, st in TILES:
                for p in PER_SM:
                    ratios, vs_tuned, vs_cublas = [], {}, {}
                    for one in races:
                        for (d, shape), times in one.items():
                            m, k, n = (int(v) for v in shape.split("x"))
                            if d != dtype or n != col:
                                continue
                            splits = 1 if p == 0 else lib_split_k.split_count(m, k, n, 16, bn, bk, p * 132)
                            t = times.get(name(bn, bk, st, lib_split_k.k_ranges(k, splits, bk)[0]))
                            if t is None:
                                continue
                            ratios.append(t / min(v for c, v in times.items() if not c.startswith("[")))
                            vs_tuned.setdefault(m, []).append(t / times["[tuned]"])
                            vs_cublas.setdefault(m, []).append(t / times["[cublas]"])
                    if ratios:
                        ranked.append((max(ratios), geo(ratios), (bn, bk, st, p), vs_tuned, vs_cublas))
            ranked.sort(key=lambda r: r[:2])
            print(f"{dtype} N={col}: best policies by worst ratio to the fastest candidate")
            for worst, mean, pol, vs_tuned, vs_cublas in ranked[:3]:
                per_row = "  ".join(
                    f"{m} rows: /tuned {geo(vs_tuned[m]):.3f} (worst {max(vs_tuned[m]):.3f}) /cublas "
                    f"{geo(vs_cublas[m]):.3f}"
                    for m in rows_seen
                    if m in vs_tuned
                )
                print(f"    {pol} worst {worst:.3f} geo {mean:.4f} | {per_row}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--rows", default="1,4,16")
    ap.add_argument("--ks", default="2048,4096,8192")
    ap.add_argument("--cols", default="5504,11008,14336,28672")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--rows-masked", action="store_true", help="the op's config only, rows past M wrapped and masked")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--score", nargs="+", type=Path, help="races to score (CSV files), instead of racing")
    args = ap.parse_args()
    if args.score:
        score(args.score)
        return
    dtypes = args.dtypes.split(",")
    if args.compile_only:
        compile_shard(args.shard, dtypes)
        return
    rows: list[dict] = []
    ints = [[int(v) for v in s.split(",")] for s in (args.rows, args.ks, args.cols)]
    for dtype in dtypes:
        for shape in [(m, k, n) for m in ints[0] for k in ints[1] for n in ints[2]]:
            point = run_point(shape, dtype, args.rounds, args.rows_masked)
            rows += point
            med = {r["candidate"]: r["median_us"] for r in point if r["median_us"] != ""}
            best = min((c for c in med if not c.startswith("[")), key=med.get)
            cub = med["[cublas]"]
            if args.rows_masked:
                print("  " + "  ".join(f"{c}: {med[c] / cub:.3f}x" for c in med if c.startswith("op ")), flush=True)
            print(
                f"{dtype} {'x'.join(map(str, shape)):14} cublas {cub:7.2f} tuned {med['[tuned]']:7.2f} "
                f"({med['[tuned]'] / cub:.3f}x)  best {best} {med[best]:7.2f} ({med[best] / cub:.3f}x, "
                f"{med[best] / med['[tuned]']:.3f}x tuned)",
                flush=True,
            )
            write_csv(args.out / "split_k.csv", rows)


if __name__ == "__main__":
    main()
