"""Every tile config of kprof's two tiled matrix products (swiglu's, and rmsnorm_linear's product after the
norm) at the decode points of their shape grids: what pinned decode tiles are chosen from.

Per point, one CUPTI session times every config cold (a spin, kprof's read-only L2 flush, one call), the
configs interleaved round after round in a rotating order, beside one cuBLAS product of the same shape
(``x @ [Wg Wu]`` for swiglu, ``addmm(b, xn, W)`` for rmsnorm_linear). Each config's output is checked
against an fp32 product first (NaN-poisoned output). Then, unless ``--no-autotune``, Triton's autotuner
(with the family's pruning) picks a config in this process, as a model's first call would.

    python benchmarks/decode_tiles.py --compile-only --shard I/N   # fill Triton's cache, N processes at once
    python benchmarks/decode_tiles.py --out DIR [--families swiglu,rmsnorm_linear] [--dtypes bf16,fp16]

Writes DIR/decode_tiles.csv (one row per point and config: median and every round, in us) and prints, per
point, the fastest config, the autotuner's pick, the pinned config (``DECODE_TILES``) and cuBLAS.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
import triton
from bench_common import write_csv

from kprof.dtypes import element_size
from kprof.kernels import discover
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear import fused
from kprof.kernels.swiglu import tuned
from kprof.timing import busy_ns, collect_device_records, flush, split_at_flushes

SPIN_CYCLES = 100_000  # ~50 us at H100 clocks: covers a call's host time, so each call starts right after its flush


def configs(family: str) -> list[triton.Config]:
    return list(tuned.CONFIGS + tuned.DECODE_CONFIGS) if family == "swiglu" else list(fused.CONFIGS)


def name(c: triton.Config) -> str:
    k = c.kwargs
    return f"{k['BLOCK_M']}x{k['BLOCK_N']}x{k['BLOCK_K']} w{c.num_warps} s{c.num_stages}"


def operands(family: str, shape: tuple[int, ...], dtype: str, seed: int) -> tuple[dict, object, torch.Tensor]:
    """(the launch per config, the cuBLAS product, an fp32 reference of the output)."""
    inputs = discover()[family].make_inputs(shape, dtype, "cuda", seed)
    if family == "swiglu":
        x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
        y = torch.empty((x.shape[0], wg.shape[1]), dtype=x.dtype, device=x.device)
        both = torch.cat([wg, wu], dim=1)
        out = torch.empty((x.shape[0], both.shape[1]), dtype=x.dtype, device=x.device)
        gate, up = x.float() @ wg.float(), x.float() @ wu.float()
        ref = gate * torch.sigmoid(gate) * up

        def launch(c: triton.Config) -> torch.Tensor:
            tuned.launch_tuned(x, wg, wu, y, config=c)
            return y

        return {"launch": launch, "y": y}, lambda: torch.mm(x, both, out=out), ref
    x, g, w, b, eps = inputs["x"], inputs["g"], inputs["w"], inputs["b"], inputs["eps"]
    xn = rmsnorm_tuned(x, g, eps)
    y = torch.empty((x.shape[0], w.shape[1]), dtype=x.dtype, device=x.device)
    out = torch.empty_like(y)
    ref = xn.float() @ w.float() + b.float()

    def launch(c: triton.Config) -> torch.Tensor:
        fused.launch_product(xn, w, b, y, eps, norm=0, config=c)
        return y

    return {"launch": launch, "y": y}, lambda: torch.addmm(b, xn, w, out=out), ref


def autotuned(family: str, shape: tuple[int, ...], dtype: str, seed: int) -> str:
    """The config Triton's autotuner picks at this point (fresh inputs; the family's pruning applies), as the
    families ran before their decode tiles were pinned."""
    inputs = discover()[family].make_inputs(shape, dtype, "cuda", seed)
    if family == "swiglu":
        x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
        meta, options = tuned.launch_tuned(
            x, wg, wu, torch.empty((x.shape[0], wg.shape[1]), dtype=x.dtype, device="cuda"), autotune=True
        )
    else:
        x, w, b = inputs["x"], inputs["w"], inputs["b"]
        meta, options = fused.launch_product(
            x, w, b, torch.empty((x.shape[0], w.shape[1]), dtype=x.dtype, device="cuda"), 1e-6, norm=0, autotune=True
        )
    return name(triton.Config(meta, num_warps=options["num_warps"], num_stages=options["num_stages"]))


def race(fns: dict[str, object], rounds: int) -> dict[str, list[float]]:
    """Cold busy time (us) of each fn, ``rounds`` times, in one CUPTI session."""
    fl = flush()
    names = list(fns)
    order = [names[(i + r) % len(names)] for r in range(rounds) for i in range(len(names))]

    def session() -> None:
        for n in order:
            torch.cuda._sleep(SPIN_CYCLES)
            fl()
            fns[n]()
        torch.cuda._sleep(SPIN_CYCLES)
        fl()

    for n in names:
        fns[n]()
    torch.cuda.synchronize()
    _, segments = split_at_flushes(collect_device_records(session))
    if len(segments) != len(order) + 1:
        raise RuntimeError(f"{len(segments)} flushes recorded for {len(order)} calls: records dropped")
    times: dict[str, list[float]] = {n: [] for n in names}
    for n, seg in zip(order, segments):
        times[n].append(busy_ns(seg) / 1e3)
    return times


def run_point(family: str, shape: tuple[int, ...], dtype: str, rounds: int, autotune: bool) -> list[dict]:
    ops, cublas, ref = operands(family, shape, dtype, seed=hash((family, shape, dtype)) % 10_000)
    fns, notes = {"[cublas]": cublas}, {}
    for c in configs(family):
        try:
            ops["y"].fill_(float("nan"))
            err = ((ops["launch"](c).float() - ref).norm() / ref.norm()).item()
        except Exception as exc:  # noqa: BLE001 - a config that cannot compile here is reported, not timed
            notes[name(c)] = f"{type(exc).__name__}: {str(exc)[:100]}"
            continue
        if err < 2e-2:
            fns[name(c)] = lambda c=c: ops["launch"](c)
        else:
            notes[name(c)] = f"WRONG rel err {err:.3g}"
    times = race(fns, rounds)
    pick = autotuned(family, shape, dtype, seed=1) if autotune else ""
    point = "x".join(map(str, shape))
    table = tuned.DECODE_TILES if family == "swiglu" else fused.DECODE_TILES
    pinned = table.config(shape[0], shape[2], element_size(dtype))
    rows = [
        {
            "family": family,
            "dtype": dtype,
            "shape": point,
            "config": n,
            "median_us": statistics.median(v),
            "autotuned": n == pick,
            "pinned": pinned is not None and n == name(pinned),
            "rounds": " ".join(f"{u:.2f}" for u in v),
            "note": "",
        }
        for n, v in times.items()
    ]
    rows += [
        {
            "family": family,
            "dtype": dtype,
            "shape": point,
            "config": n,
            "median_us": "",
            "autotuned": False,
            "rounds": "",
            "note": why,
        }
        for n, why in notes.items()
    ]
    return rows


def points(family: str, rows: str | None, cols: str | None) -> list[tuple[int, int, int]]:
    """The decode part's M x K x N points, with ``rows`` / ``cols`` (comma-separated) replacing its M / N."""
    shapes = [tuple(s) for s in discover()[family].grid("decode").shapes]
    ms = [int(v) for v in rows.split(",")] if rows else sorted({s[0] for s in shapes})
    ns = [int(v) for v in cols.split(",")] if cols else sorted({s[2] for s in shapes})
    return [(m, k, n) for m in ms for k in sorted({s[1] for s in shapes}) for n in ns]


