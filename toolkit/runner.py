"""``kprof profile``: every provider of a family over its sweep, measured, profiled, stored, reported.

Phases, in this order on purpose, each a function taking the invocation's :class:`~kprof.context.RunContext`
(built once, by :func:`prepare`):

1. prepare: resolve the options into a plan (the ``--rev`` arms, the selection, the profiler, the seed),
   identify the device and measure its copy and matrix-product ceilings; open one stored run per arm;
2. measure (:func:`measure_cases`): each case's correctness, then timings (GPU, graph, host, memory), every
   arm of a case before the next case; stored as soon as it finishes;
3. profile (:func:`profile_cases`): one profiler pass over the correct cases, each inside a labelled range,
   parsed into the launch table and folded back into the cases' metrics (launch latency, kernels per call,
   occupancy, and measured DRAM bytes / achieved occupancy where the profiler has counters).
   torch.profiler runs in-process; nsys, ncu, rocprof and Proton run ``python -m kprof.replay`` as a child
   process (:mod:`kprof.external`), and every invocation (argv, exit code, output tails, tool version) is
   stored;
4. finish (:func:`finish_runs`): each run's status and markdown report.

The profiler pass comes after every timing because an attached profiler (CUPTI) can add host overhead
to later launches; timing first keeps host times clean. A profiler that fails or times out leaves the
measured cases stored and the run marked incomplete, with the tool's own words in the run record.
"""

from __future__ import annotations

import secrets
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from kprof.context import Arm, ProfileOptions, ProgressFn, RunContext, RunPlan, arms_for, quiet
from kprof.errors import KprofError
from kprof.harness import BenchSettings, CaseResult, case_seed, run_case
from kprof.registry import Case, Family, Selection, get_family, shape_str, split_config_name
from kprof.runtime import restores_interpreter_mode, use_interpreter

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from kprof.device import Ceiling
    from kprof.external import CaptureResult, ProfilerChoice
    from kprof.fanout import EarlyWorkers
    from kprof.harness import MoreSamples
    from kprof.store import RunRecord, RunStore

__all__ = [  # ProfileOptions, Arm, ProgressFn, RunPlan and RunContext live in kprof.context; importable here too
    "ROUNDS",
    "Arm",
    "ProfileOptions",
    "ProfilerFailed",
    "ProgressFn",
    "RunContext",
    "RunPlan",
    "begin_runs",
    "finish_runs",
    "measure_cases",
    "measure_ceiling",
    "plan_run",
    "prepare",
    "profile",
    "profile_cases",
    "profile_runs",
    "profiler_version",
    "resolve_mode",
    "run_record",
    "select",
]


def resolve_mode(requested: str) -> str:
    """``gpu`` when CUDA is available, else ``interpreter`` (and Triton's interpreter is switched on).

    Must run before kernel modules are imported: ``@triton.jit`` picks the interpreter at decoration.
    """
    import torch

    if requested not in ("auto", "gpu", "interpreter"):
        raise KprofError(f"--mode must be auto, gpu or interpreter, not {requested!r}")
    has_gpu = torch.cuda.is_available()
    if requested == "gpu" and not has_gpu:
        raise KprofError("--mode gpu asked for, but torch sees no CUDA GPU (torch.cuda.is_available() is False)")
    mode = "gpu" if (requested == "gpu" or (requested == "auto" and has_gpu)) else "interpreter"
    if mode == "interpreter":
        use_interpreter()  # for the caller's scope: profile_runs and the CLI restore it when they return
    return mode


def select(family: Family, opts: ProfileOptions, mode: str, also: Sequence[Family] = ()) -> Selection:
    """Providers, shapes and dtypes of the run; with ``also`` (other revisions), only providers all have."""
    sweep = family.sweep("gpu" if mode == "gpu" else "interpreter")
    names = list(opts.providers) if opts.providers else list(family.providers)
    for n in names:
        family.get_provider(n)  # raises with the list of known providers
    chosen, skipped = [], []
    for n in names:
        p = family.get_provider(n)
        reason = p.unavailable_reason()
        if reason is None and any(split_config_name(n)[0] not in other.providers for other in also):
            reason = "not defined in every revision compared"
        if reason is None and mode == "interpreter" and p.gpu_only:
            reason = "GPU only: not run in a CPU interpreter run"
        if reason:
            skipped.append((n, reason))
        else:
            chosen.append(n)
    if not chosen:
        raise KprofError(f"no provider of {family.name!r} can run here: " + "; ".join(f"{n}: {r}" for n, r in skipped))
    return Selection(
        family=family.name,
        providers=tuple(chosen),
        shapes=opts.shapes or sweep.shapes,
        dtypes=opts.dtypes or sweep.dtypes,
        skipped=tuple(skipped),
    )


