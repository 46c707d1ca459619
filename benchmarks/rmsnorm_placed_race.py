"""rmsnorm's configs raced at several places in memory, so that a rule drawn from the race holds wherever a caller's
tensors lie. Its places, race and printing are shared with ``add_rmsnorm_placed_race.py``.

    python benchmarks/rmsnorm_placed_race.py --out DIR [--shapes 512x3072,512x8192] [--dtypes bf16,fp16]
        [--placements 6] [--rounds 3] [--rep-ms 4] [--budget-s 400] [--two-pass [--const-only]] [--ragged]

At 3-6 us a call the same kernel reads up to 15% apart depending on where its tensors were allocated
(``results/cold-placement/``), so a race on one allocation can crown a config that is fast only there.

What is timed:
- every candidate: the op's config; one-block configs with 1 or 2 rows per program, 2-16 warps, cache hints, and a
  tail block where ``tuned.head_and_tail`` gives one; with ``--two-pass``, five one-block configs and the two-pass
  kernel's configs instead; with ``--ragged`` (widths that are not multiples of 16), every one-block config, the
  two-pass kernel's with the width compiled in, and the op's config unaligned (its kernel not told what the width and
  row strides are multiples of, as before ``launching.vector_align``);
- the ``triton_tuned`` and ``torch_compile`` providers.

Where: ``--placements`` places, the case's inputs as made, then copies in memory pools of their own between random
spacers (``kprof.harness.relocated``, as ``kprof profile`` places a small case). Each place's outputs come from its
own pool. Each round runs every (candidate, place) pair cold, in a fresh random order.

Prints per point the fastest candidates by their mean over places of the per-place medians, with their worst place,
and the configs Inductor's autotuner kept. Writes DIR/placed_race.csv (one row per candidate and place) and
DIR/placed_summary.csv (one per candidate).
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
import triton
from bench_common import inductor_configs, race_rounds, rmsnorm_case, write_csv
from rmsnorm_small_shapes import checked_call

from kprof.harness import random_spacer, relocated
from kprof.kernels import discover
from kprof.kernels.rmsnorm.tuned import Config, config_for, head_and_tail

SHAPES = "512x2048,512x2056,512x3072,512x4096,512x6144,512x7168,512x8192,2048x3072,2048x6144,64x4096"
PEERS = ("triton_tuned", "triton_one_row", "torch_compile", "liger")  # the providers raced beside the configs


def places(inputs: dict, count: int, rng: random.Random, outputs: int = 1) -> list[tuple]:
    """``count`` places for a case's tensor ``inputs``: (the inputs there, ``outputs`` output buffers like the first
    input, the pool, what must outlive them); the first as made, the others copies in pools of their own."""
    first = next(iter(inputs.values()))
    out = [(inputs, tuple(torch.empty_like(first) for _ in range(outputs)), None, ())]
    for _ in range(count - 1):
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            moved, keep = relocated(inputs, random_spacer(rng), random_spacer(rng))
            made = tuple(torch.empty_like(first) for _ in range(outputs))
        out.append((moved, made, pool, tuple(keep)))
    return out


@dataclass(frozen=True)
class Unaligned:
    """A config launched without telling its kernel the width's and strides' alignment (``align=False``)."""

    cfg: Config


# With --two-pass, the one-block configs raced beside the two-pass kernel's: (rows, warps, hints, tail). One row of 8
# and 16 warps without hints too, the launch torch.compile's persistent reduction takes at 6144-8192 columns.
_TWO_PASS_ONE_BLOCK = ((1, 8, True, 0), (2, 16, True, 0), (1, 4, True, 0), (1, 8, False, 0), (1, 16, False, 0))


def candidates(
    n: int, n_rows: int, op: Config, two_pass: bool = False, const_only: bool = False, ragged: bool = False
) -> dict[str, Config | Unaligned]:
    """The op's config and every one-block config of the rows kernel for rows of ``n`` columns, with and without a
    tail block; with ``two_pass``, only the op's and five one-block configs (``_TWO_PASS_ONE_BLOCK``), and the
    two-pass kernel's (Inductor's design: x read in chunks, kept in L2 for the second pass) at 1-2 rows a program,
    chunks of 1024-4096 columns, 4-16 warps (at least 4 elements a thread), the row width at run time or compiled in (``const_only``: only
    compiled in); ``ragged``: every one-block config, the two-pass configs with the width compiled in (8192-column
    chunks too), and the op's config unaligned."""
    if ragged:
        two_pass = const_only = True
    block_n = triton.next_power_of_2(n)
    head, tail = head_and_tail(n)
    blocks = [(block_n, 0)] + ([(head, tail)] if tail else [])
    out = {"op": op}
    for rows, warps, hints, (block, rest) in itertools.product([1, 2], [2, 4, 8, 16], [False, True], blocks):
        if warps * 32 > rows * (block + rest) or (rows > 1 and triton.cdiv(n_rows, rows) < 33):
            continue
        if two_pass and not ragged and (rows, warps, hints, rest) not in _TWO_PASS_ONE_BLOCK:
            continue
        name = f"r{rows} w{warps} {'hints' if hints else 'plain'}{f' tail {rest}' if rest else ''}"
        out[name] = Config("rows", block_n=block, rows=rows, num_warps=warps, hints=hints, tail=rest)
    chunks = [1024, 2048, 4096] + ([8192] if ragged else [])  # --ragged: a whole 16 KB block in one chunk too
    grid = itertools.product([1, 2], chunks, [4, 8, 16], [False, True]) if two_pass else ()
    for rows, chunk, warps, const in grid:
        if (
            chunk > block_n
            or warps * 32 * 4 > rows * chunk
            or (rows > 1 and triton.cdiv(n_rows, rows) < 33)
            or (const_only and not const)
        ):
            continue
        name = f"2pass r{rows} c{chunk} w{warps}{' const' if const else ''}"
        out[name] = Config("two_pass", block_n=chunk, rows=rows, num_warps=warps, cols_const=const)
    if ragged:
        out["op unaligned"] = Unaligned(op)
    return out


