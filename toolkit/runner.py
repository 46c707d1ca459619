"""``kprof profile``: every provider of a family over its sweep, measured, profiled, stored, reported.

Phases, in this order on purpose:

1. measure the device's copy ceiling;
2. each case: correctness, then timings (GPU, graph, host, memory); stored as soon as it finishes;
3. one profiler pass over the correct cases, each inside a labelled range, parsed into the launch
   table and folded back into the cases' metrics (launch latency, kernels per call, occupancy, and
   measured DRAM bytes / achieved occupancy where the profiler has counters). torch.profiler runs
   in-process; nsys, ncu, rocprof and Proton run ``python -m kprof.replay`` as a child process
   (:mod:`kprof.external`), and every invocation (argv, exit code, output tails, tool version) is stored.

The profiler pass comes after every timing because an attached profiler (CUPTI) can add host overhead
to later launches; timing first keeps host times clean. A profiler that fails or times out leaves the
measured cases stored and the run marked incomplete, with the tool's own words in the run record.
"""

from __future__ import annotations

import os
import secrets
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from kprof.errors import KprofError
from kprof.harness import BenchSettings, CaseResult, case_seed, run_case
from kprof.registry import Case, Family, Selection, Shape, get_family, shape_str, split_config_name


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
        os.environ["TRITON_INTERPRET"] = "1"
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


ProgressFn = Callable[[str, int, int, str], None]  # (phase, done, total, label)


@dataclass(frozen=True)
class Arm:
    """One run of an invocation: today's family, or the family as it is at a git revision."""

    family: Family
    git_commit: str | None
    git_dirty: bool | None
    git_note: str | None
    source_hashes: dict
    extra_config: dict = field(default_factory=dict)


def profile(opts: ProfileOptions, progress: ProgressFn | None = None) -> str:
    """Run the whole flow and return the run id (the first one with several ``--rev``)."""
    return profile_runs(opts, progress)[0]


def profile_runs(opts: ProfileOptions, progress: ProgressFn | None = None) -> list[str]:
    """Run the whole flow; one run per ``--rev`` (interleaved case by case), else one run of the working tree.

    A run interrupted midway is stored as incomplete, with every case that finished.
    """
    from kprof import device as devmod
    from kprof import envinfo, report
    from kprof.external import choose
    from kprof.store import RunRecord, RunStore

    if opts.workers or opts.ray:
        from kprof.fanout import profile_runs_fanout

        return profile_runs_fanout(opts, progress)
    mode = resolve_mode(opts.mode)
    today = get_family(opts.family)
    store = RunStore(opts.store)
    progress = progress or (lambda *a: None)
    git = envinfo.git_state(today.package_dir)
    arms = _arms(today, opts, store.root, git, progress)
    sel = select(arms[0].family, opts, mode, also=[a.family for a in arms[1:]])
    choice = choose(opts.profiler, mode, opts.tool_path)
    profiler = choice.name
    from kprof.profilers import default_repeats

    repeats = opts.profile_repeats or default_repeats(profiler)
    seed = opts.settings.seed if opts.settings.seed else secrets.randbits(31)
    settings = BenchSettings(**{**asdict(opts.settings), "seed": seed})

    dev = devmod.current_device()
    ceiling = None
    if mode == "gpu":
        progress("ceiling", 0, 1, "measuring copy bandwidth and matrix-product rate")
        ceiling = devmod.measure_ceilings()
        progress("ceiling", 1, 1, f"{ceiling.gbps:.0f} GB/s, " + ", ".join(
            f"{d} {t:.0f} TFLOP/s" for d, t in ceiling.tflops.items()))
    profiler_version = None
    if profiler == "torch":
        profiler_version = _torch_profiler_version()
    elif choice.tool is not None:
        from kprof.tools import tool_version

        profiler_version = f"{choice.tool.path}: {tool_version(choice.tool)}"
    versions = envinfo.versions().to_dict()
    run_ids = []
    for arm in arms:
        record = RunRecord(
            family=arm.family.name, mode=mode, command=opts.command,
            config={
                "providers": list(sel.providers), "skipped_providers": [list(s) for s in sel.skipped],
                "shapes": [shape_str(s) for s in sel.shapes], "dtypes": list(sel.dtypes),
                "settings": asdict(settings), "profiler": profiler, "profiler_reason": choice.reason,
                "profile_repeats": repeats, "tool_path": choice.tool.path if choice.tool else None,
                **({"sweep": opts.sweep} if opts.sweep else {}),
                **arm.extra_config,
            },
            git_commit=arm.git_commit, git_dirty=arm.git_dirty, git_note=arm.git_note,
            source_hashes=arm.source_hashes,
            device=dev.to_dict(), versions=versions,
            profiler=profiler, profiler_version=profiler_version,
            ceiling_gbps=ceiling.gbps if ceiling else None, ceiling=asdict(ceiling) if ceiling else None,
        )
        run_ids.append(store.begin_run(record))
        if sel.skipped:
            store.set_fields(run_ids[-1], notes="\n".join(f"{n}: {r}" for n, r in sel.skipped))
    if len(arms) > 1:
        progress("profiler", 0, 0, "interleaving " + ", ".join(
            f"{a.extra_config['revision']} ({a.git_commit[:10]}) -> run {r}" for a, r in zip(arms, run_ids)))
    progress("profiler", 0, 0, f"{profiler} ({choice.reason})")
    status, error = "incomplete", None
    try:
        results = _measure_arms([a.family for a in arms], sel.cases(), mode, settings, store, run_ids, ceiling,
                                progress, dev.limits())
        if mode == "interpreter" and opts.offline_resources:
            for run_id, res in zip(run_ids, results):
                _offline_resources(res, store, run_id, progress)
        for arm, run_id, res in zip(arms, run_ids, results):
            _profiler_pass(arm.family, res, settings, store, run_id, dev, repeats, choice, opts, progress)
        status = "complete"
    except BaseException as exc:  # KeyboardInterrupt and SIGTERM included: keep what finished
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-1000:]
        raise
    finally:
        for arm, run_id in zip(arms, run_ids):
            run = store.run(run_id)
            run["status"] = status
            run["error"] = error or run.get("error")
            md = report.render(run, store.metrics(run_id), baseline=arm.family.baseline)
            store.finish_run(run_id, status, report_md=md, error=error)
        store.close()
    return run_ids


