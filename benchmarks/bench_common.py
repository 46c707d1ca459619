"""Helpers shared by the benchmark scripts (run as ``python benchmarks/<script>.py``)."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def write_csv(path: Path, rows: Sequence[dict]) -> None:
    """Rows of dicts -> CSV (header from the first row's keys), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)


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


def rmsnorm_case(fam: Any, shape: tuple[int, ...], dtype: str, seed: int) -> tuple:
    """One rmsnorm case on the GPU: (x, weight, eps, float64 reference, an output buffer)."""
    import torch

    inputs = fam.make_inputs(shape, dtype, "cuda", seed)
    return inputs["x"], inputs["weight"], inputs["eps"], fam.oracle(**inputs), torch.empty_like(inputs["x"])


def checked(candidates: dict[str, tuple[Any, Any]], out: Any, tol: float = 2e-2) -> tuple[dict, dict[str, str]]:
    """``{name: (fn, float64 reference)}`` -> the fns whose result (written into ``out``, NaN-poisoned first)
    is within ``tol`` relative error of their reference, and a note for each of the others (an exception:
    shared memory exceeded, ...; or a wrong result), which are not timed."""
    fns, notes = {}, {}
    for name, (fn, ref) in candidates.items():
        try:
            out.fill_(float("nan"))
            err = ((fn().double() - ref).norm() / ref.norm()).item()
        except Exception as exc:  # noqa: BLE001 - a variant that cannot compile or launch is reported, not timed
            notes[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
            continue
        if err < tol:
            fns[name] = fn
        else:
            notes[name] = f"WRONG rel err {err:.3g}"
    return fns, notes


def print_notes(notes: dict[str, str]) -> None:
    for name, why in notes.items():
        print(f"  {name:<28} not timed: {why}", flush=True)
