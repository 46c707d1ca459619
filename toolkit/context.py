"""What one ``kprof profile`` / ``kprof sweep`` invocation runs with, decided once before its first case.

Three frozen records, each built from the one before:

* :class:`ProfileOptions`: the invocation as asked (the CLI's options, or a test's);
* :class:`RunPlan`: what those resolve to before any device work: the mode, one :class:`Arm` per ``--rev``
  (or the working tree's), the providers, shapes and dtypes selected, the profiler found, the seed drawn.
  The fan-out driver, which measures nothing itself, works from a plan;
* :class:`RunContext`: a plan plus where it runs and writes: the device and its measured ceilings, the
  store (or a fan-out worker's stand-in for it) and the progress callback. Every phase of
  :mod:`kprof.runner` takes one.

Nothing is added to these records (or to the families they hold) after they are built: a phase that needs
something new gets a field here, so a reader finds everything a run depends on in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kprof.harness import BenchSettings
from kprof.registry import Family, Selection, Shape

if TYPE_CHECKING:
    import pandas as pd

    from kprof.device import Ceiling, DeviceInfo
    from kprof.envinfo import GitState
    from kprof.external import ProfilerChoice

ProgressFn = Callable[[str, int, int, str], None]  # (phase, done, total, label)


def quiet(phase: str, done: int, total: int, label: str) -> None:
    """A :data:`ProgressFn` that shows nothing (library calls without a progress bar, fan-out workers)."""


@dataclass(frozen=True)
class ProfileOptions:
    family: str
    providers: tuple[str, ...] | None = None
    shapes: tuple[Shape, ...] | None = None
    dtypes: tuple[str, ...] | None = None
    profiler: str = "auto"
    mode: str = "auto"  # auto | gpu | interpreter
    settings: BenchSettings = field(default_factory=BenchSettings)
    store: str | None = None
    command: str = ""
    profile_repeats: int | None = None  # launches per case under the profiler; None: 5 (ncu: 3)
    tool_path: str | None = None  # explicit profiler binary
    revisions: tuple[str, ...] = ()  # --rev: profile kernels/FAMILY as at these git revisions, interleaved
    profiler_timeout_s: float = 1800.0
    offline_resources: bool = False
    """Interpreter runs: compile each Triton specialisation for sm_90 on the CPU for its registers, spills
    and shared memory (``kprof sweep`` turns it on; a second or so per specialisation)."""
    sweep: dict | None = None
    """``kprof sweep``: {"version": V, "params": {NAME: [values]}} recorded with the run."""
    workers: str | None = None  # --workers N|all: fan the cases out over this host's GPUs (kprof.fanout)
    ray: str | None = None  # --ray ADDRESS|auto|local: fan them out over a Ray cluster
    case_timeout_s: float = 1800.0  # fan-out: a worker silent this long on one case is stopped, the case retried
    grid: str | None = None  # --grid PART: the run races that part of the family's shape grid (recorded)


@dataclass(frozen=True)
class Arm:
    """One run of an invocation: today's family, or the family as it is at a git revision."""

    family: Family
    git_commit: str | None
    git_dirty: bool | None
    git_note: str | None
    source_hashes: dict[str, str]
    extra_config: dict[str, Any] = field(default_factory=dict)
    """Merged into the run record's config: ``sources``, and for a revision ``revision``, its commit..."""
    revision_source: tuple[str, str] | None = None
    """(import package, sys.path root) of a revision's loaded copy of the family: an external profiler's
    replay child imports the family from there. None for the working tree's family."""