def compile_shard(shard: str, families: list[str], dtypes: list[str]) -> None:
    """Launch this shard's share of (family, dtype, config, M) once at a small shape of the same
    specialisation (every size a multiple of 16 but M, which is 1, 4 or 16: each its own), so Triton's cache holds every binary."""
    index, count = (int(v) for v in shard.split("/"))
    items = [(f, d, c, m) for f in families for d in dtypes for c in configs(f) for m in (1, 4, 16)]
    for f, d, c, m in items[index::count]:
        ops, _, _ = operands(f, (m, 256, 512), d, seed=0)
        try:
            ops["launch"](c)
        except Exception as exc:  # noqa: BLE001 - reported again, with its reason, by the timed run
            print(f"{f} {d} {name(c)} M={m}: {type(exc).__name__}", flush=True)
    torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--families", default="swiglu,rmsnorm_linear")
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--rows", help="M values instead of the decode part's, e.g. 1,4,16,32,64,128")
    ap.add_argument("--cols", help="N values instead of the decode part's")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--no-autotune", action="store_true")
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--shard", default="0/1")
    args = ap.parse_args()
    families, dtypes = args.families.split(","), args.dtypes.split(",")
    if args.compile_only:
        compile_shard(args.shard, families, dtypes)
        return
    rows: list[dict] = []
    for family in families:
        for dtype in dtypes:
            for shape in points(family, args.rows, args.cols):
                point = run_point(family, tuple(shape), dtype, args.rounds, not args.no_autotune)
                rows += point
                timed = sorted((r for r in point if r["median_us"] != ""), key=lambda r: r["median_us"])
                best = next(r for r in timed if r["config"] != "[cublas]")
                cub = next(r for r in timed if r["config"] == "[cublas]")
                auto = next((r for r in timed if r["autotuned"]), None)
                pin = next((r for r in timed if r["pinned"]), None)
                print(
                    f"{family:15} {dtype} {'x'.join(map(str, shape)):16} best {best['config']:18} "
                    f"{best['median_us']:8.2f}  autotuned {auto['config'] if auto else '-':18} "
                    f"{auto['median_us'] if auto else float('nan'):8.2f}  pinned "
                    f"{pin['median_us'] if pin else float('nan'):8.2f}  cublas {cub['median_us']:8.2f}",
                    flush=True,
                )
                write_csv(args.out / "decode_tiles.csv", rows)


if __name__ == "__main__":
    main()