def main() -> int:
    ap = placed_args(__doc__, SHAPES)
    ap.add_argument("--two-pass", action="store_true", help="also the two-pass kernel's configs")
    ap.add_argument("--const-only", action="store_true", help="--two-pass with the width compiled in only")
    ap.add_argument(
        "--ragged", action="store_true", help="all one-block configs, the two-pass ones compiled in, unaligned op"
    )
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    rng = random.Random(0)
    rows_out, summary = [], []
    for spec, dtype, shape in points(args):
        x, w, eps, ref, _ = rmsnorm_case(fam, shape, dtype, 5)
        spots = places({"x": x, "weight": w}, args.placements, rng)
        op = config_for(shape[1], x.element_size(), shape[0], x.device.index)
        cands = candidates(shape[1], shape[0], op, args.two_pass, args.const_only, args.ragged)
        race_candidates(
            fam, spec, dtype, op, cands, spots, eps, args, rng, rows_out, summary,
            lambda c, moved, outs: checked_call(
                getattr(c, "cfg", c), moved["x"], moved["weight"], outs[0], eps, ref, not isinstance(c, Unaligned)
            ),
        )  # fmt: skip
    return 0


def race_candidates(
    fam, spec, dtype, op, cands: dict, spots: list[tuple], eps: float, args, rng, rows_out, summary, checked_at,
    peers: tuple[str, ...] = PEERS,
) -> None:  # fmt: skip
    """One point's race: every candidate config at every place (``checked_at(cfg, inputs there, outputs there)`` gives
    its call, once checked against the oracle; a wrong result is reported and not timed), the providers ``peers``
    that take the point's shape (:func:`peer_calls`), then :func:`race_point`. Frees the places' pools afterwards."""
    fns = {}
    for name, cfg in cands.items():
        if name != "op" and cfg == op:
            continue
        try:
            for i, (moved, outs, _, _) in enumerate(spots):
                fns[(name, i)] = checked_at(cfg, moved, outs)
        except AssertionError:  # a wrong result: reported, not timed
            print(f"  WRONG RESULT, not timed: {name} ({cfg})")
            for i in range(len(spots)):
                fns.pop((name, i), None)
    fns.update(peer_calls(fam, spots, peers, dtype, eps=eps))
    print(f"== {spec} {dtype} (op: {op})")
    race_point(spec, dtype, fns, args, rng, rows_out, summary)
    del spots[:], fns
    torch.cuda.empty_cache()


