"""Profiling cases under an external profiler (any backend with capture steps), in a child process.

``kprof profile --profiler nsys|ncu|rocprof|proton|...`` measures every case in-process first (as with the
built-in torch.profiler), then hands the correct cases to :func:`capture`: it writes a replay spec,
hands the backend's capture steps (:attr:`kprof.profilers.Backend.capture`) the argv of
``python -m kprof.replay SPEC`` (see :mod:`kprof.replay`); each step runs through
:func:`kprof.tools.run_tool` (own process group, timeout kills the group); the last artefact kept is
parsed into the canonical launch table. Every tool invocation is
returned as a :class:`~kprof.tools.ToolRun` so the runner can store command, exit code, output tails
and version with the run, whether it succeeded or not.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from kprof.errors import KprofError
from kprof.replay import ReplayCase, ReplaySpec, child_argv, read_progress, write_spec
from kprof.tools import ToolLocation, ToolNotFoundError, ToolRun, find_tool, run_tool, tool_version

DEFAULT_TIMEOUT_S = 1800.0


def external_names() -> tuple[str, ...]:
    """Profilers that run the cases in a replay child (every backend with capture steps)."""
    from kprof.profilers import backends

    return tuple(n for n, b in backends().items() if b.capture is not None)


def all_profilers() -> tuple[str, ...]:
    """Every ``--profiler`` value: auto, each backend, none."""
    from kprof.profilers import names

    return ("auto", *names(), "none")


def __getattr__(name: str) -> tuple[str, ...]:  # EXTERNAL / ALL_PROFILERS, computed from the backends
    if name == "EXTERNAL":
        return external_names()
    if name == "ALL_PROFILERS":
        return all_profilers()
    raise AttributeError(name)


@dataclass(frozen=True)
class ProfilerChoice:
    name: str  # a backend's name, or none
    reason: str
    tool: ToolLocation | None = None  # the binary found, for backends that drive one


@dataclass(frozen=True)
class CaptureContext:
    """What a backend's capture steps get: the tool, the replay child's argv, a work folder, and two
    helpers. ``step(argv, name)`` runs one tool invocation (recorded with the run); ``expect(run, out,
    missing)`` notes a failed step and keeps ``out`` as an artefact when it was written (the last artefact
    kept is the trace that is parsed)."""

    tool: ToolLocation | None
    child: list[str]
    workdir: Path
    step: Callable[[list[str], str], ToolRun]
    expect: Callable[[ToolRun, Path | None, str], bool]


@dataclass
class CaptureResult:
    launches: pd.DataFrame
    runs: list[ToolRun]
    version: str
    artifacts: list[Path]
    progress: list[dict]
    error: str | None = None  # the first failing step, described
    notes: list[str] = field(default_factory=list)

    @property
    def cases_done(self) -> list[str]:
        return [p["case"] for p in self.progress if p.get("status") == "ok"]


def _is_rocm() -> bool:
    import torch

    return getattr(torch.version, "hip", None) is not None


def choose(requested: str, mode: str, tool_path: str | None = None) -> ProfilerChoice:
    """Resolve ``--profiler`` to a backend, finding its tool. ``auto`` falls back and says why."""
    from kprof.profilers import backends

    found = backends()
    if requested not in ("auto", "none", *found):
        raise KprofError(f"--profiler must be one of {', '.join(all_profilers())}, not {requested!r}")
    if mode != "gpu":
        return ProfilerChoice("none", "no GPU: profilers need one (interpreter runs check correctness only)")
    if requested == "none":
        return ProfilerChoice("none", "asked for")
    if requested != "auto":
        b = found[requested]
        if not b.tools:
            return ProfilerChoice(b.name, f"asked for ({b.description})" if b.capture else "asked for")
        return ProfilerChoice(b.name, "asked for", _locate(b, tool_path))
    builtin = next((b.name for b in found.values() if b.in_process), "none")
    vendor = "amd" if _is_rocm() else "nvidia"
    for b in sorted((b for b in found.values() if b.auto_vendor == vendor and b.tools), key=lambda b: b.auto_rank):
        try:
            loc = _locate(b, tool_path)
        except ToolNotFoundError as exc:
            return ProfilerChoice(
                builtin,
                f"auto: {vendor.upper() if vendor == 'amd' else 'NVIDIA'} GPU but {exc}; "
                f"using the built-in {found[builtin].description if builtin in found else builtin}",
            )
        return ProfilerChoice(
            b.name,
            f"auto: {'AMD' if vendor == 'amd' else 'NVIDIA'} GPU, found {loc.name} at {loc.path} ({loc.how})",
            loc,
        )
    return ProfilerChoice(builtin, f"auto: no external profiler for this GPU; using the built-in {builtin}")


def _locate(b: Any, tool_path: str | None) -> ToolLocation:
    """The first of a backend's tools that is found. With an explicit path, the tool whose executable
    name the path's file name starts with (``rocprofv3`` before ``rocprof``)."""
    specs = list(b.tools)
    if tool_path:
        base = Path(tool_path).name
        matching = sorted((s for s in specs if base.startswith(s.executable)), key=lambda s: -len(s.executable))
        return find_tool((matching or specs)[0].name, tool_path)
    errors = []
    for spec in specs:
        try:
            return find_tool(spec.name)
        except ToolNotFoundError as exc:
            errors.append(str(exc))
    raise ToolNotFoundError(". Or: ".join(errors))