def profile(opts: ProfileOptions, progress: ProgressFn | None = None) -> str:
    """Run the whole flow and return the run id (the first one with several ``--rev``)."""
    return profile_runs(opts, progress)[0]


@restores_interpreter_mode
def profile_runs(
    opts: ProfileOptions, progress: ProgressFn | None = None, early: EarlyWorkers | None = None
) -> list[str]:
    """Run the whole flow; one run per ``--rev`` (interleaved case by case), else one run of the working tree.

    A run interrupted midway is stored as incomplete, with every case that finished. ``early``: fan-out
    workers the command started before its checks (:func:`kprof.fanout.workers_started_early`).
    """
    from kprof.store import RunStore

    if opts.workers or opts.ray:
        from kprof.fanout import profile_runs_fanout

        return profile_runs_fanout(opts, progress, early)
    if early is not None:  # started for a fan-out this run is not: stopped, not left waiting
        early.close()
    mode = resolve_mode(opts.mode)
    today = get_family(opts.family)
    store = RunStore(opts.store)
    ctx = prepare(opts, mode, today, store, progress or quiet)
    run_ids = begin_runs(ctx, store)
    status, error = "incomplete", None
    try:
        results = measure_cases(ctx, run_ids, ctx.selection.cases())
        profile_cases(ctx, run_ids, results)
        status = "complete"
    except BaseException as exc:  # KeyboardInterrupt and SIGTERM included: keep what finished
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-1000:]
        raise
    finally:
        finish_runs(ctx, store, run_ids, status, error)
    return run_ids


# ------------------------------------------------------------------------------------------ 1. prepare
def plan_run(
    opts: ProfileOptions,
    mode: str,
    today: Family,
    cache: Path,
    progress: ProgressFn,
    seed: int | None = None,
) -> RunPlan:
    """The arms (``cache``: where revisions are written out), the selection, the profiler and the seed.

    ``seed``: a fan-out driver's, handed to its workers; else the options' own, or a fresh one when that is 0.
    """
    from kprof import envinfo
    from kprof.external import choose
    from kprof.profilers import default_repeats

    arms = arms_for(today, opts, cache, envinfo.git_state(today.package_dir), progress)
    selection = select(arms[0].family, opts, mode, also=[a.family for a in arms[1:]])
    choice = choose(opts.profiler, mode, opts.tool_path)
    repeats = opts.profile_repeats or default_repeats(choice.name)
    if seed is None:
        seed = opts.settings.seed if opts.settings.seed else secrets.randbits(31)
    settings = BenchSettings(**{**asdict(opts.settings), "seed": seed})
    return RunPlan(opts, mode, tuple(arms), selection, choice, repeats, settings)


def prepare(opts: ProfileOptions, mode: str, today: Family, store: RunStore, progress: ProgressFn) -> RunContext:
    """The invocation's context: its plan, this device and, on a GPU, the device's measured ceilings."""
    from kprof import device as devmod

    plan = plan_run(opts, mode, today, store.root, progress)
    device = devmod.current_device()
    return RunContext.of(plan, store=store, device=device, ceiling=measure_ceiling(mode, progress), progress=progress)


def measure_ceiling(mode: str, progress: ProgressFn) -> Ceiling | None:
    """GPU runs: the copy bandwidth and matrix-product rate every case's roofline numbers are put against."""
    if mode != "gpu":
        return None
    from kprof import device as devmod

    progress("ceiling", 0, 1, "measuring copy bandwidth and matrix-product rate")
    ceiling = devmod.measure_ceilings()
    progress(
        "ceiling",
        1,
        1,
        f"{ceiling.gbps:.0f} GB/s, " + ", ".join(f"{d} {t:.0f} TFLOP/s" for d, t in ceiling.tflops.items()),
    )
    return ceiling