def peer_calls(fam, spots: list[tuple], peers: tuple[str, ...], dtype: str, **kwargs) -> dict:
    """{(``[peer]``, place): a call of the family's provider on the place's inputs and ``kwargs``, its outputs from its
    pool}, for each of ``peers`` the family has, available here and taking the places' shape of x."""
    shape = tuple(spots[0][0]["x"].shape)
    usable = [
        fam.providers[peer]
        for peer in peers
        if peer in fam.providers
        and fam.providers[peer].unavailable_reason() is None
        and fam.providers[peer].unsupported_reason(shape, dtype) is None
    ]
    return {
        (f"[{provider.name}]", i): in_pool(provider.fn, {**moved, **kwargs}, pool)
        for provider in usable
        for i, (moved, _, pool, _) in enumerate(spots)
    }


def race_point(spec: str, dtype: str, fns: dict, args, rng, rows_out: list, summary: list) -> None:
    """Race ``fns`` ({(candidate, place): call}) in rounds of a fresh random order; print the fastest candidates by
    their mean over places of the per-place medians (and their worst place), the providers and the op's config;
    add to ``rows_out`` / ``summary`` and write both CSVs under ``args.out`` (so a timeout keeps what ran)."""
    keyed = {f"{k[0]}@{k[1]}": v for k, v in fns.items()}
    times = race_rounds(keyed, args.rounds, args.rep_ms, rng)
    per: dict[str, list[float]] = {}
    for name, i in fns:
        med = statistics.median(times[f"{name}@{i}"])
        per.setdefault(name, []).append(med)
        rows_out.append({"shape": spec, "dtype": dtype, "candidate": name, "place": i, "median_us": med})
    ranked = sorted(per.items(), key=lambda kv: statistics.fmean(kv[1]))
    print(f"  mean over {max(len(v) for v in per.values())} places, worst, each place")
    for name, meds in ranked[:10] + [kv for kv in ranked[10:] if kv[0].startswith("[") or kv[0] == "op"]:
        print(f"  {name:34s} {statistics.fmean(meds):7.3f} {max(meds):7.3f}  " + " ".join(f"{m:.2f}" for m in meds))
    for name, meds in ranked:
        row = {
            "shape": spec,
            "dtype": dtype,
            "candidate": name,
            "mean_us": statistics.fmean(meds),
            "worst_us": max(meds),
        }
        summary.append(row)
    print("  torch.compile's kernels so far: " + ("; ".join(inductor_configs()) or "none found"))
    write_csv(args.out / "placed_race.csv", rows_out)
    write_csv(args.out / "placed_summary.csv", summary)


def placed_args(doc: str, shapes: str) -> argparse.ArgumentParser:
    """The options every placed race shares."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=shapes)
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--placements", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=4.0)
    ap.add_argument("--budget-s", type=float, default=400.0, help="start no point after this many seconds")
    return ap


def points(args) -> Iterator[tuple[str, str, tuple[int, ...]]]:
    """(shape spec, dtype, shape) of every point, until ``--budget-s`` is spent."""
    start = time.monotonic()
    for spec, dtype in itertools.product(args.shapes.split(","), args.dtypes.split(",")):
        if time.monotonic() - start > args.budget_s:
            print(f"budget spent: {spec} {dtype} and the points after it not raced")
            return
        yield spec, dtype, tuple(int(v) for v in spec.split("x"))


def in_pool(fn, kwargs: dict, pool):
    """A provider's call ``fn(**kwargs)`` at one place: its outputs allocated from that place's pool (None: the
    default allocator)."""
    if pool is None:
        return lambda: fn(**kwargs)

    def call():
        with torch.cuda.use_mem_pool(pool):
            return fn(**kwargs)

    return call


if __name__ == "__main__":
    sys.exit(main())