def replay_cases(family: str, cases: Sequence[tuple[str, str, tuple[int, ...], str, int]]) -> tuple[ReplayCase, ...]:
    """(case id, provider, shape, dtype, seed) -> replay cases."""
    return tuple(ReplayCase(id=c, provider=p, shape=tuple(s), dtype=d, seed=seed) for c, p, s, d, seed in cases)


def capture(
    choice: ProfilerChoice,
    family: str,
    cases: tuple[ReplayCase, ...],
    workdir: Path,
    *,
    repeats: int,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: dict[str, str] | None = None,
    family_source: tuple[str, str] | None = None,
) -> CaptureResult:
    """Run the cases under the chosen profiler in a child process and parse what it wrote."""
    # absolute: the tool runs with ``workdir`` as its working directory, and every path handed to it
    # (spec, output, progress) must not be read relative to that again (a store given as a relative
    # path, the default ./kprof-runs, made nsys look for kprof-runs/.../kprof-runs/.../replay_spec.json)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    from kprof.profilers import backend, parse_trace

    b = backend(choice.name)
    if b.capture is None:
        raise KprofError(f"{choice.name!r} is not an external profiler")
    progress_file = workdir / "replay_progress.jsonl"
    if progress_file.exists():
        progress_file.unlink()
    spec = ReplaySpec(
        family=family,
        cases=cases,
        repeats=repeats,
        marker=b.marker,
        progress_file=str(progress_file),
        proton_path=str(workdir / "proton"),
        proton_data="trace",
        family_package=family_source[0] if family_source else "",
        family_root=family_source[1] if family_source else "",
    )
    spec_path = write_spec(spec, workdir / "replay_spec.json")
    child = child_argv(spec_path, sys.executable)
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    runs: list[ToolRun] = []

    def step(argv: list[str], name: str) -> ToolRun:
        r = run_tool(argv, timeout=timeout_s, cwd=workdir, env=child_env, log_prefix=name)
        runs.append(r)
        return r

    version = tool_version(choice.tool) if choice.tool else (b.version() if b.version else b.description)
    artifacts: list[Path] = []
    problems: list[str] = []  # in order; the first one is the run's error

    def expect(r: ToolRun, out: Path | None, missing: str) -> bool:
        """Note the step's failure and keep its output when it wrote one (even after a failure: what
        finished before it is still worth parsing)."""
        if not r.ok:
            problems.append(r.describe())
        if out is not None and out.exists() and out.stat().st_size:
            artifacts.append(out)
            return True
        problems.append(missing)
        return False

    b.capture(CaptureContext(tool=choice.tool, child=child, workdir=workdir, step=step, expect=expect))
    error = problems[0] if problems else None

    launches = pd.DataFrame()
    notes: list[str] = []
    if artifacts:  # the last artefact a capture keeps is its trace
        try:
            launches = parse_trace(artifacts[-1], fmt=choice.name)
            notes = list(launches.attrs.get("warnings", []))
        except KprofError as exc:
            error = error or f"could not parse {artifacts[-1]}: {exc}"
    return CaptureResult(
        launches=launches,
        runs=runs,
        version=version,
        artifacts=artifacts,
        progress=read_progress(progress_file),
        error=error,
        notes=notes,
    )
