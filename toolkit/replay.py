"""The program an external profiler (nsys, ncu, rocprof, Proton) runs: ``python -m kprof.replay SPEC``.

It replays a list of cases of one family: for each case it builds the same inputs the measurement phase
used (same seed), launches the provider once *outside* any range (warm-up: compilation, autotuning,
first-touch allocations), synchronises, then launches it ``repeats`` times inside a range named
``kprof::<case id>`` and synchronises again. A parser attributes each kernel to the range its launch
call fell in, so warm-up launches are never counted.

Markers (:mod:`kprof.markers`): ``nvtx`` (torch.cuda.nvtx, seen by nsys and ncu), ``roctx`` (the same torch
API on ROCm builds routes to roctx), ``proton`` (``triton.profiler.scope``), ``none``; each profiler backend
names the one it needs.

After each case one JSON line goes to the progress file (``{"case": ..., "status": "ok"|"error", ...}``),
flushed at once, so the parent knows which cases finished if the profiler or the child dies midway.
A case that raises is recorded as ``error`` (and printed to stderr) and the replay goes on with the next
one; the exit status is non-zero only when the replay itself could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kprof.markers import MARKERS, open_marker
from kprof.ranges import CASE_PREFIX


@dataclass(frozen=True)
class ReplayCase:
    id: str
    provider: str
    shape: tuple[int, ...]
    dtype: str
    seed: int


@dataclass(frozen=True)
class ReplaySpec:
    family: str
    cases: tuple[ReplayCase, ...]
    repeats: int = 5
    marker: str = "nvtx"
    progress_file: str = ""
    # Proton only: where its output goes and what it records ("tree" -> hatchet, "trace" -> Chrome trace)
    proton_path: str = ""
    proton_data: str = "tree"
    # --rev: the family as at a git revision, written by kprof.revisions (import name, folder for sys.path)
    family_package: str = ""
    family_root: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @staticmethod
    def from_json(text: str) -> ReplaySpec:
        raw = json.loads(text)
        cases = tuple(ReplayCase(**{**c, "shape": tuple(c["shape"])}) for c in raw.pop("cases"))
        return ReplaySpec(cases=cases, **raw)


def write_spec(spec: ReplaySpec, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec.to_json())
    return path


def read_progress(path: Path) -> list[dict]:
    """The progress lines written so far (a torn last line from a killed child is ignored)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return out


def child_argv(spec_path: Path, python: str | None = None) -> list[str]:
    """The argv that runs a replay (what the profiler command wraps)."""
    return [python or sys.executable, "-m", "kprof.replay", str(spec_path)]


def run(spec: ReplaySpec) -> int:
    import torch

    from kprof.registry import get_family

    if spec.family_package:
        from kprof.revisions import import_loaded

        family = import_loaded(spec.family_package, spec.family_root)
    else:
        family = get_family(spec.family)
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    device = "cuda" if cuda else "cpu"
    progress = open(spec.progress_file, "a", buffering=1) if spec.progress_file else None
    marker = open_marker(spec.marker, proton_path=spec.proton_path, proton_data=spec.proton_data)
    failures = 0
    try:
        for case in spec.cases:
            t0 = time.perf_counter()
            record: dict[str, Any] = {"case": case.id}
            try:
                inputs = family.make_inputs(case.shape, case.dtype, device, case.seed)
                fn = family.get_provider(case.provider).fn
                marker.pause()  # warm-up (compilation) stays out of a recording profiler's data
                fn(**inputs)
                sync()
                marker.resume()
                with marker.range(CASE_PREFIX + case.id):
                    for _ in range(spec.repeats):
                        fn(**inputs)
                    sync()
                record["status"] = "ok"
            except Exception as exc:  # noqa: BLE001 - one broken case must not lose the others
                failures += 1
                record["status"] = "error"
                record["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-500:]
                print(f"kprof.replay: {case.id}: {record['error']}", file=sys.stderr)
            record["seconds"] = round(time.perf_counter() - t0, 4)
            if progress:
                progress.write(json.dumps(record) + "\n")
            del record
    finally:
        marker.close()
        if progress:
            progress.close()
    # a case that failed is in the progress file and on stderr; the exit status stays 0 so that a profiler
    # wrapping this process reports success for a replay that ran to its end
    if failures:
        print(f"kprof.replay: {failures} of {len(spec.cases)} cases failed", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kprof.replay", description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", type=Path, help="replay spec JSON written by kprof")
    args = ap.parse_args(argv)
    spec = ReplaySpec.from_json(args.spec.read_text())
    if spec.marker not in MARKERS:
        print(f"kprof.replay: unknown marker {spec.marker!r}; one of {MARKERS}", file=sys.stderr)
        return 2
    return run(spec)


if __name__ == "__main__":
    sys.exit(main())
