"""add_rmsnorm's configs raced at several places in memory (``rmsnorm_placed_race.py``'s method): the op's config, the
one-block kernels (the rows kernel with cache hints, triton_one_row's without) with one row and 4-16 warps, and the
chunked two-pass kernel (``looped``: h stored, then read back) with 1024-8192-column chunks and 4-16 warps, the row
width at run time or compiled in (``COLS``), Inductor's cache hints (``HINTS``) with it compiled in, beside the
``triton_tuned``, ``triton_one_row`` (one row in one block without cache hints, where its block holds the row),
``torch_compile`` and ``liger`` providers. ``op`` is the config ``triton_tuned`` takes on this GPU (an H200's rules
included).

    python benchmarks/add_rmsnorm_placed_race.py --out DIR [--shapes 512x3072,512x8192] [--dtypes bf16,fp16]
        [--placements 3] [--rounds 3] [--rep-ms 4] [--budget-s 400]

Prints per point the fastest candidates by their mean over places and their worst place, and the configs Inductor's
autotuner kept; writes DIR/placed_race.csv and DIR/placed_summary.csv.
"""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import Callable

import torch
import triton
from rmsnorm_placed_race import placed_args, places, points, race_candidates

from kprof.kernels import discover
from kprof.kernels.add_rmsnorm.one_row import MAX_BLOCK_BYTES as ONE_ROW_MAX_BYTES
from kprof.kernels.add_rmsnorm.tuned import Config, choose_config, launch_with_config
from kprof.kernels.lib import launching

SHAPES = "512x3072,512x4096,512x6144,512x7168,512x8192,1024x4096,2048x3072"
PEERS = ("triton_tuned", "triton_one_row", "torch_compile", "liger")


def candidates(n: int, element_size: int, op: Config) -> dict[str, Config]:
    """The op's config, one-block rows with 4-16 warps (the rows kernel, with cache hints, and triton_one_row's kernel,
    without them, where its block holds the row), and the chunked kernel's configs: chunks of 1024-8192 columns (8192
    with the width compiled in only), the width at run time or compiled in, Inductor's cache hints with it compiled
    in."""
    block_n = triton.next_power_of_2(n)
    out = {"op": op}
    for warps in (4, 8, 16):
        out[f"rows w{warps}"] = Config("rows", block_n, 1, warps)
        if block_n * element_size <= ONE_ROW_MAX_BYTES:
            out[f"one_row w{warps}"] = Config("one_row", block_n, 1, warps)
    for chunk, warps, const, hints in itertools.product(
        [1024, 2048, 4096, 8192], [4, 8, 16], [False, True], [False, True]
    ):
        if chunk <= block_n and warps * 32 * 4 <= chunk and (const or not hints) and (chunk < 8192 or const):
            out[f"looped c{chunk} w{warps}{' const' if const else ''}{' hints' if hints else ''}"] = Config(
                "looped", chunk, 1, warps, cols_const=const, hints=hints
            )
    return out


def checked(cfg: Config, inputs: dict, y: torch.Tensor, h: torch.Tensor, eps: float, ref: tuple) -> Callable[[], None]:
    """A call of ``cfg`` at one place, once run into NaN-filled outputs and both checked against the oracle."""
    x, r, w = inputs["x"], inputs["residual"], inputs["weight"]

    def call() -> None:
        launch_with_config(cfg, x, r, w, y, h, eps)

    y.fill_(float("nan"))
    h.fill_(float("nan"))
    call()
    torch.cuda.synchronize()
    for got, want in zip((y, h), ref):
        assert float((got.double() - want).norm() / want.norm()) < 8e-3, cfg
    return call


def main() -> int:
    args = placed_args(__doc__, SHAPES).parse_args()
    fam = discover()["add_rmsnorm"]
    rng = random.Random(0)
    rows_out, summary = [], []
    for spec, dtype, shape in points(args):
        inputs = fam.make_inputs(shape, dtype, "cuda", 5)
        eps = inputs.pop("eps")
        ref = fam.oracle(**inputs, eps=eps)
        spots = places(inputs, args.placements, rng, outputs=2)
        x = inputs["x"]
        op = choose_config(shape[1], x.element_size(), shape[0], launching.sm_count(x), True, x.dtype == torch.float16,
                           launching.fast_memory(x))  # fmt: skip
        race_candidates(
            fam, spec, dtype, op, candidates(shape[1], x.element_size(), op), spots, eps, args, rng, rows_out, summary,
            lambda cfg, moved, outs: checked(cfg, moved, *outs, eps, ref), PEERS,
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