def _arms(today: Family, opts: ProfileOptions, cache: Any, git: Any, progress: ProgressFn) -> list[Arm]:
    """One arm per ``--rev`` (the family's import closure at that commit), else the working tree's. Each
    records the closure's hashes and, under ``config["sources"]``, which files it ran and which are harness."""
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
        fr.family.revision_source = (fr.package, str(fr.root))  # for the replay child of external profilers
        sources = {"kernels_from": f"revision {fr.commit}", "files": list(fr.closure.files),
                   "harness": list(fr.closure.harness), "harness_commit": git.commit, "harness_dirty": git.dirty}
        arms.append(Arm(
            fr.family, fr.commit, False, f"kernels/{today.name} and its imports at --rev {rev} ({fr.subject[:80]}); "
            f"{harness}",
            fr.source_hashes,
            {"revision": rev, "revision_commit": fr.commit, "revision_subject": fr.subject,
             "harness_commit": git.commit, "harness_dirty": git.dirty, "interleaved_revisions": list(opts.revisions),
             "sources": sources},
        ))
    return arms


def _profiler_pass(
    family: Family, results: list[CaseResult], settings: BenchSettings, store: Any, run_id: str, dev: Any,
    repeats: int, choice: Any, opts: ProfileOptions, progress: ProgressFn,
) -> None:
    """The profiler pass of the chosen backend; raises ProfilerFailed when a named external tool fails."""
    if choice.name == "torch":
        _profile_pass(family, results, settings, store, run_id, dev, repeats, progress)
    elif choice.name != "none":
        failure = _external_pass(family, results, settings, store, run_id, dev, repeats, choice, opts, progress)
        if failure and opts.profiler == "auto":
            # auto must not fail where the built-in profiler works (e.g. an nsys whose importer
            # libraries are missing): say so in the run record and profile with torch.profiler
            progress("profiler", 0, 0, f"auto: {failure[:300]} -> falling back to torch.profiler")
            store.clear_launches(run_id)
            store.set_fields(run_id, profiler="torch", profiler_version=(
                f"{_torch_profiler_version()}; auto fell back after {choice.name} failed: {failure[:500]}"))
            _profile_pass(family, results, settings, store, run_id, dev, repeats, progress)
        elif failure:
            raise ProfilerFailed(failure)