def begin_runs(ctx: RunContext, store: RunStore) -> list[str]:
    """One stored run per arm (each noting the providers left out, and why); says what is about to run."""
    from kprof import envinfo

    version = profiler_version(ctx.profiler)
    versions = envinfo.versions().to_dict()
    ceiling = asdict(ctx.ceiling) if ctx.ceiling else None
    run_ids = []
    for arm in ctx.arms:
        run_ids.append(store.begin_run(run_record(ctx, arm, ctx.device.to_dict(), ceiling, version, versions)))
        if ctx.selection.skipped:
            store.set_fields(run_ids[-1], notes="\n".join(f"{n}: {r}" for n, r in ctx.selection.skipped))
    if len(ctx.arms) > 1:
        ctx.progress(
            "profiler",
            0,
            0,
            "interleaving "
            + ", ".join(
                f"{a.extra_config['revision']} ({a.git_commit[:10]}) -> run {r}" for a, r in zip(ctx.arms, run_ids)
            ),
        )
    ctx.progress("profiler", 0, 0, f"{ctx.profiler.name} ({ctx.profiler.reason})")
    return run_ids


def run_record(
    plan: RunPlan,
    arm: Arm,
    device: dict,
    ceiling: dict | None,
    profiler_version: str | None,
    versions: dict,
    extra_config: dict | None = None,
) -> RunRecord:
    """The stored record of one arm's run: what was selected, how it is measured and profiled, on what device
    (``device`` and ``ceiling`` as dicts: a fan-out driver merges its workers' into one)."""
    from kprof.store import RunRecord

    sel, choice = plan.selection, plan.profiler
    return RunRecord(
        family=arm.family.name,
        mode=plan.mode,
        command=plan.options.command,
        config={
            "providers": list(sel.providers),
            "skipped_providers": [list(s) for s in sel.skipped],
            "shapes": [shape_str(s) for s in sel.shapes],
            "dtypes": list(sel.dtypes),
            "settings": asdict(plan.settings),
            "profiler": choice.name,
            "profiler_reason": choice.reason,
            "profile_repeats": plan.repeats,
            "tool_path": choice.tool.path if choice.tool else None,
            **({"sweep": plan.options.sweep} if plan.options.sweep else {}),
            **({"grid": plan.options.grid} if plan.options.grid else {}),
            **(extra_config or {}),
            **arm.extra_config,
        },
        git_commit=arm.git_commit,
        git_dirty=arm.git_dirty,
        git_note=arm.git_note,
        source_hashes=arm.source_hashes,
        device=device,
        versions=versions,
        profiler=choice.name,
        profiler_version=profiler_version,
        ceiling_gbps=ceiling["gbps"] if ceiling else None,
        ceiling=ceiling,
    )


def profiler_version(choice: ProfilerChoice) -> str | None:
    """What is recorded as the profiler's version: torch's for torch.profiler, else the found tool's own."""
    if choice.name == "torch":
        return _torch_profiler_version()
    if choice.tool is not None:
        from kprof.tools import tool_version

        return f"{choice.tool.path}: {tool_version(choice.tool)}"
    return None


def _torch_profiler_version() -> str:
    import torch

    return f"torch.profiler (Kineto) in torch {torch.__version__}"


# ------------------------------------------------------------------------------------------ 2. measure
ROUNDS = 4  # GPU timing rounds per case and revision when revisions are interleaved


