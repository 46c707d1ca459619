"""A floor for kasmina's 90%-of-copy target: a copy of x with the layer's chain of dependent loads and nothing
else. Each program copies its rows of its seeds, and also reads the seeds' blueprint ids and then the first element
of each of those blueprints, which it adds times a zero passed at run time (the compiler cannot drop the loads).
It moves no more bytes than the copy, but a blueprint's address is known only once its id has come from device
memory: two dependent round trips where a copy has one. Every kasmina version that keeps its state on the device
does at least this much, so where this floor already takes more than the target's ratio of the copy's time no
version can meet the target; ``kprof grid`` says so at such a point, with both times from the same run.

It is the fastest of its tiles (rows x seeds per program, ``tiles``): on a shape's first call on a GPU it times
every tile cold and keeps the fastest (``kprof.kernels.lib.routes``, with no preference for a default tile, and
whatever ``KPROF_ROUTE_RACE`` says: a floor measured at a slower tile than its best would overstate what is out
of reach). On an H100 the tile moved it by up to 1.4x (1x1000x64 bf16: 2.13 µs at one row and 32 seeds a
program, 2.96 at 64 seeds; ``benchmarks/results/kasmina-copy/floors-324bb9b/``).

``benchmarks/kasmina_copy.py`` times this kernel's tiles beside the copy, with two other floors of the same
kernel (``READS`` 0: the copy alone; 2: every byte of the seeds' blueprints read once per program)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.kasmina.family import FAMILY
from kprof.kernels.lib import routes

# elements per program (each a whole number of seeds x rows, up to 64 rows): the floor races every one
TILE_ELEMENTS = (2048, 4096, 8192)
TILE_ROWS = (1, 4, 16, 64)


@triton.jit(do_not_specialize=["n_rows", "n_seeds"])  # one binary per tile and C: the race compiles every tile
def _chain_copy_kernel(
    # tensors
    x_ptr,  # [rows, S*C] contiguous
    y_ptr,  # like x
    ids_ptr,  # [S] int32 blueprint ids (read unless READS == 0)
    w_ptr,  # [NB, C, C] blueprints (read unless READS == 0)
    # sizes
    n_rows,
    n_seeds,
    C,
    zero,  # 0.0, a runtime argument: the compiler cannot drop the loads it multiplies
    # tile
    ROWS: tl.constexpr,  # rows per program
    SEEDS: tl.constexpr,  # seeds per program
    BLOCK_C: tl.constexpr,  # power of two >= C
    READS: tl.constexpr,  # 0: x alone; 1: each seed's id, then its blueprint's first element; 2: the id, then the
    # whole blueprint
):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    seeds = tl.program_id(1) * SEEDS + tl.arange(0, SEEDS)
    smask = seeds < n_seeds
    cols = tl.arange(0, BLOCK_C)
    cmask = cols < C
    mask = (rows < n_rows)[:, None, None] & smask[None, :, None] & cmask[None, None, :]
    offs = rows.to(tl.int64)[:, None, None] * n_seeds * C + (seeds * C)[None, :, None] + cols[None, None, :]
    y = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    if READS > 0:
        bid = tl.load(ids_ptr + seeds, mask=smask, other=0).to(tl.int64)
        if READS == 1:  # the dependent round trip, no blueprint traffic
            w = tl.load(w_ptr + bid * C * C, mask=smask, other=0.0).to(tl.float32)
        else:  # and every byte of the blueprint, once per program
            wmask = smask[:, None, None] & cmask[None, :, None] & cmask[None, None, :]
            at = bid[:, None, None] * C * C + cols[None, :, None] * C + cols[None, None, :]
            w = tl.sum(tl.sum(tl.load(w_ptr + at, mask=wmask, other=0.0).to(tl.float32), axis=2), axis=1)
        y += zero * w[None, :, None]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def tiles(n_rows: int, c: int) -> list[tuple[int, int, int]]:
    """(rows, seeds, warps) per program: each of ``TILE_ELEMENTS`` at each of ``TILE_ROWS`` up to the rows there
    are, 4 warps up to 4096 elements, else 8."""
    bc = triton.next_power_of_2(c)
    return sorted(
        {
            (r, max(1, e // (r * bc)), 4 if e <= 4096 else 8)
            for e in TILE_ELEMENTS
            for r in TILE_ROWS
            if r <= triton.next_power_of_2(n_rows)
        }
    )


def launch_tile(
    x: torch.Tensor,
    out: torch.Tensor,
    blueprint_id: torch.Tensor,
    weights: torch.Tensor,
    tile: tuple[int, int, int],
    reads: int = 1,
) -> torch.Tensor:
    """``out`` = x (contiguous, [..., S*C]) through one tile of the kernel, reading what ``reads`` says."""
    rows, seeds, warps = tile
    n_seeds, c = blueprint_id.shape[0], weights.shape[-1]
    n_rows = x.numel() // x.shape[-1]
    grid = (triton.cdiv(n_rows, rows), triton.cdiv(n_seeds, seeds))
    _chain_copy_kernel[grid](
        x, out, blueprint_id, weights, n_rows, n_seeds, c, 0.0,
        ROWS=rows, SEEDS=seeds, BLOCK_C=triton.next_power_of_2(c), READS=reads, num_warps=warps,
    )  # fmt: skip
    return out


_tile_race = routes.RouteRace(
    "kasmina floor: the chain copy's tile (rows, seeds, warps a program)", keep_default_within=0.0
)


def _name(tile: tuple[int, int, int]) -> str:
    return "r{} s{} w{}".format(*tile)


@FAMILY.provider(
    "copy_through_ids",
    kind="floor",
    description="a copy of x that also reads each seed's blueprint id, then its blueprint's first element (times "
    "a zero): the layer's chain of dependent loads and nothing else, at its fastest tile; less than any version does",
)
def kasmina_copy_through_ids(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> torch.Tensor:
    x = x.contiguous()
    out = torch.empty_like(x)
    n_rows = x.numel() // x.shape[-1]
    named = {_name(t): t for t in tiles(n_rows, weights.shape[-1])}
    chosen = next(iter(named))  # the first tile, where nothing can be timed
    if routes.can_time(x):
        key = (x.dtype, x.device, n_rows, blueprint_id.shape[0], weights.shape[-1])
        runs = {name: (lambda t=t: launch_tile(x, out, blueprint_id, weights, t)) for name, t in named.items()}
        chosen = _tile_race.decide(key, runs, chosen)
    return launch_tile(x, out, blueprint_id, weights, named[chosen])
