"""Builds a :class:`kprof.context.RunContext` for tests that call one runner phase directly."""

from __future__ import annotations

from kprof.context import Arm, ProfileOptions, RunContext, RunWriter, quiet
from kprof.device import DeviceInfo
from kprof.external import ProfilerChoice
from kprof.harness import BenchSettings
from kprof.registry import Family, Selection


def context_for(
    store: RunWriter,
    *families: Family,
    mode: str = "interpreter",
    profiler: ProfilerChoice | None = None,
    options: ProfileOptions | None = None,
    settings: BenchSettings | None = None,
    repeats: int = 2,
    revision_source: tuple[str, str] | None = None,
) -> RunContext:
    """One arm per family (all of them at the working tree's commit); a CPU device, no ceiling."""
    fam = families[0]
    options = options or ProfileOptions(family=fam.name)
    arms = tuple(Arm(f, None, None, "test", {}, revision_source=revision_source) for f in families)
    selection = Selection(fam.name, tuple(fam.providers), ((3, 37),), ("fp32",))
    return RunContext(
        options=options,
        mode=mode,
        arms=arms,
        selection=selection,
        profiler=profiler or ProfilerChoice("none", "test"),
        repeats=repeats,
        settings=settings or options.settings,
        store=store,
        device=DeviceInfo(kind="cpu", name="cpu"),
        ceiling=None,
        progress=quiet,
    )