def _torch_profiler_version() -> str:
    import torch

    return f"torch.profiler (Kineto) in torch {torch.__version__}"


def _offline_resources(results: list[CaseResult], store: Any, run_id: str, progress: ProgressFn) -> None:
    """Registers, spills and shared memory of every recorded Triton specialisation, compiled for sm_90 on
    the CPU in one child process, into the cases' metrics (an interpreter run has no GPU to load them)."""
    import pandas as pd

    from kprof.metrics import specialization_fields
    from kprof.occupancy import limits_for
    from kprof.specialization import Recording, offline_resources

    recs = [(r, r.extra["recording"]) for r in results if r.extra.get("recording") is not None]
    merged = Recording(launches=[s for _, rec in recs for s in rec.launches],
                       calls=[c for _, rec in recs for c in rec.calls])
    if not merged.launches:
        return
    progress("resources", 0, 1, f"compiling {len(merged.launches)} Triton launches for sm_90 (ptxas, offline)")
    resolved = offline_resources(merged).launches
    rows, at = [], 0
    for r, rec in recs:
        specs = resolved[at:at + len(rec.launches)]
        at += len(rec.launches)
        r.extra["specializations"] = [s.to_dict() for s in specs]
        fields = specialization_fields(r.extra["specializations"], limits_for(9, 0), r.extra.get("params"))
        rows.append({"case": r.case.id, **fields})
    store.update_cases(run_id, pd.DataFrame(rows))
    progress("resources", 1, 1, "done")


def _store_launches(store: Any, run_id: str, launches: Any, repeats: int, dev: Any, results: list[CaseResult]) -> None:
    """A profiler pass's launch table into the store (each Triton kernel with the specialisation that ran),
    and the per-case metrics derived from it."""
    from kprof.metrics import attribute_launches, launch_metrics

    launches = attribute_launches(launches, {r.case.id: r.extra.get("specializations", ()) for r in results})
    store.add_launches(run_id, launches)
    store.update_cases(run_id, launch_metrics(launches, repeats, dev.limits(), {r.case.id: r.bytes for r in results}))


class ProfilerFailed(KprofError):
    """The external profiler failed or timed out; the measured cases are stored, the run is incomplete."""


ROUNDS = 4  # GPU timing rounds per case and revision when revisions are interleaved