class RunWriter(Protocol):
    """The store writes (and the one read) of the measuring and profiling phases: a
    :class:`kprof.store.RunStore`, or a fan-out worker's :class:`kprof.fanout_worker.Sink`, which records
    them for the driver to apply. Opening and finishing runs is the driver's alone (:mod:`kprof.runner`)."""

    def add_case(
        self, run_id: str, idx: int, row: Mapping[str, Any], samples: Mapping[str, Sequence[float]]
    ) -> None: ...

    def update_cases(self, run_id: str, updates: pd.DataFrame) -> None: ...

    def add_launches(self, run_id: str, launches: pd.DataFrame) -> None: ...

    def clear_launches(self, run_id: str) -> None: ...

    def add_capture(self, run_id: str, profiler: str, version: str, run: Any, notes: str | None = None) -> None: ...

    def set_fields(self, run_id: str, **fields: Any) -> None: ...

    def trace_dir(self, run_id: str) -> Path: ...

    def run(self, ref: str) -> dict: ...


@dataclass(frozen=True)
class RunPlan:
    """What an invocation runs, resolved from its options before any device work."""

    options: ProfileOptions  # as asked: command, sweep, timeouts, and the profiler asked for (``auto``...)
    mode: str  # "gpu" or "interpreter", resolved from options.mode
    arms: tuple[Arm, ...]  # one per --rev, interleaved case by case; else the working tree's family
    selection: Selection  # providers, shapes and dtypes every arm runs
    profiler: ProfilerChoice  # the backend found for options.profiler, and why
    repeats: int  # launches per case under the profiler
    settings: BenchSettings  # the options' settings with the seed drawn (never 0)

    @property
    def families(self) -> list[Family]:
        return [a.family for a in self.arms]


@dataclass(frozen=True)
class RunContext(RunPlan):
    """A :class:`RunPlan` plus where it runs and writes; every runner phase takes one."""

    store: RunWriter
    device: DeviceInfo  # this process's device (a fan-out worker's own GPU)
    ceiling: Ceiling | None  # its measured copy and matrix-product ceilings; None in interpreter runs
    progress: ProgressFn

    @classmethod
    def of(
        cls, plan: RunPlan, *, store: RunWriter, device: DeviceInfo, ceiling: Ceiling | None, progress: ProgressFn
    ) -> RunContext:
        return cls(
            **{f.name: getattr(plan, f.name) for f in fields(RunPlan)},
            store=store,
            device=device,
            ceiling=ceiling,
            progress=progress,
        )


def arms_for(today: Family, opts: ProfileOptions, cache: Path, git: GitState, progress: ProgressFn) -> list[Arm]:
    """One arm per ``--rev`` (the family's import closure at that commit, written out under ``cache``), else
    the working tree's. Each records the closure's hashes and, under ``config["sources"]``, which files it
    ran and which are harness."""
    from kprof.closure import working_tree_sources

    if not opts.revisions:
        src = working_tree_sources(today.package_dir)
        return [Arm(today, git.commit, git.dirty, git.note, src.hashes, {"sources": src.record})]
    from kprof.revisions import load_family_at

    harness = f"harness {str(git.commit or '?')[:10]}{' (dirty)' if git.dirty else ''}"
    arms = []
    for slot, rev in enumerate(opts.revisions):
        progress("profiler", 0, 0, f"loading kernels/{today.name} and the kernel modules it imports at {rev!r}")
        fr = load_family_at(today.package_dir, rev, cache, slot)
        sources = {
            "kernels_from": f"revision {fr.commit}",
            "files": list(fr.closure.files),
            "harness": list(fr.closure.harness),
            "harness_commit": git.commit,
            "harness_dirty": git.dirty,
        }
        arms.append(
            Arm(
                fr.family,
                fr.commit,
                False,
                f"kernels/{today.name} and its imports at --rev {rev} ({fr.subject[:80]}); {harness}",
                fr.source_hashes,
                {
                    "revision": rev,
                    "revision_commit": fr.commit,
                    "revision_subject": fr.subject,
                    "harness_commit": git.commit,
                    "harness_dirty": git.dirty,
                    "interleaved_revisions": list(opts.revisions),
                    "sources": sources,
                },
                revision_source=(fr.package, str(fr.root)),  # the replay child of an external profiler imports it
            )
        )
    return arms
