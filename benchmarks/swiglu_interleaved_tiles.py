"""Experiment: which tiles does swiglu's interleaved TMA kernel want where no dimension divides a tile
(1000x1000x3000, the default sweep's untiled shape), or where its tiles fill few waves of SMs (``--set lower``:
tiles of 128 + 64 rows, a second block under each, as cuBLAS's 192-row tiles; ``--set rule``: the shipped launch
against the tiles before and the taller ones, out of sample)? Every config of a set, one tile
per program and persistent (one program per SM, the last partial wave in parts, output stored in halves), against
the shipped launch of the kernel, the prepared object's route, the plain op's, cuBLAS's ``x @ [Wg Wu]`` (alone, and then the pass
over its gate/up pairs) and torch.compile.

    python benchmarks/swiglu_interleaved_tiles.py --out DIR [--shapes 1000x1000x3000,4000x1000x3000] [--rounds 3]
    python benchmarks/swiglu_interleaved_tiles.py --out DIR --set lower --shapes 2048x2048x768 --dtype fp16
    python benchmarks/swiglu_interleaved_tiles.py --out DIR --set big --shapes 3000x2048x8192,4096x1536x8960

Each candidate is checked against the float64 oracle first (a config that does not fit or is wrong is
reported, not timed), then all are timed cold in interleaved rounds in a random order (kprof's cold timing),
on prepared (interleaved) weights. Writes DIR/swiglu_interleaved_tiles[-SET-DTYPE].csv.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch
from bench_common import checked, print_notes, print_race, race_rounds, race_rows, write_csv
from swiglu_tma import interleaved_call

from kprof.kernels import discover
from kprof.kernels.lib import routes
from kprof.kernels.swiglu import op_plan, tuned
from kprof.kernels.swiglu.cublas_silu import interleaved_product_then_silu

CONFIGS = [  # BLOCK_M, BLOCK_N (output columns; the weight tile is twice as wide), BLOCK_K, GROUP_M, warps, stages
    (128, 128, 64, 8, 8, 3),
    (128, 128, 64, 16, 8, 4),
    (128, 128, 128, 8, 8, 2),
    (128, 64, 64, 8, 4, 4),
    (128, 64, 64, 8, 8, 4),
    (128, 64, 128, 8, 8, 3),
    (128, 64, 128, 8, 4, 3),
    (64, 128, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 3),
    (64, 128, 128, 8, 4, 3),
    (64, 128, 128, 8, 8, 3),
    (64, 256, 64, 8, 8, 3),
    (64, 64, 64, 8, 4, 4),
    (64, 64, 128, 8, 4, 4),
]
# (..., lower rows): tiles of BLOCK_M + lower rows. At 2048x2048x768 the weight's 1536 columns in tiles of 128 (64
# output columns) and 2048 rows in tiles of 192 make 11 x 12 = 132 tiles, one wave of an H200's SMs, as cuBLAS's
# 192x128 tiles there; 128x128 output tiles make 96 (0.73 of a wave).
LOWER_CONFIGS = [
    (128, 128, 64, 16, 8, 4),  # the shipped persistent tiles, for reference
    (128, 64, 64, 8, 8, 3),
    (128, 64, 64, 8, 8, 4),
    (128, 64, 64, 8, 8, 3, 64),
    (128, 64, 64, 8, 8, 4, 64),
    (128, 64, 64, 8, 8, 5, 64),
    (128, 64, 128, 8, 8, 3, 64),
    (128, 64, 64, 8, 4, 4, 64),
    (64, 64, 64, 8, 4, 4, 128),
    (128, 128, 64, 8, 8, 3, 64),
    (128, 128, 64, 8, 16, 3, 64),
    (128, 128, 64, 8, 16, 4, 64),
]
# ``--set narrow``: the 192x64 tiles' warps, stages, BLOCK_K and GROUP_M, where they make one wave
NARROW_CONFIGS = [
    (128, 64, 64, 8, 4, 4, 64),  # shipped (ONE_WAVE_CONFIGS)
    (128, 64, 64, 8, 4, 3, 64),
    (128, 64, 64, 8, 4, 5, 64),
    (128, 64, 64, 4, 4, 4, 64),
    (128, 64, 64, 16, 4, 4, 64),
    (128, 64, 32, 8, 4, 6, 64),
    (128, 64, 32, 8, 4, 8, 64),
    (128, 64, 128, 8, 4, 2, 64),
    (128, 64, 128, 8, 4, 3, 64),
    (64, 64, 64, 8, 4, 4, 128),
]
# ``--set big``: at prefill shapes of many tiles (the ``models`` part's misses, 1.04-1.06x cuBLAS's product, which
# ran 256x152 tiles there), taller tiles than the shipped 128x128: 192 and 256 rows (128 + a lower block of 64 or 128)
BIG_CONFIGS = [
    (128, 128, 64, 16, 8, 4),  # the shipped persistent tiles
    (128, 128, 64, 8, 8, 3),
    (128, 128, 128, 16, 8, 2),
    (128, 64, 64, 8, 8, 4, 64),
    (128, 128, 64, 8, 16, 3, 64),
    (128, 64, 64, 8, 8, 3, 128),
    (128, 64, 64, 8, 8, 4, 128),
    (128, 128, 64, 8, 16, 2, 128),
]
# ``--set rule``: the persistent 128x128 tiles (the launch before ``tuned.one_wave_config``) and its two taller tiles,
# against ``[shipped]``, which takes them where the rule says
RULE_CONFIGS = [tuple(tuned.PERSISTENT_CONFIG), *tuned.ONE_WAVE_CONFIGS]


def persistent_call(x: torch.Tensor, w_int: torch.Tensor, y: torch.Tensor, cfg: tuple) -> object:
    """The shipped persistent launch (tail in parts, halves stored) with ``cfg``'s tiles."""
    return plan_call(x, w_int, y, cfg, persistent=True)


