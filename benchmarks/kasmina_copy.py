"""kasmina's telemetry kernel against a bare copy of x (the family's yardstick: the layer reads x and writes y
of the same size, so a device copy of x is the most it can hope for) at its default shapes, over tiles and
programs per seed.

Per point, one CUPTI session times every candidate cold (a spin, kprof's read-only L2 flush, one call), in
rotating rounds (``decode_tiles.race``). Candidates: ``[copy x]`` (``out.copy_(x)``), ``[shipped]`` (the
``triton_telemetry`` provider as it is), ``[no telemetry]`` (the same kernel without the statistics: what
fusing them costs), and the telemetry kernel at rows per tile x warps x programs per seed, where a seed's rows
are split so the launch has about 1, 2, 4 or 8 programs per SM (``branch_free.row_programs_for``; 0: one
program per seed). Each candidate's y and telemetry are checked against the float64 oracle first.

    python benchmarks/kasmina_copy.py --out DIR [--shapes 64x1000x64,...] [--dtypes bf16,fp16,fp32]

Writes DIR/kasmina_copy.csv (one row per point and candidate: median and every round, us) and prints, per
point, the copy, the shipped kernel and the fastest candidate, each as a fraction of the copy's speed.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
from bench_common import print_notes, write_csv
from decode_tiles import race

from kprof.kernels import discover
from kprof.kernels.kasmina import branch_free
from kprof.kernels.lib import launching

DEFAULT_SHAPES = "64x1000x64,1x1000x64,512x1000x64,64x250x256,48x333x100"
TILES = [(b, w) for b in (16, 32, 64) for w in (2, 4, 8)]
PER_SM = (0, 1, 2, 4, 8)


def candidates(inp: dict, n_rows: int, n_seeds: int) -> dict[str, object]:
    """name -> fn for every distinct (rows per tile, warps, programs per seed)."""
    sms = launching.sm_count(inp["x"])
    out = {}
    for b, w in TILES:
        for p in PER_SM:
            r = branch_free.row_programs_for(n_rows, n_seeds, b, sms, p)
            out.setdefault(
                f"b{b} w{w} r{r}",
                lambda b=b, w=w, r=r: branch_free.launch(**inp, telemetry=True, block_b=b, num_warps=w, row_programs=r),
            )
    return out


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
            err_t = ((t.double() - t_ref).norm() / t_ref.norm()).item()
        except Exception as exc:  # noqa: BLE001 - a config that cannot compile or launch is reported, not timed
            notes[name] = f"{type(exc).__name__}: {str(exc)[:100]}"
            continue
        if err_y < tol and err_t < tol:
            ok[name] = fn
        else:
            notes[name] = f"WRONG rel err y {err_y:.3g} telemetry {err_t:.3g}"
    return ok, notes


def run_point(shape: tuple[int, ...], dtype: str, rounds: int) -> list[dict]:
    fam = discover()["kasmina"]
    inp = fam.make_inputs(shape, dtype, "cuda", sum(shape))
    *batch, n_seeds, _ = shape
    n_rows = inp["x"].numel() // inp["x"].shape[-1]
    oracle = fam.oracle(**inp)
    out = torch.empty_like(inp["x"])
    shipped = fam.providers["triton_telemetry"].fn
    tele_free = fam.providers["triton_branch_free"].fn
    fns = {"[shipped]": lambda: shipped(**inp), "[branch free + torch stats]": lambda: tele_free(**inp)}
    fns.update(candidates(inp, n_rows, n_seeds))
    ok, notes = checked(fns, inp, oracle)
    ok["[copy x]"] = lambda: out.copy_(inp["x"])
    ok["[no telemetry]"] = lambda: branch_free.launch(**inp, telemetry=False)
    print_notes(notes)
    times = race(ok, rounds)
    point = "x".join(map(str, shape))
    rows = [
        {
            "dtype": dtype,
            "shape": point,
            "candidate": n,
            "median_us": statistics.median(v),
            "rounds": " ".join(f"{u:.2f}" for u in v),
            "note": "",
        }
        for n, v in times.items()
    ]
    return rows + [
        {"dtype": dtype, "shape": point, "candidate": n, "median_us": "", "rounds": "", "note": why}
        for n, why in notes.items()
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--dtypes", default="bf16,fp16,fp32")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    rows: list[dict] = []
    for dtype in args.dtypes.split(","):
        for s in args.shapes.split(","):
            shape = tuple(int(v) for v in s.split("x"))
            point = run_point(shape, dtype, args.rounds)
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