def measure_cases(
    ctx: RunContext,
    run_ids: Sequence[str],
    cases: Sequence[Case],
    first_index: int = 0,
) -> list[list[CaseResult]]:
    """Every arm (revision) of a case before the next case; each case stored as soon as it is measured.

    With one arm this is the plain measurement. With several, each case is timed in ``ROUNDS`` short rounds
    per arm (each 1/ROUNDS of the repetition budget), the arm order alternating round by round (A B, B A,
    A B, B A): drift of the machine or a transient hits every revision alike instead of one side's whole
    window. (Measured on the H100: with one window per side, 3 of 153 unchanged cases differed by 3-4%.)
    ``first_index``: a fan-out worker measures one case at a time and keeps the case's index in the run.
    """
    results: list[list[CaseResult]] = [[] for _ in ctx.arms]
    rounds = ROUNDS if len(ctx.arms) > 1 and ctx.mode == "gpu" else 1
    for i, case in enumerate(cases, first_index):
        ctx.progress("cases", i, len(cases), case.id)
        for j, res in enumerate(_measure_case(ctx, case, i, rounds)):
            _store_case(ctx, ctx.arms[j], run_ids[j], i, res)
            results[j].append(res)
        if ctx.mode == "gpu" and i % 8 == 7:
            import torch

            torch.cuda.empty_cache()
    ctx.progress("cases", len(cases), len(cases), "done")
    return results


