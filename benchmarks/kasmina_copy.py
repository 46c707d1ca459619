"""kasmina's telemetry kernel against a bare copy of x (the family's yardstick: the layer reads x and writes y
of the same size, so a device copy of x is the most it can hope for), over tiles, at its default shapes.

Per point, one CUPTI session times every candidate cold (a spin, kprof's read-only L2 flush, one call), in
rotating rounds (``decode_tiles.race``). Candidates: ``[copy x]`` (``out.copy_(x)``), ``[shipped]`` (the
``triton_telemetry`` provider as it is), ``[no telemetry]`` (the same kernel without the statistics: what
fusing them costs), ``[branch free + torch stats]``, and the telemetry kernel at rows per tile x warps; in fp32
(tf32x3 products) also at blueprint rows per product step (``k``). With ``--splits``, the shipped tile instead,
each seed's rows split over that many programs (``r``; the last to finish merges their statistics). Each candidate's y and telemetry are checked
against the float64 oracle first. (The first two races in ``results/kasmina-copy/`` also had rows split over
programs, x loaded a step ahead and IEEE fp32 products: none was kept.)

    python benchmarks/kasmina_copy.py --out DIR [--shapes 64x1000x64,...] [--dtypes bf16,fp16,fp32]

Writes DIR/kasmina_copy.csv (one row per point and candidate: median and every round, us) and prints, per
point, the copy, the shipped kernel and the fastest candidate, each as a fraction of the copy's speed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from bench_common import candidate_rows, print_notes, write_csv
from decode_tiles import race

from kprof.kernels import discover
from kprof.kernels.kasmina import branch_free

DEFAULT_SHAPES = "64x1000x64,1x1000x64,512x1000x64,64x250x256,48x333x100"
TILES = [(16, 2), (16, 4), (32, 2), (32, 4), (32, 8), (64, 2), (64, 4), (64, 8)]
# fp32 (tf32x3 products; see branch_free.precision_of): fewer rows per tile, more warps, the blueprint whole (up to
# 128 channels) or in steps of 32 or 64 rows
FP32_TILES = [(16, 2), (16, 4), (16, 8), (32, 2), (32, 4), (32, 8)]


def candidates(inp: dict, splits: tuple[int, ...] = ()) -> dict[str, object]:
    """name -> fn for every (rows per tile, warps) and, in fp32, blueprint rows per product step (``k``); with
    ``splits``, the shipped tile at each number of programs per seed (``r``)."""
    c = inp["weights"].shape[-1]
    if splits:
        n_rows = inp["x"].numel() // inp["x"].shape[-1]
        b, w, k = branch_free.tile_for(n_rows, c, inp["x"].dtype, True)
        return {
            f"b{b} w{w} k{k} r{r}": lambda r=r: branch_free.launch(**inp, telemetry=True, row_programs=r)
            for r in sorted({branch_free.clamp_row_programs(r, n_rows, b) for r in splits})
        }
    if inp["x"].dtype != torch.float32:
        return {
            f"b{b} w{w}": lambda b=b, w=w: branch_free.launch(**inp, telemetry=True, block_b=b, num_warps=w)
            for b, w in TILES
        }
    chunks = sorted({min(k, branch_free.block_c(c)) for k in (32, 64, 128)})
    return {
        f"b{b} w{w} k{k}": lambda b=b, w=w, k=k: branch_free.launch(
            **inp, telemetry=True, block_b=b, num_warps=w, precision=2, k_chunk=k
        )
        for b, w in FP32_TILES
        for k in chunks
    }


def checked(fns: dict[str, object], inp: dict, oracle: object) -> tuple[dict, dict[str, str]]:
    """The fns whose y and telemetry are within the family's tolerance of the float64 oracle (a note for the
    others: an exception such as shared memory exceeded, or a wrong result)."""
    y_ref, t_ref = oracle
    ok, notes = {}, {}
    tol = {torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 4e-3}[inp["x"].dtype]
    for name, fn in fns.items():
        try:
            y, t = fn()
            err_y = ((y.double() - y_ref).norm() / y_ref.norm()).item()
            err_t = 0.0 if t is None else ((t.double() - t_ref).norm() / t_ref.norm()).item()
        except Exception as exc:  # noqa: BLE001 - a config that cannot compile or launch is reported, not timed
            notes[name] = f"{type(exc).__name__}: {str(exc)[:100]}"
            continue
        if err_y < tol and err_t < tol:
            ok[name] = fn
        else:
            notes[name] = f"WRONG rel err y {err_y:.3g} telemetry {err_t:.3g}"
    return ok, notes


def run_point(shape: tuple[int, ...], dtype: str, rounds: int, splits: tuple[int, ...] = ()) -> list[dict]:
    fam = discover()["kasmina"]
    inp = fam.make_inputs(shape, dtype, "cuda", sum(shape))
    oracle = fam.oracle(**inp)
    out = torch.empty_like(inp["x"])
    shipped = fam.providers["triton_telemetry"].fn
    tele_free = fam.providers["triton_branch_free"].fn
    fns = {
        "[shipped]": lambda: shipped(**inp),
        "[branch free + torch stats]": lambda: tele_free(**inp),
        "[no telemetry]": lambda: branch_free.launch(**inp, telemetry=False),
    }
    fns.update(candidates(inp, splits))
    ok, notes = checked(fns, inp, oracle)
    ok["[copy x]"] = lambda: out.copy_(inp["x"])
    print_notes(notes)
    times = race(ok, rounds)
    return candidate_rows(dtype, shape, times, notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--dtypes", default="bf16,fp16,fp32")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--splits", default="", help="race the shipped tile at these programs per seed, e.g. 1,2,4,8")
    args = ap.parse_args()
    rows: list[dict] = []
    for dtype in args.dtypes.split(","):
        for s in args.shapes.split(","):
            shape = tuple(int(v) for v in s.split("x"))
            point = run_point(shape, dtype, args.rounds, tuple(int(v) for v in args.splits.split(",") if v))
            rows += point
            med = {r["candidate"]: r["median_us"] for r in point if r["median_us"] != ""}
            copy = med["[copy x]"]
            best = min((c for c in med if not c.startswith("[")), key=med.get)
            print(
                f"{dtype} {s:12} copy {copy:7.2f}  shipped {med['[shipped]']:7.2f} ({copy / med['[shipped]']:.1%})  "
                f"no telemetry {med['[no telemetry]']:7.2f} ({copy / med['[no telemetry]']:.1%})  "
                f"best {best} {med[best]:7.2f} ({copy / med[best]:.1%})",
                flush=True,
            )
            write_csv(args.out / "kasmina_copy.csv", rows)


if __name__ == "__main__":
    main()