def _measure_arms(
    families: list[Family], cases: list[Case], mode: str, settings: BenchSettings, store: Any, run_ids: list[str],
    ceiling: Any, progress: ProgressFn, limits: Any = None, first_index: int = 0,
) -> list[list[CaseResult]]:
    """Every arm (revision) of a case before the next case.

    With one arm this is the plain measurement. With several, each case is timed in ``ROUNDS`` short rounds
    per arm (each 1/ROUNDS of the repetition budget), the arm order alternating round by round (A B, B A,
    A B, B A): drift of the machine or a transient hits every revision alike instead of one side's whole
    window. (Measured on the H100: with one window per side, 3 of 153 unchanged cases differed by 3-4%.)
    """
    from kprof.harness import more_gpu_samples
    from kprof.metrics import case_row

    device = "cuda" if mode == "gpu" else "cpu"
    results: list[list[CaseResult]] = [[] for _ in families]
    n = len(families)
    rounds = ROUNDS if n > 1 and mode == "gpu" else 1
    round_settings = replace(settings, rep_ms=max(10, settings.rep_ms // rounds)) if rounds > 1 else settings
    for i, case in enumerate(cases, first_index):  # first_index: a fan-out worker's case keeps its run index
        progress("cases", i, len(cases), case.id)
        first: dict[int, CaseResult] = {}
        extra: dict[int, list[float]] = {j: [] for j in range(n)}
        for r in range(rounds):
            order = list(range(n)) if (i + r) % 2 == 0 else list(reversed(range(n)))
            for j in order:
                family = families[j]
                provider = family.get_provider(case.provider)
                if r == 0:
                    first[j] = run_case(family, provider, case, device=device, settings=round_settings,
                                        timing=(mode == "gpu"))
                elif first[j].status == "ok" and first[j].timed:
                    host = sorted(first[j].host_samples_us)[len(first[j].host_samples_us) // 2]
                    extra[j] += more_gpu_samples(family, provider, case, device=device, settings=round_settings,
                                                 host_us=host)
        for j in range(n):
            res = first[j]
            if extra[j]:
                res = replace(res, gpu_samples_ms=res.gpu_samples_ms + tuple(extra[j]))
            provider = families[j].get_provider(case.provider)
            row = case_row(res, provider.kind, ceiling.gbps if ceiling else None,
                           peak_tflops=ceiling.peak_tflops(case.dtype) if ceiling else None, limits=limits)
            store.add_case(run_ids[j], i, row, {**res.mode_samples_us, "gpu": res.gpu_samples_ms,
                                                "host": res.host_samples_us})
            results[j].append(res)
        if mode == "gpu" and i % 8 == 7:
            import torch

            torch.cuda.empty_cache()
    progress("cases", len(cases), len(cases), "done")
    return results


def _profile_pass(
    family: Family, results: list[CaseResult], settings: BenchSettings, store: Any, run_id: str,
    dev: Any, repeats: int, progress: ProgressFn,
) -> None:
    from kprof.profilers import torch_profiler

    ok = [r.case for r in results if r.status == "ok"]
    if not ok:
        return

    def calls() -> Iterator[tuple[str, Callable[[], Any]]]:
        # built lazily: only one case's inputs are alive at a time
        for i, case in enumerate(ok):
            progress("profile", i, len(ok), case.id)
            inputs = family.make_inputs(case.shape, case.dtype, "cuda", case_seed(settings.seed, case))
            fn = family.get_provider(case.provider).fn
            yield case.id, (lambda fn=fn, inputs=inputs: fn(**inputs))

    path = store.trace_dir(run_id) / "torch_trace.json.gz"
    torch_profiler.capture(calls(), path, repeats=repeats)
    progress("profile", len(ok), len(ok), "parsing trace")
    from kprof.profilers import parse_trace

    launches = parse_trace(path, "torch")
    for note in launches.attrs.get("warnings", []):  # e.g. no GPU activity: shown now and kept with the run
        progress("profiler", 0, 0, f"warning: {note}")
        store.set_fields(run_id, notes="\n".join(filter(None, [store.run(run_id).get("notes"), note])))
    _store_launches(store, run_id, launches, repeats, dev, results)
    store.set_fields(run_id, trace_path=str(path))


def _external_pass(
    family: Family, results: list[CaseResult], settings: BenchSettings, store: Any, run_id: str, dev: Any,
    repeats: int, choice: Any, opts: ProfileOptions, progress: ProgressFn,
) -> str | None:
    """Replay the correct cases under nsys/ncu/rocprof/Proton; store launches, metrics and tool records.

    Returns a description of the failure, or None. Launches of cases that finished before a failure are
    kept (the trace is parsed whatever the exit status).
    """
    from kprof import external

    ok = [r.case for r in results if r.status == "ok"]
    if not ok:
        return None
    cases = external.replay_cases(family.name, [
        (c.id, c.provider, c.shape, c.dtype, case_seed(settings.seed, c)) for c in ok
    ])
    progress("profile", 0, len(ok), f"{choice.name}: replaying {len(ok)} cases in a child process")
    workdir = store.trace_dir(run_id) / choice.name
    res = external.capture(choice, family.name, cases, workdir, repeats=repeats, timeout_s=opts.profiler_timeout_s,
                           family_source=getattr(family, "revision_source", None))
    failed = [p for p in res.progress if p.get("status") != "ok"]
    notes = [f"{p['case']} failed in the replay: {p.get('error', '?')}" for p in failed] + list(res.notes)
    for note in res.notes:  # parser warnings (no rows, sibling files joined): shown now and kept with the run
        progress("profiler", 0, 0, f"warning: {note}")
    for i, r in enumerate(res.runs):
        store.add_capture(run_id, choice.name, res.version, r, notes="\n".join(notes) if i == 0 else None)
    if not res.launches.empty:
        _store_launches(store, run_id, res.launches, repeats, dev, results)
    traces = [str(a) for a in res.artifacts]
    store.set_fields(run_id, trace_path=traces[-1] if traces else None)
    done = len(res.cases_done)
    progress("profile", done, len(ok), f"{choice.name}: {done}/{len(ok)} cases replayed, "
             f"{len(res.launches)} launches parsed")
    if res.error:
        kept = f"{len(res.launches)} launches parsed and kept" if not res.launches.empty else "no trace to parse"
        return f"{choice.name} failed ({done} of {len(ok)} cases replayed; {kept}): {res.error}"
    return None