def _measure_case(ctx: RunContext, case: Case, i: int, rounds: int) -> list[CaseResult]:
    """Case number ``i`` in every arm: correctness and timings in round 0, then more GPU samples per round."""
    from kprof.harness import more_gpu_samples

    device = "cuda" if ctx.mode == "gpu" else "cpu"
    settings = replace(ctx.settings, rep_ms=max(10, ctx.settings.rep_ms // rounds)) if rounds > 1 else ctx.settings
    n = len(ctx.arms)
    first: dict[int, CaseResult] = {}
    extra: dict[int, list[float]] = {j: [] for j in range(n)}
    notes: dict[int, list[str]] = {j: [] for j in range(n)}
    for r in range(rounds):
        order = list(range(n)) if (i + r) % 2 == 0 else list(reversed(range(n)))
        for j in order:
            family = ctx.arms[j].family
            provider = family.get_provider(case.provider)
            if r == 0:
                first[j] = run_case(
                    family, provider, case, device=device, settings=settings, timing=(ctx.mode == "gpu")
                )
            elif first[j].status == "ok" and first[j].timed:
                host = sorted(first[j].host_samples_us)[len(first[j].host_samples_us) // 2]
                more = more_gpu_samples(family, provider, case, device=device, settings=settings, host_us=host)
                extra[j] += _round_samples(first[j], more, r, notes[j])
    return [_with_rounds(first[j], extra[j], notes[j]) for j in range(n)]


def _round_samples(first: CaseResult, more: MoreSamples, r: int, notes: list[str]) -> list[float]:
    """The samples of round ``r`` to pool with round 0's, its notes added to ``notes``: none where another timer
    took them than round 0's (CUPTI's busy time against CUDA events' span and overhead, about 3 us on an H100:
    pooled in one arm only, that alone would read as a change between the arms)."""
    from kprof.metrics import headline_source

    notes.extend(more.notes)
    expected = headline_source(first.timing_mode, first.timer)
    if more.source != expected:
        notes.append(
            f"timing round {r + 1} was timed by {more.source}, not {expected} as round 1; its samples left out"
        )
        return []
    return list(more.samples_ms)


def _with_rounds(first: CaseResult, extra: Sequence[float], notes: Sequence[str]) -> CaseResult:
    """Round 0's result with the later rounds' samples and notes."""
    if not extra and not notes:
        return first
    note = "; ".join(dict.fromkeys(n for n in (first.note, *notes) if n)) or None
    return replace(first, gpu_samples_ms=first.gpu_samples_ms + tuple(extra), note=note)


def _store_case(ctx: RunContext, arm: Arm, run_id: str, idx: int, res: CaseResult) -> None:
    """One measured case of one arm: its metrics row (against the device's ceilings) and its raw samples."""
    from kprof.metrics import case_row

    case, ceiling = res.case, ctx.ceiling
    row = case_row(
        res,
        arm.family.get_provider(case.provider).kind,
        ceiling.gbps if ceiling else None,
        peak_tflops=ceiling.peak_tflops(case.dtype) if ceiling else None,
        limits=ctx.device.limits(),
    )
    ctx.store.add_case(
        run_id, idx, row, {**res.mode_samples_us, "gpu": res.gpu_samples_ms, "host": res.host_samples_us}
    )


# ------------------------------------------------------------------------------------------ 3. profile
class ProfilerFailed(KprofError):
    """The external profiler failed or timed out; the measured cases are stored, the run is incomplete."""


def profile_cases(ctx: RunContext, run_ids: Sequence[str], results: Sequence[list[CaseResult]]) -> None:
    """After every timing: offline resources (interpreter sweeps), then each arm's profiler pass."""
    if ctx.mode == "interpreter" and ctx.options.offline_resources:
        for run_id, res in zip(run_ids, results):
            _offline_resources(ctx, run_id, res)
    for arm, run_id, res in zip(ctx.arms, run_ids, results):
        _profiler_pass(ctx, arm, run_id, res)


def _profiler_pass(ctx: RunContext, arm: Arm, run_id: str, results: list[CaseResult]) -> None:
    """The profiler pass of the chosen backend; raises ProfilerFailed when a named external tool fails."""
    choice = ctx.profiler
    if choice.name == "torch":
        _torch_pass(ctx, arm, run_id, results)
    elif choice.name != "none":
        failure = _external_pass(ctx, arm, run_id, results)
        if failure and ctx.options.profiler == "auto":
            # auto must not fail where the built-in profiler works (e.g. an nsys whose importer
            # libraries are missing): say so in the run record and profile with torch.profiler
            ctx.progress("profiler", 0, 0, f"auto: {failure[:300]} -> falling back to torch.profiler")
            ctx.store.clear_launches(run_id)
            ctx.store.set_fields(
                run_id,
                profiler="torch",
                profiler_version=(
                    f"{_torch_profiler_version()}; auto fell back after {choice.name} failed: {failure[:500]}"
                ),
            )
            _torch_pass(ctx, arm, run_id, results)
        elif failure:
            raise ProfilerFailed(failure)


def _offline_resources(ctx: RunContext, run_id: str, results: list[CaseResult]) -> None:
    """Registers, spills and shared memory of every recorded Triton specialisation, compiled for sm_90 on
    the CPU in one child process, into the cases' metrics (an interpreter run has no GPU to load them)."""
    import pandas as pd

    from kprof.metrics import specialization_fields
    from kprof.occupancy import limits_for
    from kprof.specialization import Recording, offline_resources

    recs = [(r, r.extra["recording"]) for r in results if r.extra.get("recording") is not None]
    merged = Recording(
        launches=[s for _, rec in recs for s in rec.launches], calls=[c for _, rec in recs for c in rec.calls]
    )
    if not merged.launches:
        return
    ctx.progress("resources", 0, 1, f"compiling {len(merged.launches)} Triton launches for sm_90 (ptxas, offline)")
    resolved = offline_resources(merged).launches
    rows, at = [], 0
    for r, rec in recs:
        specs = resolved[at : at + len(rec.launches)]
        at += len(rec.launches)
        r.extra["specializations"] = [s.to_dict() for s in specs]
        fields = specialization_fields(r.extra["specializations"], limits_for(9, 0), r.extra.get("params"))
        rows.append({"case": r.case.id, **fields})
    ctx.store.update_cases(run_id, pd.DataFrame(rows))
    ctx.progress("resources", 1, 1, "done")


def _torch_pass(ctx: RunContext, arm: Arm, run_id: str, results: list[CaseResult]) -> None:
    """torch.profiler, in this process: every correct case inside a labelled range, one trace for the run."""
    from kprof.profilers import parse_trace, torch_profiler

    ok = [r.case for r in results if r.status == "ok"]
    if not ok:
        return
    family, progress = arm.family, ctx.progress

    def calls() -> Iterator[tuple[str, Callable[[], Any]]]:
        # built lazily: only one case's inputs are alive at a time
        for i, case in enumerate(ok):
            progress("profile", i, len(ok), case.id)
            inputs = family.make_inputs(case.shape, case.dtype, "cuda", case_seed(ctx.settings.seed, case))
            fn = family.get_provider(case.provider).fn
            yield case.id, (lambda fn=fn, inputs=inputs: fn(**inputs))

    path = ctx.store.trace_dir(run_id) / "torch_trace.json.gz"
    torch_profiler.capture(calls(), path, repeats=ctx.repeats)
    progress("profile", len(ok), len(ok), "parsing trace")
    launches = parse_trace(path, "torch")
    for note in launches.attrs.get("warnings", []):  # e.g. no GPU activity: shown now and kept with the run
        progress("profiler", 0, 0, f"warning: {note}")
        ctx.store.set_fields(run_id, notes="\n".join(filter(None, [ctx.store.run(run_id).get("notes"), note])))
    _store_launches(ctx, run_id, launches, results)
    ctx.store.set_fields(run_id, trace_path=str(path))


def _external_pass(ctx: RunContext, arm: Arm, run_id: str, results: list[CaseResult]) -> str | None:
    """Replay the correct cases under nsys/ncu/rocprof/Proton; store launches, metrics and tool records.

    Returns a description of the failure, or None. Launches of cases that finished before a failure are
    kept (the trace is parsed whatever the exit status).
    """
    from kprof import external

    ok = [r.case for r in results if r.status == "ok"]
    if not ok:
        return None
    name = ctx.profiler.name
    cases = external.replay_cases(
        arm.family.name, [(c.id, c.provider, c.shape, c.dtype, case_seed(ctx.settings.seed, c)) for c in ok]
    )
    ctx.progress("profile", 0, len(ok), f"{name}: replaying {len(ok)} cases in a child process")
    res = external.capture(
        ctx.profiler,
        arm.family.name,
        cases,
        ctx.store.trace_dir(run_id) / name,
        repeats=ctx.repeats,
        timeout_s=ctx.options.profiler_timeout_s,
        family_source=arm.revision_source,
    )
    _store_capture(ctx, run_id, res, results)
    done = len(res.cases_done)
    ctx.progress(
        "profile", done, len(ok), f"{name}: {done}/{len(ok)} cases replayed, {len(res.launches)} launches parsed"
    )
    if res.error:
        kept = f"{len(res.launches)} launches parsed and kept" if not res.launches.empty else "no trace to parse"
        return f"{name} failed ({done} of {len(ok)} cases replayed; {kept}): {res.error}"
    return None


def _store_capture(ctx: RunContext, run_id: str, res: CaptureResult, results: list[CaseResult]) -> None:
    """An external capture into the store: every tool invocation (the replay's failures and the parser's
    warnings noted on the first), the launches parsed, and the trace kept."""
    failed = [p for p in res.progress if p.get("status") != "ok"]
    notes = [f"{p['case']} failed in the replay: {p.get('error', '?')}" for p in failed] + list(res.notes)
    for note in res.notes:  # parser warnings (no rows, sibling files joined): shown now and kept with the run
        ctx.progress("profiler", 0, 0, f"warning: {note}")
    for i, r in enumerate(res.runs):
        ctx.store.add_capture(run_id, ctx.profiler.name, res.version, r, notes="\n".join(notes) if i == 0 else None)
    if not res.launches.empty:
        _store_launches(ctx, run_id, res.launches, results)
    traces = [str(a) for a in res.artifacts]
    ctx.store.set_fields(run_id, trace_path=traces[-1] if traces else None)


def _store_launches(ctx: RunContext, run_id: str, launches: pd.DataFrame, results: list[CaseResult]) -> None:
    """A profiler pass's launch table into the store (each Triton kernel with the specialisation that ran),
    and the per-case metrics derived from it."""
    from kprof.metrics import attribute_launches, launch_metrics

    launches = attribute_launches(launches, {r.case.id: r.extra.get("specializations", ()) for r in results})
    ctx.store.add_launches(run_id, launches)
    ctx.store.update_cases(
        run_id,
        launch_metrics(
            launches, ctx.repeats, ctx.device.limits(), {r.case.id: r.bytes for r in results}, ctx.device.sm_count
        ),
    )


# ------------------------------------------------------------------------------------------ 4. finish
def finish_runs(ctx: RunContext, store: RunStore, run_ids: Sequence[str], status: str, error: str | None) -> None:
    """Each run's status, error and markdown report, stored; the store closed."""
    from kprof import report

    for arm, run_id in zip(ctx.arms, run_ids):
        run = store.run(run_id)
        run["status"] = status
        run["error"] = error or run.get("error")
        md = report.render(run, store.metrics(run_id), baseline=arm.family.baseline)
        store.finish_run(run_id, status, report_md=md, error=error)
    store.close()
