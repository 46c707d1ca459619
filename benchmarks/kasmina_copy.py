"""kasmina's telemetry kernel against a bare copy of x (the family's yardstick: the layer reads x and writes y
of the same size, so a device copy of x is the most it can hope for), over tiles, at its default shapes.

Per point, one CUPTI session times every candidate cold (a spin, kprof's read-only L2 flush, one call), in
rotating rounds (``decode_tiles.race``). Candidates: ``[copy x]`` (``out.copy_(x)``), ``[shipped]`` (the
``triton_telemetry`` provider as it is), ``[no telemetry]`` (the same kernel without the statistics: what
fusing them costs), ``[branch free + torch stats]``, and the telemetry kernel at rows per tile x warps; in fp32
(tf32x3 products) also at blueprint rows per product step (``k``). With ``--splits``, the shipped tile instead,
each seed's rows split over that many programs (``r``; the last to finish merges their statistics). Each
candidate's y and telemetry are checked against the float64 oracle first. With ``--by-state``, every tile runs with
the kernel's BY_STATE branch (dormant seeds copy x, the others fold the blend into the blueprint), beside ``[shipped,
by state]`` and ``[no telemetry, by state]``; with ``--both-states``, every tile without it and with it (``bs``). With ``--stats``, every tile at each of the kernel's ways of summing the statistics (``STATS``: Chan's
merge per tile, or sums shifted by the program's first row, per tile or per element); with ``--maxnreg``, each also
at those register caps (``maxnreg``: fewer registers a thread, more programs an SM). With ``--masked``, also
``[shipped, masked]``: the shipped launch with the masks it drops where every tile is full (``EVEN``). With ``--tma``, also
the TMA kernel (``kasmina.tma``: x and y tiles moved by TMA, the blend folded) at its tiles (``--tma-tiles``).
With ``--stacked``, also the stacked kernel for a few rows (``kasmina.stacked``: a block of seeds' rows in one tile,
each distinct blueprint loaded once) at seeds per program x warps (``--stacked-tiles``), and ``[branch free]``,
branch_free's kernel as its rule launches it (the ops API's route before the stacked table). ``--tiles 0x0``: no
tile of the branch-free kernel, the other kernels alone beside the references. (The first
two races in ``results/kasmina-copy/`` also had rows split over programs, x loaded a step ahead and IEEE fp32
products; a later one several seeds per program: none was kept.)

Two floors beside the copy, each the fastest of a few Triton copy kernels (rows x seeds per program):
``[triton copy]``, ``y = x``; ``[copy through ids]``, the same copy where each program also reads its seeds'
blueprint ids and then the first element of each of those blueprints (``y = x + 0 * W[id[seed], 0, 0]``, the
zero a runtime argument). The second does less than any kasmina kernel (it reads none of the blueprints'
bytes) but has its chain of loads: a blueprint's address is known only once the id has come from device
memory, two dependent round trips where a copy has one. Where that floor is already over 1/0.9 of the copy,
no kernel that keeps the state on the device meets the family's target there. A third,
``[copy reading blueprints]``, reads every byte of its one or two seeds' blueprints once per program (what a
kasmina program with those rows must read) and adds nothing of them either.

    python benchmarks/kasmina_copy.py --out DIR [--shapes 64x1000x64,...] [--dtypes bf16,fp16,fp32] [--floors-only] [--by-state]
        [--stats 0,1,2] [--maxnreg 0,128] [--masked] [--tiles 16x2,32x2] [--no-floors] [--tma] [--stacked]

Writes DIR/kasmina_copy.csv (one row per point and candidate: median and every round, us) and prints, per
point, the copy, the floors, the shipped kernel and the fastest tile, each as a fraction of the copy's speed.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
import triton
from bench_common import candidate_rows, print_notes, write_csv
from decode_tiles import race

from kprof.kernels import discover
from kprof.kernels.kasmina import branch_free, floor, stacked, tma

DEFAULT_SHAPES = "64x1000x64,1x1000x64,512x1000x64,64x250x256,48x333x100"
TILES = [(16, 2), (16, 4), (32, 2), (32, 4), (32, 8), (64, 2), (64, 4), (64, 8)]
# fp32 (tf32x3 products; see branch_free.precision_of): fewer rows per tile, more warps, the blueprint whole (up to
# 128 channels) or in steps of 32 or 64 rows
FP32_TILES = [(16, 2), (16, 4), (16, 8), (32, 2), (32, 4), (32, 8)]


# the TMA kernel (kasmina.tma): rows per tile x warps x stages, its sums per element and per tile (" pt")
TMA_TILES = [
    (32, 2, 3),
    (32, 4, 3),
    (64, 4, 2),
    (64, 4, 3),
    (64, 4, 4),
    (64, 8, 3),
    (128, 4, 3),
    (128, 8, 3),
    (128, 8, 4),
]


def tma_candidates(inp: dict, tiles: tuple[tuple[int, ...], ...] = ()) -> dict[str, object]:
    """name -> fn: the TMA kernel (``kasmina.tma``) at each of ``tiles`` (rows, warps, stages[, register cap];
    default ``TMA_TILES``) that fits the point (``tma.fits``, the table's classes aside), its statistics summed per
    element and per tile."""
    x, c = inp["x"], inp["weights"].shape[-1]
    named = {
        f"tma b{t[0]} w{t[1]} st{t[2]}" + (f" m{t[3]}" if len(t) > 3 else "") + (" pt" if pt else ""): tma.TmaTile(
            c, t[0], t[1], t[2], per_tile=pt, maxnreg=t[3] if len(t) > 3 else 0
        )
        for t in tiles or TMA_TILES
        for pt in (False, True)
        if tma.fits(x, c, t[0])
    }
    return {name: (lambda tile=tile: tma.launch(**inp, tile=tile)) for name, tile in named.items()}


FLOORS = {0: "copy", 1: "ids", 2: "blueprints"}  # READS -> the floor's tile names
FLOOR_LABELS = {"copy": "[triton copy]", "ids": "[copy through ids]", "blueprints": "[copy reading blueprints]"}


def floor_candidates(inp: dict, out: torch.Tensor) -> dict[str, object]:
    """name -> fn: the floors' copy kernels (``kprof.kernels.kasmina.floor``) at each of its tiles of rows x seeds
    per program; the whole-blueprint floor at one or two seeds per program (as many blueprints as a kasmina program
    holds)."""
    x, ids, w = inp["x"], inp["blueprint_id"], inp["weights"]
    n_rows, bc = x.numel() // x.shape[-1], triton.next_power_of_2(w.shape[-1])
    rows = [r for r in floor.TILE_ROWS if r <= triton.next_power_of_2(n_rows)]
    # beyond 128 channels a whole blueprint in registers spills (the kernel steps through it): no such floor there
    few = sorted((r, sd, wp) for r in rows for sd in (1, 2) for wp in (4, 8)) if bc <= 128 else []

    def copy(tile: tuple[int, int, int], reads: int) -> object:
        return lambda: floor.launch_tile(x, out, ids, w, tile, reads)

    return {
        "{} r{} s{} w{}".format(FLOORS[reads], *tile): copy(tile, reads)
        for reads in FLOORS
        for tile in (few if reads == 2 else floor.tiles(n_rows, w.shape[-1]))
    }


# the stacked kernel (kasmina.stacked): seeds per program x warps
STACKED_TILES = [(8, 2), (16, 2), (16, 4), (32, 2), (32, 4), (32, 8), (64, 4), (64, 8)]


def stacked_candidates(inp: dict, tiles: tuple[tuple[int, ...], ...] = ()) -> dict[str, object]:
    """name -> fn: the stacked kernel at each (seeds per program, warps) it covers here (``stacked.fits``; seeds
    raised to make 16 tile rows, so two tiles may be one launch), a program per block and per block and blueprint
    (``bb``)."""
    n_rows, c = inp["x"].numel() // inp["x"].shape[-1], inp["weights"].shape[-1]
    picked = {stacked.tile(n_rows, s, w, bb) for s, w in tiles or STACKED_TILES for bb in (False, True)}
    return {
        f"st{t.block_s} w{t.num_warps}" + (" bb" if t.by_blueprint else ""): lambda t=t: stacked.launch(**inp, tile=t)
        for t in sorted(picked, key=lambda t: (t.by_blueprint, t.block_s, t.num_warps))
        if stacked.fits(n_rows, c, t.block_s)
    }


def candidates(
    inp: dict,
    splits: tuple[int, ...] = (),
    by_state: bool = False,
    stats: tuple[int, ...] = (),
    maxnreg: tuple[int, ...] = (),
    tiles: tuple[tuple[int, int], ...] = (),
    both_states: bool = False,
) -> dict[str, object]:
    """name -> fn for every (rows per tile, warps), or those of ``tiles``, and in fp32 at blueprint rows per product
    step (``k``); with ``splits``, the shipped tile at each number of programs per seed (``r``); with ``by_state``,
    each with the kernel's BY_STATE branch (``both_states``: without and with it, ``bs``); with ``stats``, each tile at
    each of the kernel's ways of summing the statistics (``s``, the kernel's STATS: ``branch_free._walk``); with
    ``maxnreg``, each also at each register cap (``m``, 0 the compiler's choice, named without it)."""
    if maxnreg:
        return {
            name + (f" m{m}" if m else ""): lambda m=m, fn=fn: fn(maxnreg=m)
            for name, fn in candidates(inp, splits, by_state, stats, tiles=tiles, both_states=both_states).items()
            for m in maxnreg
        }
    if stats:
        return {
            f"{name} s{st}": lambda st=st, fn=fn, **kw: fn(stats=st, **kw)
            for name, fn in candidates(inp, splits, by_state, tiles=tiles, both_states=both_states).items()
            for st in stats
        }
    if both_states:  # each tile without and with the branch (named with " bs"), whatever the rule says
        plain = candidates({**inp, "by_state": False}, splits, False, tiles=tiles)
        return {**plain, **{f"{n} bs": f for n, f in candidates(inp, splits, True, tiles=tiles).items()}}
    if by_state:
        inp = {**inp, "by_state": True}
    c = inp["weights"].shape[-1]
    if splits:
        n_rows = inp["x"].numel() // inp["x"].shape[-1]
        cfg = branch_free.config_for(inp["x"], inp["lifecycle"].shape[0], c, True)  # the shipped tile
        b, w, k = cfg.block_b, cfg.num_warps, cfg.k_chunk
        return {
            f"b{b} w{w} k{k} r{r}": lambda r=r, **kw: branch_free.launch(**inp, telemetry=True, row_programs=r, **kw)
            for r in sorted({branch_free.clamp_row_programs(r, n_rows, b) for r in splits})
        }
    if inp["x"].dtype != torch.float32:
        return {
            f"b{b} w{w}": lambda b=b, w=w, **kw: branch_free.launch(**inp, telemetry=True, block_b=b, num_warps=w, **kw)
            for b, w in tiles or TILES
        }
    chunks = sorted({min(k, branch_free.block_c(c)) for k in (32, 64, 128)})
    return {
        f"b{b} w{w} k{k}": lambda b=b, w=w, k=k, **kw: branch_free.launch(
            **inp, telemetry=True, block_b=b, num_warps=w, precision=2, k_chunk=k, **kw
        )
        for b, w in tiles or FP32_TILES
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


def run_point(
    shape: tuple[int, ...],
    dtype: str,
    rounds: int,
    splits: tuple[int, ...] = (),
    floors_only: bool = False,
    by_state: bool = False,
    stats: tuple[int, ...] = (),
    maxnreg: tuple[int, ...] = (),
    masked: bool = False,
    tiles: tuple[tuple[int, int], ...] = (),
    no_floors: bool = False,
    both_states: bool = False,
    with_tma: bool = False,
    tma_tiles: tuple[tuple[int, ...], ...] = (),
    with_stacked: bool = False,
    stacked_tiles: tuple[tuple[int, ...], ...] = (),
) -> list[dict]:
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
    if by_state or both_states:
        fns["[shipped, by state]"] = lambda: branch_free.launch(**inp, telemetry=True, by_state=True)
        fns["[no telemetry, by state]"] = lambda: branch_free.launch(**inp, telemetry=False, by_state=True)
    if masked:  # the shipped launch with its masks kept where it drops them (EVEN)
        fns["[shipped, masked]"] = lambda: branch_free.launch(**inp, telemetry=True, even=False)
        if by_state or both_states:
            fns["[shipped, by state, masked]"] = lambda: branch_free.launch(
                **inp, telemetry=True, by_state=True, even=False
            )
    if not floors_only and tiles != ((0, 0),):
        fns.update(candidates(inp, splits, by_state, stats, maxnreg, tiles, both_states))
    if with_tma:
        fns.update(tma_candidates(inp, tma_tiles))
    if with_stacked:  # and the route the ops API took before the stacked kernel, where the stacked table now takes it
        fns["[branch free]"] = lambda: branch_free.launch(**inp, telemetry=True)
        fns.update(stacked_candidates(inp, stacked_tiles))
    ok, notes = checked(fns, inp, oracle)
    ok["[copy x]"] = lambda: out.copy_(inp["x"])
    # each must copy x exactly, the zero included, into an output poisoned first (a tile that wrote nothing would
    # otherwise pass on the previous tile's copy); bench_common.checked poisons too, but allows a relative error
    for name, fn in ({} if no_floors else floor_candidates(inp, out)).items():
        try:
            out.fill_(float("nan"))
            fn()
            exact = torch.equal(out, inp["x"])
        except Exception as exc:  # noqa: BLE001 - a tile that cannot compile or launch is reported, not timed
            notes[f"[floor {name}]"] = f"{type(exc).__name__}: {str(exc)[:100]}"
            continue
        if exact:
            ok[f"[floor {name}]"] = fn
        else:
            notes[f"[floor {name}]"] = "WRONG: not x"
    print_notes(notes)
    times = race(ok, rounds)
    for kind, label in FLOOR_LABELS.items():  # each floor's fastest tile
        tiles = [n for n in times if n.startswith(f"[floor {kind} ")]
        if tiles:
            times[label] = times[min(tiles, key=lambda n: statistics.median(times[n]))]  # its fastest tile's rounds
    return candidate_rows(dtype, shape, times, notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--dtypes", default="bf16,fp16,fp32")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--splits", default="", help="race the shipped tile at these programs per seed, e.g. 1,2,4,8")
    ap.add_argument("--floors-only", action="store_true", help="the references and floors alone, no tiles")
    ap.add_argument("--by-state", action="store_true", help="every tile with the kernel's BY_STATE branch")
    ap.add_argument("--both-states", action="store_true", help="every tile without and with the BY_STATE branch")
    ap.add_argument("--stats", default="", help="every tile at each of these STATS (e.g. 0,1,2: branch_free._walk)")
    ap.add_argument("--maxnreg", default="", help="every tile also at these register caps (e.g. 0,128; 0: none)")
    ap.add_argument("--masked", action="store_true", help="also the shipped launch with its masks (EVEN off)")
    ap.add_argument("--tiles", default="", help="only these tiles, rows x warps (e.g. 16x2,32x2)")
    ap.add_argument("--no-floors", action="store_true", help="leave the floors' copy kernels out")
    ap.add_argument("--tma", action="store_true", help="also the TMA kernel at its tiles")
    ap.add_argument("--tma-tiles", default="", help="the TMA kernel's tiles, rows x warps x stages[ x register cap]")
    ap.add_argument("--stacked", action="store_true", help="also the stacked kernel (kasmina.stacked) at its tiles")
    ap.add_argument("--stacked-tiles", default="", help="the stacked kernel's tiles, seeds per program x warps")
    args = ap.parse_args()
    stacked_tiles = tuple(tuple(int(v) for v in t.split("x")) for t in args.stacked_tiles.split(",") if t)
    tiles = tuple(tuple(int(v) for v in t.split("x")) for t in args.tiles.split(",") if t)
    tma_tiles = tuple(tuple(int(v) for v in t.split("x")) for t in args.tma_tiles.split(",") if t)
    splits = tuple(int(v) for v in args.splits.split(",") if v)
    stats = tuple(int(v) for v in args.stats.split(",") if v)
    caps = tuple(int(v) for v in args.maxnreg.split(",") if v)
    rows: list[dict] = []
    for dtype in args.dtypes.split(","):
        for s in args.shapes.split(","):
            shape = tuple(int(v) for v in s.split("x"))
            point = run_point(
                shape, dtype, args.rounds, splits, args.floors_only, args.by_state, stats, caps,
                masked=args.masked, tiles=tiles, no_floors=args.no_floors, both_states=args.both_states,
                with_tma=args.tma, tma_tiles=tma_tiles, with_stacked=args.stacked, stacked_tiles=stacked_tiles,
            )  # fmt: skip
            rows += point
            med = {r["candidate"]: r["median_us"] for r in point if r["median_us"] != ""}
            copy = med["[copy x]"]
            named = (*FLOOR_LABELS.values(), "[no telemetry]", "[no telemetry, by state]", "[shipped]")
            named += ("[shipped, by state]", "[shipped, masked]", "[shipped, by state, masked]", "[branch free]")
            tile_names = [c for c in med if c.startswith("b")]
            kinds = (  # each kernel's fastest tile: branch_free's, the TMA kernel's, the stacked kernel's by block and
                # by blueprint (the names stacked_candidates gives)
                tile_names,
                [c for c in med if c.startswith("tma")],
                [c for c in med if c.startswith("st") and not c.endswith(" bb")],
                [c for c in med if c.startswith("st") and c.endswith(" bb")],
            )
            named += tuple(min(mine, key=med.get) for mine in kinds if mine)
            for st in stats:  # each way of summing the statistics: its fastest tile
                mine = [c for c in tile_names if f" s{st}" in c]
                named += (min(mine, key=med.get),) if mine else ()
            print(
                f"{dtype} {s:12} copy {copy:7.2f}  "
                + "  ".join(f"{n.strip('[]')} {med[n]:7.2f} ({copy / med[n]:.1%})" for n in named if n in med),
                flush=True,
            )
            write_csv(args.out / "kasmina_copy.csv", rows)


if __name__ == "__main__":
    main()