def plan_call(x: torch.Tensor, w_int: torch.Tensor, y: torch.Tensor, cfg: tuple, persistent: bool) -> object:
    """The shipped launch with ``cfg``'s tiles, persistent (tail in parts, halves stored) or one tile a program."""

    def call() -> torch.Tensor:
        tuned.launch_interleaved(x, w_int, y, persistent=persistent, tail=True, config=cfg)
        return y

    return call


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default="1000x1000x3000,4000x1000x3000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=10.0)
    ap.add_argument("--set", choices=["untiled", "lower", "rule", "narrow", "big"], default="untiled")
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    args = ap.parse_args()
    configs = {
        "untiled": CONFIGS,
        "lower": LOWER_CONFIGS,
        "rule": RULE_CONFIGS,
        "narrow": NARROW_CONFIGS,
        "big": BIG_CONFIGS,
    }[args.set]
    name = (
        "swiglu_interleaved_tiles.csv"
        if args.set == "untiled"
        else f"swiglu_interleaved_tiles-{args.set}-{args.dtype}.csv"
    )
    fam = discover()["swiglu"]
    rng = random.Random(0)
    rows = []
    for spec in args.shapes.split(","):
        m, k, n = (int(v) for v in spec.split("x"))
        inputs = fam.make_inputs((m, k, n), args.dtype, "cuda", seed=1)
        x, wg, wu = inputs["x"], inputs["w_gate"], inputs["w_up"]
        ref = fam.oracle(**inputs)
        y = torch.empty(m, n, dtype=x.dtype, device="cuda")
        w_int = tuned.interleaved_weights(wg, wu)
        candidates = {}
        for cfg in configs:
            tag = f"{cfg[0]}{'+' + str(cfg[6]) if len(cfg) > 6 else ''}x{cfg[1]}x{cfg[2]} g{cfg[3]} w{cfg[4]} s{cfg[5]}"
            if len(cfg) > 6:
                candidates[f"tile {tag}"] = (plan_call(x, w_int, y, cfg, persistent=False), ref)
            else:
                candidates[f"tile {tag}"] = (interleaved_call(x, w_int, y, cfg), ref)
            if args.set != "narrow":  # persistent programs walking 192-row tiles lost everywhere in --set lower
                candidates[f"pers {tag}"] = (persistent_call(x, w_int, y, cfg), ref)
        candidates["[shipped]"] = (lambda: (tuned.launch_interleaved(x, w_int, y), y)[1], ref)
        candidates["[cublas x@W_int, pairs]"] = (lambda: interleaved_product_then_silu(x, w_int, y), ref)
        # the prepared object's route (the kernel, or the pairs where its wave is underfilled: tuned.underfilled_wave)
        candidates["[prepared op]"] = (lambda: op_plan.swiglu_prepared(x, wg, wu, w_int), ref)
        # the plain op on the weights as given (its own route race from 65 rows: the tiled kernel or cuBLAS's two
        # products then silu_mul)
        plain = fam.get_provider("triton_tuned_pointer").fn
        candidates["[plain op]"] = (lambda: plain(**inputs), ref)
        fns, notes = checked(candidates, y)
        w_cat = torch.cat([wg, wu], dim=1)
        fns["[cublas x@[Wg Wu]]"] = lambda: x @ w_cat
        compiled = fam.get_provider("torch_compile").fn
        fns["[torch_compile]"] = lambda: compiled(**inputs)
        times = race_rounds(fns, args.rounds, args.rep_ms, rng)
        print_race(f"{spec} {args.dtype}", times, top=12)
        print_notes(notes)
        for decision in routes.decisions():  # the routes' first-call races at this shape
            if decision.key[:3] == (m, k, n):
                print(f"  route race: {decision.describe()}", flush=True)
        rows += race_rows(spec, times)
        write_csv(args.out / name, rows)


if __name__ == "__main__":
    main()
