"""Helpers shared by the benchmark scripts (run as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import csv
import itertools
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def write_csv(path: Path, rows: Sequence[dict]) -> None:
    """Rows of dicts -> CSV (header from the first row's keys), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)


def rel_err(out: Any, ref: Any) -> float:
    """The largest relative error (2-norm) over the outputs (a tensor or a tuple of them)."""
    outs = out if isinstance(out, tuple) else (out,)
    refs = ref if isinstance(ref, tuple) else (ref,)
    return max(float((o.double() - r.double()).norm() / r.double().norm()) for o, r in zip(outs, refs))


def inductor_configs() -> list[str]:
    """The launch configuration Inductor's autotuner kept for each Triton kernel torch.compile has built in this
    process, one line each (``NAME: {kwargs} num_warps=W num_stages=S``), sorted."""
    lines = set()
    for mod in list(sys.modules.values()):
        if "torchinductor" not in (getattr(mod, "__file__", "") or ""):
            continue
        for attr, obj in vars(mod).items():
            for launcher in getattr(obj, "launchers", None) or []:
                cfg = getattr(launcher, "config", None)
                if cfg is not None:
                    lines.add(f"{attr}: {cfg.kwargs} num_warps={cfg.num_warps} num_stages={cfg.num_stages}")
    return sorted(lines)


def new_addresses(x: Any) -> Callable[[], Any]:
    """Call by call, the next of ``DescribedLaunch.KEEP + 1`` copies of ``x`` (each at its own address): one more than
    a plan keeps sets of addresses (``kprof.launch.DescribedLaunch``), so that a plan launching on them never finds its
    set kept, as for a caller whose buffers never repeat."""
    from kprof.launch import DescribedLaunch

    return itertools.cycle([x.clone() for _ in range(DescribedLaunch.KEEP + 1)]).__next__


def print_race(title: str, times: dict[str, list[float]], top: int = 8, always: tuple[str, ...] = ("[",)) -> None:
    """The fastest ``top`` contenders of a race, then the ones whose names start with ``always``."""
    ranked = sorted((statistics.median(v), k) for k, v in times.items())
    print(f"== {title}", flush=True)
    for t, k in ranked[:top] + [r for r in ranked[top:] if r[1].startswith(always)]:
        print(f"  {k:<28} {t:8.3f} us  {' '.join(f'{v:.2f}' for v in times[k])}", flush=True)


def race_rows(shape: str, times: dict[str, list[float]]) -> list[dict]:
    return [
        {"shape": shape, "variant": k, "time_us": statistics.median(v), "rounds": " ".join(f"{u:.3f}" for u in v)}
        for k, v in times.items()
    ]


def pct_of_copy_rows(point: str, times: dict[str, list[float]]) -> list[dict]:
    """One row a candidate of a race timed beside ``[copy]``: its median (us) and the copy's speed as % of its own,
    fastest first."""
    copy_us = statistics.median(times["[copy]"])
    rows = []
    for name, v in sorted(times.items(), key=lambda kv: statistics.median(kv[1])):
        med = statistics.median(v)
        rows.append({"point": point, "candidate": name, "median_us": med, "pct_of_copy": 100 * copy_us / med})
    return rows


def print_pct_of_copy(summary: Sequence[dict], width: int, rank: Callable[[Sequence[float]], float] = min) -> None:
    """:func:`pct_of_copy_rows` of several points as one table, a line a candidate (best by ``rank`` of its figures
    first), a column a point (its shape/dtype)."""
    print("\n% of the copy, per candidate and point:")
    table: dict[str, dict[str, float]] = {}
    for r in summary:
        table.setdefault(r["candidate"], {})[r["point"]] = r["pct_of_copy"]
    points = list(dict.fromkeys(r["point"] for r in summary))
    print(f"{'candidate':<{width}}" + "".join(f"{p.split('/', 1)[1]:>19}" for p in points))
    for name, row in sorted(table.items(), key=lambda kv: -rank(list(kv[1].values()))):
        print(f"{name:<{width}}" + "".join(f"{row.get(p, float('nan')):19.1f}" for p in points))


def candidate_rows(
    dtype: str, shape: tuple[int, ...], times: dict[str, list[float]], notes: dict[str, str]
) -> list[dict]:
    """The CSV rows of one point's race: a row per timed candidate (median and every round, us), then one per
    candidate left out with the reason."""
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


def probe_points(
    doc: str,
    shapes: str,
    rounds: int,
    run_point: Callable[..., list[dict]],
    base: str,
    csv_name: str,
    top: int = 12,
    shards: bool = False,
) -> None:
    """The command line of a probe that races candidates at a few points (``point_args``; with ``shards``,
    ``--compile-only I/N`` too, passed to ``run_point`` as ``shard=(I, N)``): each point's rows (``candidate_rows``)
    printed (``print_point``, over ``base``) and written to DIR/``csv_name`` (``{dtype}`` in it: the run's), with the
    ops API's Triton path on (restored after)."""
    from kprof.kernels import ops

    ap = point_args(doc, shapes, rounds)
    if shards:
        ap.add_argument("--compile-only", help="I/N: compile the I-th of N shares of the candidates, no race")
    args = ap.parse_args()
    shard = tuple(int(v) for v in args.compile_only.split("/")) if shards and args.compile_only else None
    args.out.mkdir(parents=True, exist_ok=True)
    previous = ops.use_triton(True)
    rows: list[dict] = []
    try:
        for s in args.shapes.split(","):
            shape = tuple(int(v) for v in s.split("x"))
            point = (
                run_point(shape, args.dtype, args.rounds, shard)
                if shards
                else run_point(shape, args.dtype, args.rounds)
            )
            if not shard:
                print_point(f"{args.dtype} {s}", point, base, top)
            rows += point
    finally:
        ops.use_triton(previous)
    if rows:
        write_csv(args.out / csv_name.format(dtype=args.dtype), rows)


def print_point(title: str, rows: list[dict], base: str, top: int = 12) -> None:
    """One point's rows (``candidate_rows``): the ``top`` fastest timed ones, then the references (names in
    brackets) not among them, each with its time over ``base``'s."""
    timed = sorted((r for r in rows if r["median_us"] != ""), key=lambda r: r["median_us"])
    ref = next(r["median_us"] for r in timed if r["candidate"] == base)
    print(f"{title}: (ratio to {base})", flush=True)
    for r in timed[:top] + [r for r in timed[top:] if r["candidate"].startswith("[")]:
        print(f"    {r['candidate']:32} {r['median_us']:9.2f}  {r['median_us'] / ref:.3f}", flush=True)


def kernel_names(fn: Any, width: int = 70) -> str:
    """The device kernels of one call of ``fn`` (after a warm-up call), in order, names cut to ``width``."""
    import torch

    from kprof import timing

    fn()
    torch.cuda.synchronize()
    return " ; ".join(r.name[:width] for r in timing.collect_device_records(fn))


def kernel_rows(dtype: str, shape: str, times: dict[str, list[float]], kernels: dict[str, str]) -> list[dict]:
    """The CSV rows of one point's race with each candidate's kernels: median and every round (us)."""
    return [
        {
            "dtype": dtype,
            "shape": shape,
            "candidate": name,
            "median_us": statistics.median(v),
            "rounds": " ".join(f"{u:.2f}" for u in v),
            "kernels": kernels[name],
        }
        for name, v in times.items()
    ]


def rmsnorm_case(fam: Any, shape: tuple[int, ...], dtype: str, seed: int) -> tuple:
    """One rmsnorm case on the GPU: (x, weight, eps, float64 reference, an output buffer)."""
    import torch

    inputs = fam.make_inputs(shape, dtype, "cuda", seed)
    return inputs["x"], inputs["weight"], inputs["eps"], fam.oracle(**inputs), torch.empty_like(inputs["x"])


def checked(candidates: dict[str, tuple[Any, Any]], out: Any, tol: float = 2e-2) -> tuple[dict, dict[str, str]]:
    """``{name: (fn, float64 reference)}`` -> the fns whose result (written into ``out``, a tensor or a tuple of them,
    NaN-poisoned first) is within ``tol`` relative error of their reference (``rel_err``: a tuple of outputs against a
    tuple of references), and a note for each of the others (an exception: shared memory exceeded, ...; or a wrong
    result), which are not timed."""
    fns, notes = {}, {}
    for name, (fn, ref) in candidates.items():
        try:
            for o in out if isinstance(out, tuple) else (out,):
                o.fill_(float("nan"))
            err = rel_err(fn(), ref)
        except Exception as exc:  # noqa: BLE001 - a variant that cannot compile or launch is reported, not timed
            notes[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
            continue
        if err < tol:
            fns[name] = fn
        else:
            notes[name] = f"WRONG rel err {err:.3g}"
    return fns, notes


def checked_against(candidates: dict[str, Any], ref: Any) -> tuple[dict, dict[str, str]]:
    """The candidates within 2% relative error of the float64 ``ref``, and why each other one is not timed (a
    tile shape that cannot compile, or a wrong result)."""
    fns: dict[str, Any] = {}
    notes: dict[str, str] = {}
    for name, fn in candidates.items():
        try:
            err = ((fn().double() - ref).norm() / ref.norm()).item()
        except Exception as exc:  # noqa: BLE001 - a candidate that cannot compile is reported, not timed
            notes[name] = f"{type(exc).__name__}: {str(exc)[:100]}"
            continue
        if err < 2e-2:
            fns[name] = fn
        else:
            notes[name] = f"wrong result: relative error {err:.3g}"
    return fns, notes


def print_notes(notes: dict[str, str]) -> None:
    for name, why in notes.items():
        print(f"  {name:<28} not timed: {why}", flush=True)


def point_args(doc: str, shapes: str, rounds: int | None = 3) -> Any:
    """The parser of a script that times a few (shape, dtype) points: --out, --shapes, --dtype and, unless
    ``rounds`` is None, --rounds; its description is ``doc``'s first line. Add the script's own options to it."""
    import argparse
    from pathlib import Path as _Path

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=_Path, required=True)
    ap.add_argument("--shapes", default=shapes, help="comma-separated ROWSxCOLS")
    ap.add_argument("--dtype", default="bf16")
    if rounds is not None:
        ap.add_argument("--rounds", type=int, default=rounds)
    return ap


def rmsnorm_points(fam: Any, args: Any, seed: int = 1234) -> Any:
    """(``ROWSxCOLS``, shape, rmsnorm inputs on the GPU) for each of ``args.shapes``, in ``args.dtype``."""
    for shape_s in args.shapes.split(","):
        shape = tuple(int(v) for v in shape_s.split("x"))
        yield shape_s, shape, fam.make_inputs(shape, args.dtype, "cuda", seed)


def add_race_args(ap: Any, dtypes: str = "bf16", budget_s: float = 420.0) -> None:
    """The options of a shape-by-shape race of candidates: --out, --dtypes, --rounds, --rep-ms, --budget-s."""
    from pathlib import Path as _Path

    ap.add_argument("--out", type=_Path, required=True)
    ap.add_argument("--dtypes", default=dtypes)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep-ms", type=float, default=5.0)
    ap.add_argument("--budget-s", type=float, default=budget_s, help="stop starting new shapes after this long")


def race_rounds(fns: dict[str, Any], rounds: int, rep_ms: float, rng: Any) -> dict[str, list[float]]:
    """Cold times (us) of every candidate: ``rounds`` rounds, each in a fresh random order (``rng``)."""
    from kprof import timing

    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        order = list(fns)
        rng.shuffle(order)
        for k in order:
            times[k].append(timing.cold_time_us(fns[k], rep_ms=rep_ms)[0])
    return times


def cold_rounds(
    fns: dict[str, Any], rounds: int, rng: Any, calls: int = 10, timer: str = "events"
) -> dict[str, list[float]]:
    """Cold times (us) of every candidate, ``rounds`` rounds each in a fresh random order (``rng``): a round's figure
    is the median of ``calls`` calls timed by CUDA events (``timing.cold_event_times_us``), or with ``timer`` "cupti"
    one figure of kprof's cold mode (:func:`race_rounds`, 20 ms a figure: CUPTI busy time, calls at a low SM clock set
    aside)."""
    from kprof import timing

    if timer == "cupti":
        return race_rounds(fns, rounds, 20.0, rng)
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        order = list(fns)
        rng.shuffle(order)
        for k in order:
            times[k].append(statistics.median(timing.cold_event_times_us(fns[k], calls)))
    return times


def race_shape(shape: str, fns: dict[str, Any], notes: dict[str, str], args: Any, rng: Any, top: int) -> tuple:
    """One shape of a race script: ``race_rounds`` with the script's ``--rounds`` and ``--rep-ms``, the fastest
    ``top`` printed with the notes of the candidates not timed; returns (one row per candidate, the shape's
    :func:`auto_summary`)."""
    times = race_rounds(fns, args.rounds, args.rep_ms, rng)
    print_race(shape, times, top=top)
    print_notes(notes)
    return race_rows(shape, times), auto_summary(shape, times)


def auto_summary(shape: str, times: dict[str, list[float]]) -> dict:
    """The medians that matter in a race of a rule's choice: the ``[auto]`` entry, the fastest candidate (names
    not in brackets) and ``[torch_compile]``."""
    med = {k: statistics.median(v) for k, v in times.items()}
    best_us, best = min((v, k) for k, v in med.items() if not k.startswith("["))
    auto = next(k for k in med if k.startswith("[auto]"))
    return {
        "shape": shape,
        "auto": auto,
        "auto_us": med[auto],
        "best": best,
        "best_us": best_us,
        "torch_compile_us": med.get("[torch_compile]"),
    }


# rmsnorm's and add_rmsnorm's many rows of 128-256 KB: the points of the wide-row races
WIDE_ROW_SHAPES = [(r, n) for r in (512, 2048, 8192) for n in (65536, 131072)]


def wide_row_args(doc: str, dtypes: str, budget_s: float) -> Any:
    """The parser of a race over the wide-row points: :func:`add_race_args`, ``--families`` and ``--shapes``."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    add_race_args(ap, dtypes=dtypes, budget_s=budget_s)
    ap.add_argument("--families", default="rmsnorm,add_rmsnorm")
    ap.add_argument("--shapes", help="ROWSxCOLS,... instead of the 6 points of 512-8192 rows")
    return ap


def wide_row_points(args: Any) -> Any:
    """(``family/ROWSxCOLS/dtype``, family name, dtype, family, inputs on the GPU, float64 reference of y) for each family x
    dtype x shape of ``args`` (:func:`wide_row_args`), until ``--budget-s`` is spent (said, with the first point
    left out); the GPU's cache is emptied after each point."""
    import time

    import torch

    from kprof.kernels import discover

    fams = discover()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")] if args.shapes else WIDE_ROW_SHAPES
    t0 = time.monotonic()
    for family in args.families.split(","):
        fam = fams[family]
        for dtype in args.dtypes.split(","):
            for n_rows, n in shapes:
                if time.monotonic() - t0 > args.budget_s:
                    print(f"budget spent: {family} {dtype} {n_rows}x{n} and later not raced", flush=True)
                    break
                inputs = fam.make_inputs((n_rows, n), dtype, "cuda", 1234)
                ref = fam.oracle(**inputs)
                y_ref = ref[0] if isinstance(ref, tuple) else ref
                yield f"{family}/{n_rows}x{n}/{dtype}", family, dtype, fam, inputs, y_ref
                del inputs, ref, y_ref
                torch.cuda.empty_cache()


def tuned_y(fam: Any, inputs: dict) -> Any:
    """A call of the family's ``triton_tuned`` provider (its dispatch, as the ops API runs it) on ``inputs`` that
    returns y alone (add_rmsnorm's provider also returns h)."""
    provider = fam.providers["triton_tuned"].fn

    def call() -> Any:
        out = provider(**inputs)
        return out[0] if isinstance(out, tuple) else out

    return call


def copy_of_op(inputs: dict, y: Any, h: Any = None) -> Any:
    """A device copy of the bytes rmsnorm (x into ``y``) or add_rmsnorm (x and the residual into ``y`` and ``h``)
    moves: the yardstick of the copy target."""
    copies = [(y, inputs["x"])] + ([(h, inputs["residual"])] if h is not None else [])
    return lambda: [dst.copy_(src) for dst, src in copies]


def host_us(fn: Any, calls: int) -> float:
    """Median host time (us) of one call of ``fn`` from an idle GPU (drained before each call)."""
    import time

    import torch

    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def back_to_back_us(fn: Any, calls: int) -> float:
    """Host wall time per call over ``calls`` back-to-back calls of ``fn`` (no synchronise inside; the GPU drained
    before and after), as the harness's host column."""
    import time

    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6
