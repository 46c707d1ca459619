"""Profiling cases under an external profiler (nsys, ncu, rocprof) or Proton, in a child process.

``kprof profile --profiler nsys|ncu|rocprof|proton`` measures every case in-process first (as with the
built-in torch.profiler), then hands the correct cases to :func:`capture`: it writes a replay spec,
builds the tool's argv around ``python -m kprof.replay SPEC`` (see :mod:`kprof.replay`), runs it with
:func:`kprof.tools.run_tool` (own process group, timeout kills the group), post-processes (nsys export,
ncu CSV import) and parses the artefact into the canonical launch table. Every tool invocation is
returned as a :class:`~kprof.tools.ToolRun` so the runner can store command, exit code, output tails
and version with the run, whether it succeeded or not.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kprof.errors import KprofError
from kprof.replay import ReplayCase, ReplaySpec, child_argv, read_progress, write_spec
from kprof.tools import ToolLocation, ToolNotFoundError, ToolRun, find_tool, run_tool, tool_version

EXTERNAL = ("nsys", "ncu", "rocprof", "proton")
ALL_PROFILERS = ("auto", "torch", *EXTERNAL, "none")
DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class ProfilerChoice:
    name: str  # torch | nsys | ncu | rocprof | proton | none
    reason: str
    tool: ToolLocation | None = None  # for rocprof: rocprofv3 or legacy rocprof


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
    if requested not in ALL_PROFILERS:
        raise KprofError(f"--profiler must be one of {', '.join(ALL_PROFILERS)}, not {requested!r}")
    if mode != "gpu":
        return ProfilerChoice("none", "no GPU: profilers need one (interpreter runs check correctness only)")
    if requested in ("torch", "none"):
        return ProfilerChoice(requested, "asked for")
    if requested == "proton":
        return ProfilerChoice("proton", "asked for (Triton's profiler, run in a child process)")
    if requested in ("nsys", "ncu"):
        return ProfilerChoice(requested, "asked for", find_tool(requested, tool_path))
    if requested == "rocprof":
        return ProfilerChoice("rocprof", "asked for", _find_rocprof(tool_path))
    # auto
    if _is_rocm():
        try:
            loc = _find_rocprof(tool_path)
            return ProfilerChoice("rocprof", f"auto: AMD GPU, found {loc.name} at {loc.path} ({loc.how})", loc)
        except ToolNotFoundError as exc:
            return ProfilerChoice("torch", f"auto: AMD GPU but {exc}; using the built-in torch.profiler")
    try:
        loc = find_tool("nsys", tool_path)
        return ProfilerChoice("nsys", f"auto: NVIDIA GPU, found nsys at {loc.path} ({loc.how})", loc)
    except ToolNotFoundError as exc:
        return ProfilerChoice("torch", f"auto: {exc}; using the built-in torch.profiler")


def _find_rocprof(tool_path: str | None) -> ToolLocation:
    if tool_path:
        name = "rocprofv3" if Path(tool_path).name.startswith("rocprofv3") else "rocprof"
        return find_tool(name, tool_path)
    try:
        return find_tool("rocprofv3")
    except ToolNotFoundError as v3:
        try:
            return find_tool("rocprof")
        except ToolNotFoundError as legacy:
            raise ToolNotFoundError(f"{v3}. Legacy: {legacy}") from None


def replay_cases(family: str, cases: Sequence[tuple[str, str, tuple[int, ...], str, int]]) -> tuple[ReplayCase, ...]:
    """(case id, provider, shape, dtype, seed) -> replay cases."""
    return tuple(ReplayCase(id=c, provider=p, shape=tuple(s), dtype=d, seed=seed) for c, p, s, d, seed in cases)


def capture(
    choice: ProfilerChoice, family: str, cases: tuple[ReplayCase, ...], workdir: Path, *, repeats: int,
    timeout_s: float = DEFAULT_TIMEOUT_S, env: dict[str, str] | None = None,
    family_source: tuple[str, str] | None = None,
) -> CaptureResult:
    """Run the cases under the chosen profiler in a child process and parse what it wrote."""
    # absolute: the tool runs with ``workdir`` as its working directory, and every path handed to it
    # (spec, output, progress) must not be read relative to that again (a store given as a relative
    # path, the default ./kprof-runs, made nsys look for kprof-runs/.../kprof-runs/.../replay_spec.json)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    marker = {"proton": "proton", "rocprof": "roctx"}.get(choice.name, "nvtx")
    progress_file = workdir / "replay_progress.jsonl"
    if progress_file.exists():
        progress_file.unlink()
    spec = ReplaySpec(
        family=family, cases=cases, repeats=repeats, marker=marker, progress_file=str(progress_file),
        proton_path=str(workdir / "proton"), proton_data="trace",
        family_package=family_source[0] if family_source else "", family_root=family_source[1] if family_source else "",
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

    version = tool_version(choice.tool) if choice.tool else _proton_version()
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

    if choice.name == "nsys":
        from kprof.profilers import nsys

        base = workdir / "nsys"
        rep, sq = base.with_suffix(".nsys-rep"), base.with_suffix(".sqlite")
        if expect(step(nsys.profile_command(choice.tool.path, child, base), "nsys_profile"), rep,
                  f"nsys finished but wrote no report {rep}"):
            expect(step(nsys.export_command(choice.tool.path, rep, sq), "nsys_export"), sq,
                   f"nsys export wrote no {sq}")
    elif choice.name == "ncu":
        from kprof.profilers import ncu

        csv_path = workdir / "ncu_raw.csv"
        expect(step(ncu.profile_command(choice.tool.path, child, csv_path), "ncu_profile"), csv_path,
               f"ncu finished but wrote no CSV {csv_path}")
    elif choice.name == "rocprof":
        from kprof.profilers import rocprof

        out_dir = workdir / "rocprof"
        if choice.tool.name == "rocprofv3":
            r = step(rocprof.rocprofv3_command(choice.tool.path, child, out_dir), "rocprof")
            found = sorted(out_dir.rglob("*kernel_trace.csv"))
        else:
            out_dir.mkdir(parents=True, exist_ok=True)
            r = step(rocprof.rocprof_legacy_command(choice.tool.path, child, out_dir / "results.csv"), "rocprof")
            found = [out_dir / "results.csv"]
        expect(r, found[0] if found else None,
               f"{choice.tool.name} finished but wrote no kernel trace under {out_dir}")
    elif choice.name == "proton":
        out = workdir / "proton.chrome_trace"
        expect(step(child, "proton"), out, f"Proton finished but wrote no {out}")
    else:
        raise KprofError(f"{choice.name!r} is not an external profiler")
    error = problems[0] if problems else None

    from kprof.profilers import parse_trace

    launches = pd.DataFrame()
    parsed = [a for a in artifacts if a.suffix not in (".nsys-rep", ".ncu-rep")]
    if parsed:
        try:
            launches = parse_trace(parsed[-1], fmt=choice.name)
        except KprofError as exc:
            error = error or f"could not parse {parsed[-1]}: {exc}"
    return CaptureResult(launches=launches, runs=runs, version=version, artifacts=artifacts,
                         progress=read_progress(progress_file), error=error)


def _proton_version() -> str:
    import triton

    return f"Proton in Triton {triton.__version__}"
