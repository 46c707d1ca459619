"""The ``kprof`` command line (typer + rich).

User mistakes (unknown family, bad shape, unknown run, unreadable trace) print one clear message and exit
with status 2; they never show a traceback. ``profile`` and ``sweep`` exit 1 when a case fails its
correctness check or raises (:mod:`kprof.gate`; ``--allow-failures`` exits 0).
"""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import pandas as pd
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kprof import cli_checks as checks
from kprof.errors import KprofError
from kprof.runtime import restores_interpreter_mode

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kprof.fanout import EarlyWorkers
    from kprof.grid import GridTargets
    from kprof.runner import ProfileOptions

app = typer.Typer(
    name="kprof",
    help="Correctness, timing and profiling of Triton kernel versions against PyTorch and peers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# Piped output (files, CI logs) gets wide tables instead of rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)
checks.hide_flag_types()
_in_run: list[bool] = [False]  # a profile/sweep run is being measured (what Ctrl-C interrupts)


@app.callback(invoke_without_command=True)
def _top(
    version: Annotated[
        bool, typer.Option("--version", help="Print kprof's version and where it is installed.")
    ] = False,
) -> None:
    """Correctness, timing and profiling of Triton kernel versions against PyTorch and peers."""
    if version:
        print(checks.version_text())
        raise typer.Exit(0)


StoreOpt = Annotated[
    Optional[str],
    typer.Option("--store", help="Run store (SQLite file or folder). Default ./kprof-runs/kprof.db or $KPROF_STORE."),
]

# fan-out (kprof.fanout): one worker process per GPU of this host, or Ray actors
WorkersOpt = Annotated[
    Optional[str],
    typer.Option(
        "--workers",
        help=(
            "Run the cases on N GPUs of this host (or 'all'), one worker process per GPU; without a GPU, N "
            "interpreter processes."
        ),
    ),
]
RayOpt = Annotated[
    Optional[str],
    typer.Option(
        "--ray",
        help=(
            "Run the cases on a Ray cluster: ADDRESS, 'auto' ($RAY_ADDRESS) or 'local' (a throwaway local instance). "
            "Needs kprof[ray]."
        ),
    ),
]
AllowFailuresOpt = Annotated[
    bool,
    typer.Option(
        "--allow-failures",
        help=(
            "Exit 0 even when a case fails its correctness check or raises (default: exit 1, one stderr line per "
            "failing case)."
        ),
    ),
]
CaseTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--case-timeout",
        help="Fan-out: seconds one case may take before its worker is stopped and the case retried elsewhere.",
    ),
]


def _split(values: Optional[list[str]], option: str = "") -> list[str]:
    return checks.split_list(values, option)  # commas inside NAME[K=V,...] stay in the name


@app.command()
def profile(
    ctx: typer.Context,
    family: Annotated[str, typer.Argument(help="Kernel family, e.g. rmsnorm (`kprof families` lists them).")],
    provider: Annotated[
        Optional[list[str]],
        typer.Option("--provider", "-p", help="Providers to run (repeat or comma-separate). Default: all."),
    ] = None,
    shape: Annotated[
        Optional[list[str]],
        typer.Option(
            "--shape", "-s", help="Shapes like 4096x4096 (repeat or comma-separate). Default: the family's sweep."
        ),
    ] = None,
    dtype: Annotated[
        Optional[list[str]], typer.Option("--dtype", "-d", help="fp32, bf16, fp16. Default: the family's sweep.")
    ] = None,
    grid: Annotated[
        Optional[str],
        typer.Option(
            "--grid",
            help=(
                "Race one part of the family's shape grid (`grid:` in its sweep.yaml) instead of its sweep; `kprof "
                "grid RUN...` tabulates it. With --rev, every revision races the part as this checkout defines it "
                "(the same shapes on each side). GPU only."
            ),
        ),
    ] = None,
    profiler: Annotated[
        str,
        typer.Option(
            help=(
                "auto, none, or a profiler backend: torch, nsys, ncu, rocprof, proton, or one added as a module "
                "under kprof.profilers. auto: the backend for this GPU's vendor when its tool is found, "
                "else torch.profiler."
            )
        ),
    ] = "auto",
    tool_path: Annotated[
        Optional[str],
        typer.Option(
            help=(
                "Path of the profiler binary (else $KPROF_NSYS / $KPROF_NCU / $KPROF_ROCPROFV3 / $KPROF_ROCPROF, "
                "PATH, install places)."
            )
        ),
    ] = None,
    profiler_timeout: Annotated[
        float, typer.Option(help="Seconds before the profiler's process group is killed.")
    ] = 1800.0,
    profile_repeats: Annotated[
        Optional[int], typer.Option(help="Launches per case under the profiler (default: the backend's, 5; ncu 3).")
    ] = None,
    rev: Annotated[
        Optional[list[str]],
        typer.Option(
            "--rev",
            help=(
                "Profile kernels/FAMILY as at this git revision (repeat: A B ... measured interleaved, one run each, "
                "then `kprof diff`)."
            ),
        ),
    ] = None,
    mode: Annotated[str, typer.Option(help="auto | gpu | interpreter (CPU, correctness only).")] = "auto",
    rep_ms: Annotated[int, typer.Option(help="do_bench repetition budget per case, ms.")] = 100,
    warmup_ms: Annotated[int, typer.Option(help="do_bench warm-up budget per case, ms.")] = 25,
    no_graph: Annotated[bool, typer.Option("--no-graph", help="Skip CUDA-graph replay timing.")] = False,
    timing_mode: Annotated[
        str,
        typer.Option(
            help=(
                "Timing mode that ranks, gives % of ceiling, speedups and diff samples: cold | warm | graph | host "
                "(all are measured and stored; see README)."
            )
        ),
    ] = "cold",
    placements: Annotated[
        int,
        typer.Option(
            help=(
                "Places in device memory each case of up to 64 MiB of tensors is timed at (cold and warm samples "
                "pooled; 1 times it where its inputs happen to lie)."
            )
        ),
    ] = 4,
    seed: Annotated[int, typer.Option(help="Input seed; 0 draws a fresh one (recorded with the run).")] = 0,
    report: Annotated[Optional[Path], typer.Option(help="Also write the markdown report to this file.")] = None,
    workers: WorkersOpt = None,
    ray: RayOpt = None,
    case_timeout: CaseTimeoutOpt = 1800.0,
    allow_failures: AllowFailuresOpt = False,
    store: StoreOpt = None,
) -> None:
    """Check, time and profile every provider of FAMILY over its sweep; store the run; print the report."""
    early = _workers_started_early(ctx, workers, ray, mode)  # first: before anything below imports torch
    from kprof.harness import BenchSettings
    from kprof.registry import get_family
    from kprof.runner import ProfileOptions, resolve_mode
    from kprof.timing import MODES

    if timing_mode not in MODES or (timing_mode == "graph" and no_graph):
        raise KprofError(
            f"--timing-mode {timing_mode!r} cannot rank this run (choose one of "
            f"{', '.join(MODES)}; graph needs the graph replay, so not with --no-graph)"
        )
    shapes, dtypes = checks.parse_shapes(shape), checks.parse_dtypes(dtype)
    checks.check_outputs(report=report)
    checks.check_store_for_writing(store)
    resolved = resolve_mode(mode)  # before the kernels are imported: the interpreter is chosen at decoration
    checks.check_positive(
        rep_ms=rep_ms, profile_repeats=profile_repeats, profiler_timeout=profiler_timeout, placements=placements
    )
    checks.check_non_negative(warmup_ms=warmup_ms)
    checks.check_shapes_fit(get_family(family), shapes)
    checks.check_revisions(get_family(family), rev)
    checks.check_profiler_here(profiler, resolved, _warn)
    checks.quiet_interpreter(resolved)
    if grid is not None:
        shapes, dtypes = checks.grid_part(get_family(family), grid, resolved, shapes, dtypes)
    opts = ProfileOptions(
        family=family,
        providers=tuple(_split(provider, "--provider")) or None,
        shapes=shapes,
        dtypes=dtypes,
        profiler=profiler,
        mode=resolved,
        tool_path=tool_path,
        profiler_timeout_s=profiler_timeout,
        profile_repeats=profile_repeats,
        revisions=tuple(rev or ()),
        settings=BenchSettings(
            warmup_ms=warmup_ms,
            rep_ms=rep_ms,
            graph=not no_graph,
            seed=seed,
            mode=timing_mode,
            placements=placements,
        ),
        store=store,
        command=" ".join(shlex.quote(a) for a in ["kprof", *sys.argv[1:]]),
        workers=workers,
        ray=ray,
        case_timeout_s=case_timeout,
        grid=grid,
    )
    _gate(_run_and_report(opts, report, store, early), store, allow_failures)


def _of_family(family: str, refs: Iterable[str]) -> list[str]:
    """The provider names among ``refs`` (``"family/provider"``, as :mod:`kprof.kernels.ops_providers` writes them)
    that belong to ``family``."""
    return [ref.split("/", 1)[1] for ref in refs if ref.split("/", 1)[0] == family]


def _ops_provider(family: str) -> Optional[str]:
    """The provider ``kprof.kernels.ops`` runs for ``family`` (its ``BEST`` table), or None."""
    from kprof.kernels.ops_providers import BEST

    return next(iter(_of_family(family, BEST.values())), None)


def _grid_targets(family: str) -> Optional[GridTargets]:
    """The family's grid targets, read from its YAML file without importing its code (None for a family this
    checkout does not have)."""
    from kprof.kernels import sweep_file
    from kprof.registry import grid_targets_in

    path = sweep_file(family)
    return grid_targets_in(path, family) if path is not None else None


def _ops_prepared(family: str) -> list[str]:
    """The providers the ops API's prepared objects run for ``family`` (its ``PREPARED`` table)."""
    from kprof.kernels.ops_providers import PREPARED

    return _of_family(family, (ref for refs in PREPARED.values() for ref in refs))


def _ops_prepared_op(family: str) -> Optional[str]:
    """The provider that runs the ops API's prepared object for ``family`` (its ``PREPARED_OP`` table), or None."""
    from kprof.kernels.ops_providers import PREPARED_OP

    return next(iter(_of_family(family, PREPARED_OP.values())), None)


def _warn(msg: str) -> None:
    err_console.print(f"[yellow]warning:[/yellow] {escape(msg)}")


def _workers_started_early(
    ctx: typer.Context, workers: Optional[str], ray: Optional[str], mode: str
) -> Optional[EarlyWorkers]:
    """A local GPU fan-out's workers, started now so their start overlaps the command's checks
    (:class:`kprof.fanout.EarlyWorkers`); they are stopped when the command ends, however it ends."""
    from kprof.fanout import workers_started_early

    return ctx.with_resource(workers_started_early(workers, ray, mode))


def _run_and_report(
    opts: ProfileOptions, report: Optional[Path], store: Optional[str], early: Optional[EarlyWorkers] = None
) -> list[str]:
    """Run ``opts`` with a progress bar, print each run's report; exit 1 when a named profiler failed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kprof.runner import ProfilerFailed, profile_runs
    from kprof.safe_text import no_control
    from kprof.store import RunStore

    # SIGTERM (timeouts, job schedulers) ends the run like Ctrl-C: what finished is kept, marked incomplete
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with Progress(
        TextColumn("[bold]{task.fields[phase]:<8}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err_console,
        transient=False,
    ) as bar:
        tasks: dict[str, int] = {}
        lines = checks.ProgressLines(
            lambda m: err_console.print(m, markup=False, highlight=False),
            piped=not err_console.is_terminal,
            interpreter=opts.mode == "interpreter",
            prior_s_per_case=checks.prior_seconds_per_case(store, opts.family) if opts.mode == "interpreter" else None,
        )

        def on_progress(phase: str, done: int, total: int, label: str) -> None:
            if phase == "profiler":
                # may hold a rev name or a kernel name: text, not markup, and no terminal escapes
                err_console.print(f"profiler: {no_control(label)}", markup=False, highlight=False)
                return
            lines(phase, done, total, label)
            if phase not in tasks:
                tasks[phase] = bar.add_task(label, total=total, phase=phase)
            bar.update(tasks[phase], completed=done, total=total, description=label[:70])

        try:
            _in_run[0] = True
            run_ids = profile_runs(opts, on_progress, early)
            _in_run[0] = False
        except ProfilerFailed as exc:
            bar.stop()
            err_console.print(f"[bold red]kprof:[/bold red] {escape(no_control(str(exc)))}")
            err_console.print("the measured cases are stored; the run is marked incomplete (kprof show latest)")
            sys.exit(1)
    st = RunStore(store)
    for run_id in run_ids:
        run = st.run(run_id)
        md = run["report_md"] or ""
        print(no_control(md))  # kernel names in it come from traces: no terminal escapes
        if report:
            target = report if len(run_ids) == 1 else report.with_name(f"{report.stem}-{run_id}{report.suffix}")
            target.write_text(md)
        err_console.print(f"[green]run {run_id} stored in {st.path}[/green]  (kprof show {run_id})")
    if len(run_ids) > 1:
        err_console.print(f"compare them: kprof diff {run_ids[0]} {run_ids[-1]}")
    if st.run(run_ids[0])["mode"] == "interpreter":
        err_console.print("[yellow]CPU interpreter run: correctness only, no GPU timings.[/yellow]")
    return run_ids


@app.command()
@restores_interpreter_mode
def sweep(
    ctx: typer.Context,
    family: Annotated[str, typer.Argument(help="Kernel family, e.g. rmsnorm.")],
    version: Annotated[
        str,
        typer.Option(
            "--version", "-v", help="The Triton version to sweep (`kprof families --params` lists the tunable ones)."
        ),
    ],
    param: Annotated[
        list[str],
        typer.Option(
            "--param",
            "-P",
            help=(
                "NAME=V1,V2,... (or LOW..HIGH powers of two); repeat per parameter. Constexprs such as BLOCK_N, and "
                "num_warps / num_stages."
            ),
        ),
    ],
    shape: Annotated[
        Optional[list[str]],
        typer.Option(
            "--shapes", "--shape", "-s", help="Shapes (repeat or comma-separate). Default: the family's sweep."
        ),
    ] = None,
    dtype: Annotated[
        Optional[list[str]], typer.Option("--dtypes", "--dtype", "-d", help="Dtypes. Default: the family's sweep.")
    ] = None,
    profiler: Annotated[
        str,
        typer.Option(
            help=(
                "none (default: resources come from the launches) | ncu (adds achieved occupancy, DRAM bytes) | "
                "torch | nsys | auto."
            )
        ),
    ] = "none",
    no_default: Annotated[
        bool, typer.Option("--no-default", help="Do not also run the version with its own choice of parameters.")
    ] = False,
    mode: Annotated[
        str, typer.Option(help="auto | gpu | interpreter (CPU: correctness and offline sm_90 compile, no timings).")
    ] = "auto",
    rep_ms: Annotated[int, typer.Option(help="do_bench repetition budget per configuration, ms.")] = 100,
    no_graph: Annotated[
        bool, typer.Option("--no-graph", help="Skip CUDA-graph replay timing (faster sweeps).")
    ] = False,
    seed: Annotated[int, typer.Option(help="Input seed; 0 draws a fresh one.")] = 0,
    tool_path: Annotated[Optional[str], typer.Option(help="Path of the profiler binary.")] = None,
    report: Annotated[Optional[Path], typer.Option(help="Also write the run's report to this file.")] = None,
    guide: Annotated[
        Optional[Path], typer.Option(help="Also write the block-size guide (markdown) to this file.")
    ] = None,
    workers: WorkersOpt = None,
    ray: RayOpt = None,
    case_timeout: CaseTimeoutOpt = 1800.0,
    allow_failures: AllowFailuresOpt = False,
    store: StoreOpt = None,
) -> None:
    """Run one Triton version over the cartesian product of its meta-parameters (each configuration checked,
    timed and attributed: registers, spills, shared memory, occupancy); store the run; print the guide."""
    early = _workers_started_early(ctx, workers, ray, mode)  # first: before anything below imports torch
    from kprof.harness import BenchSettings
    from kprof.registry import get_family
    from kprof.runner import ProfileOptions, resolve_mode
    from kprof.sweep import parse_params, sweep_providers

    params = parse_params(param)
    checks.check_params(params)
    checks.check_positive(rep_ms=rep_ms)
    shapes, dtypes = checks.parse_shapes(shape), checks.parse_dtypes(dtype)
    checks.check_outputs(report=report, guide=guide)
    checks.check_store_for_writing(store)
    resolved = resolve_mode(mode)  # before the kernels are imported: the interpreter is chosen at decoration
    fam = get_family(family)
    checks.check_shapes_fit(fam, shapes)
    checks.check_profiler_here(profiler, resolved, _warn)
    checks.quiet_interpreter(resolved)
    providers = sweep_providers(fam, version, params, include_default=not no_default)
    opts = ProfileOptions(
        family=family,
        providers=tuple(providers),
        shapes=shapes,
        dtypes=dtypes,
        profiler=profiler,
        mode=resolved,
        tool_path=tool_path,
        settings=BenchSettings(rep_ms=rep_ms, graph=not no_graph, seed=seed),
        store=store,
        command=" ".join(shlex.quote(a) for a in ["kprof", *sys.argv[1:]]),
        offline_resources=True,
        sweep={"version": version, "params": params},
        workers=workers,
        ray=ray,
        case_timeout_s=case_timeout,
    )
    err_console.print(
        f"sweeping {family}/{version}: {len(providers) - (0 if no_default else 1)} configurations"
        + ("" if no_default else " + the version's own choice")
    )
    run_ids = _run_and_report(opts, report, store, early)
    _print_guide(run_ids[0], store, guide)
    _gate(run_ids, store, allow_failures)


def _gate(run_ids: list[str], store: Optional[str], allow_failures: bool) -> None:
    """Exit 1 when a case of the stored runs failed its correctness check or raised (:mod:`kprof.gate`)."""
    from kprof import gate
    from kprof.store import RunStore

    failures = gate.check(RunStore(store), run_ids)
    for f in failures:  # plain print: one line per case, never wrapped by the console's width
        print(f.line(), file=sys.stderr)
    if failures:
        print(gate.summary(failures, allow_failures), file=sys.stderr)
        if not allow_failures:
            sys.exit(1)


def _print_guide(run_ref: str, store: Optional[str], path: Optional[Path]) -> None:
    from kprof.guide import configs_table, guide_table, render_markdown
    from kprof.store import RunPlan, RunStore

    st = RunStore(store, create=False)
    run = st.run(run_ref)
    checks.require_sweep(run)
    metrics = st.metrics(run["id"])
    md = render_markdown(guide_table(metrics, RunPlan.of(run)), run, configs_table(metrics))
    print(md)
    if path:
        path.write_text(md)
        err_console.print(f"guide written to {path}")


@app.command()
def guide(
    run: Annotated[str, typer.Argument(help="A sweep run id, or 'latest'.")] = "latest",
    markdown: Annotated[Optional[Path], typer.Option("--markdown", help="Also write the guide to this file.")] = None,
    store: StoreOpt = None,
) -> None:
    """Turn a sweep into a block-size selection table: per shape, the best config, how much worse the
    runner-up and the version's default are, and the winner's registers, spills and occupancy."""
    checks.check_outputs(markdown=markdown)
    _print_guide(run, store, markdown)


def _refuse_other_code_at_a_point(recs: list[dict], metrics: pd.DataFrame) -> None:
    """``kprof grid`` pools the runs that measure a point as repeats; runs of different kernel code (their
    recorded source hashes differ) are revisions, for ``kprof diff``."""
    from kprof.grid import repeats_of_other_code
    from kprof.variance import source_identity

    mixed = repeats_of_other_code(metrics, {r["id"]: source_identity(r) for r in recs})
    if mixed:
        shape, dtype, ids = mixed[0]
        raise KprofError(
            f"runs {', '.join(ids)} all race {shape} {dtype} ({len(mixed)} point(s) in all) but ran different kernel "
            "code (their recorded source hashes differ): a grid pools repeats of one revision; give the runs of "
            f"one, or compare the revisions with `kprof diff {ids[0]} {ids[-1]}`"
        )


@app.command()
def grid(
    runs_: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN...",
            help="The runs of one family's grid parts (`kprof profile FAMILY --grid PART`), on one device; a part "
            "raced again adds its runs' disagreement to each point's spread.",
        ),
    ],
    markdown: Annotated[Optional[Path], typer.Option("--markdown", help="Also write the table to this file.")] = None,
    ncu: Annotated[
        Optional[list[str]],
        typer.Option(
            "--ncu",
            metavar="RUN",
            help="A `--profiler ncu` run of some of the points (repeatable): its DRAM bytes, occupancy and limiter, "
            "and each kernel's duration where a call launches several, are quoted where a point loses or misses "
            "its target (a run of other kernel code than the timed runs is named as such).",
        ),
    ] = None,
    store: StoreOpt = None,
) -> None:
    """Per point of a family's shape grid: the fastest kprof version against the fastest peer, with a
    verdict (win / tie / loss, uncertain within the cases' spread), % of the copy ceiling, the ratio to the
    roofline yardstick, the family's targets (``grid_targets:`` in its sweep.yaml) met or not, and what
    Nsight Compute measured where a point falls short."""
    import pandas as pd

    from kprof import variance  # imports scipy: the run-to-run floor of points under 10 us
    from kprof.grid import OTHER_CODE, grid_table, kernel_times
    from kprof.grid_render import render
    from kprof.safe_text import no_control
    from kprof.store import RunPlan, RunStore

    checks.check_outputs(markdown=markdown)
    st = RunStore(store, create=False)
    recs = [st.run(r) for r in runs_]
    ncu_recs = [st.run(r) for r in ncu or []]
    families = {r["family"] for r in recs + ncu_recs}
    devices = {r.get("device_name") for r in recs + ncu_recs}
    if len(families) > 1 or len(devices) > 1:
        raise KprofError(
            f"kprof grid compares within one family on one device; these runs are of "
            f"{', '.join(sorted(map(str, families)))} on {', '.join(sorted(map(str, devices)))} "
            "(give the runs of one family's grid parts from one device, and --ncu runs of the same)"
        )
    not_ncu = [r["id"] for r in ncu_recs if r.get("profiler") != "ncu"]
    if not_ncu:
        raise KprofError(f"--ncu {', '.join(not_ncu)}: not profiled with ncu (kprof profile ... --profiler ncu)")
    # each run named: a point raced in several runs counts the spread of its ratio between them
    metrics = pd.concat([st.metrics(r["id"]).assign(run=r["id"]) for r in recs], ignore_index=True)
    if metrics["gpu_time_us"].notna().sum() == 0:
        raise KprofError(
            f"run(s) {', '.join(r['id'] for r in recs)} hold no GPU times (a CPU interpreter run checks "
            "correctness only): run `kprof profile FAMILY --grid PART` on a GPU"
        )
    if len(recs) > 1:
        _refuse_other_code_at_a_point(recs, metrics)
    family = recs[0]["family"]
    dispatch, prepared, prepared_op = _ops_provider(family), _ops_prepared(family), _ops_prepared_op(family)
    codes = {r["id"]: variance.code_id(r) for r in recs}
    ncu_codes = {r["id"]: variance.code_id(r) for r in ncu_recs}
    # an ncu run of other kernel code than every timed run measured that code: its readings are marked as such
    told = all(codes.values())  # every timed run recorded its sources
    ncu_other = [r for r, c in ncu_codes.items() if told and c and c not in codes.values()]
    ncu_untold = [r for r, c in ncu_codes.items() if not (told and c)]
    evidence = (
        pd.concat(
            [st.metrics(r["id"]).assign(**{OTHER_CODE: r["id"] if r["id"] in ncu_other else ""}) for r in ncu_recs],
            ignore_index=True,
        )
        if ncu_recs
        else None
    )
    kernels = pd.concat([kernel_times(st.launches(r["id"])) for r in ncu_recs], ignore_index=True) if ncu_recs else None
    floors = variance.floor_lookup(st, recs[0], recs[0])
    table = grid_table(
        metrics,
        dispatch,
        prepared,
        targets=_grid_targets(family),
        prepared_op=prepared_op,
        evidence=evidence,
        sigma_run=lambda key, us: floors(key, us).sigma_run,
        kernels=kernels,
        plans={r["id"]: RunPlan.of(r) for r in recs},
    )
    text = render(
        table,
        [r["id"] for r in recs],
        family,
        dispatch,
        prepared,
        list(codes.values()),
        ncu_other,
        ncu_untold,
        prepared_op,
        device=next(iter(devices)),  # one device at most (refused above); None where the runs recorded none
    )
    if markdown:
        markdown.write_text(text)
        err_console.print(f"grid table -> {markdown}")
    print(no_control(text))


@app.command()
def runs(store: StoreOpt = None) -> None:
    """List the runs in the store, newest first."""
    from kprof.envinfo import short_commit
    from kprof.store import RunStore

    if not checks.store_exists(store):  # a read never creates the store or its folder
        console.print(
            f"no runs yet (no store at {escape(str(checks.default_store(store)))}): `kprof profile rmsnorm` makes one"
        )
        return
    df = RunStore(store, create=False).runs()
    if df.empty:
        console.print("no runs yet: `kprof profile rmsnorm` makes one")
        return
    t = Table("id", "created", "family", "mode", "status", "device", "profiler", "git", "cases", "failed")
    for r in df.itertuples():
        git = short_commit(r.git_commit) + ("*" if r.git_dirty else "")
        t.add_row(
            r.id,
            r.created_at,
            r.family,
            r.mode,
            r.status,
            r.device_name or "?",
            r.profiler or "",
            git,
            str(r.cases),
            str(r.failures),
        )
    console.print(t)


@app.command()
def show(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix, or 'latest'.")] = "latest",
    csv: Annotated[Optional[Path], typer.Option(help="Write the run's metrics table to this CSV file.")] = None,
    samples: Annotated[Optional[Path], typer.Option(help="Write the raw timing samples to this CSV file.")] = None,
    launches: Annotated[Optional[Path], typer.Option(help="Write the run's launch table to this CSV file.")] = None,
    captures: Annotated[
        bool,
        typer.Option(
            "--captures", help="Print every profiler invocation of the run (command, exit status, output tail)."
        ),
    ] = False,
    store: StoreOpt = None,
) -> None:
    """Print a run's report, or export its metrics, samples and launch table."""
    from kprof.safe_text import csv_safe_frame, no_control
    from kprof.store import RunStore

    checks.check_outputs(csv=csv, samples=samples, launches=launches)
    st = RunStore(store, create=False)
    rec = st.run(run)
    if csv:
        csv_safe_frame(st.metrics(rec["id"])).to_csv(csv, index=False)
        err_console.print(f"metrics of {rec['id']} -> {csv}")
    if samples:
        st.samples(rec["id"]).to_csv(samples, index=False)
        err_console.print(f"samples of {rec['id']} -> {samples}")
    if launches:
        csv_safe_frame(st.launches(rec["id"])).to_csv(launches, index=False)
        err_console.print(f"launch table of {rec['id']} -> {launches}")
    if captures:
        caps = st.captures(rec["id"])
        if caps.empty:
            console.print(f"run {rec['id']} ran no external profiler (profiler: {rec.get('profiler')})")
        for c in caps.itertuples():
            status = "timed out" if c.timed_out else f"exit {c.returncode}"
            console.print(f"[bold]{c.seq}. {c.profiler}[/bold] ({c.tool_version}) {status}, {c.seconds:.1f} s")
            console.print(f"   {c.command}", markup=False, highlight=False)
            if isinstance(c.stderr_tail, str) and c.stderr_tail and (c.returncode != 0 or c.timed_out):
                console.print(c.stderr_tail[-2000:], markup=False, highlight=False)
            if isinstance(c.notes, str) and c.notes:
                console.print(no_control(c.notes), markup=False, highlight=False)
    if not (csv or samples or launches or captures):
        print(no_control(checks.report_of(st, rec)))


@app.command()
def parse(
    trace: Annotated[
        Path,
        typer.Argument(
            help=(
                "A trace, gzipped or not (format recognised by content): nsys .sqlite or `nsys stats` output, ncu "
                "CSV (raw or details page), rocprof CSV/JSON, Proton .hatchet/.chrome_trace, torch.profiler .json."
            )
        ),
    ],
    csv: Annotated[Optional[Path], typer.Option(help="Write the launch table here.")] = None,
    fmt: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            help="A profiler backend's name (nsys, ncu, rocprof, proton, torch, ...); recognised when omitted.",
        ),
    ] = None,
    arch: Annotated[
        Optional[str], typer.Option(help="AMD architecture (gfx90a, gfx942) for rocprof occupancy.")
    ] = None,
    perfetto: Annotated[Optional[Path], typer.Option(help="Also write a Perfetto/Chrome trace of the table.")] = None,
) -> None:
    """Turn a profiler trace into the canonical launch table (per-kernel summary, or --csv for every row)."""
    from kprof import launch_table
    from kprof.profilers import parse_trace
    from kprof.safe_text import csv_safe_frame, for_terminal

    checks.check_outputs(csv=csv, perfetto=perfetto)
    df = parse_trace(trace, fmt, arch=arch)
    for note in df.attrs.get("warnings", []):
        err_console.print(f"[yellow]kprof: warning:[/yellow] {for_terminal(note)}")
    if csv:
        csv_safe_frame(df).to_csv(csv, index=False)  # names are data: no cell a spreadsheet runs as a formula
        err_console.print(f"{len(df)} rows -> {for_terminal(csv)}")
    if perfetto:
        from kprof.export import write_perfetto

        info = write_perfetto(df, perfetto, title=str(trace))
        err_console.print(f"{info['events']} trace events -> {for_terminal(perfetto)} (open in ui.perfetto.dev)")
    if not csv:
        console.print(kernel_summary_table(df))
        what = "summary rows" if df.attrs.get("summary") else "rows"
        console.print(
            f"{int(launch_table.launches(df).sum())} launches in {len(df)} {what} from "
            f"{', '.join(sorted(set(df['source'].dropna()))) or 'no profiler'}; --csv FILE writes them all"
        )


def kernel_summary_table(df: pd.DataFrame, limit: int = 30) -> Table:
    from kprof.analysis import kernel_summary
    from kprof.safe_text import for_terminal

    summary = kernel_summary(df).head(limit)
    scoped = summary["scope"].notna().any()
    t = Table("kernel", "kind", *(["scope"] if scoped else []), "launches", "total µs", "mean µs", "median µs", "cases")
    for r in summary.itertuples():
        scope = [for_terminal(str(r.scope)[-60:]) if pd.notna(r.scope) else ""] if scoped else []
        t.add_row(
            for_terminal(str(r.kernel)[:80]),
            str(r.kind),
            *scope,
            str(r.launches),
            f"{r.total_us:.1f}",
            f"{r.mean_us:.2f}",
            "—" if pd.isna(r.median_us) else f"{r.median_us:.2f}",
            str(r.cases),
        )
    return t


@app.command()
def export(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix, or 'latest'.")] = "latest",
    perfetto: Annotated[
        Path, typer.Option(help="Write a Chrome/Perfetto trace (.json or .json.gz) of the run's launch table.")
    ] = Path("kprof-trace.json.gz"),
    store: StoreOpt = None,
) -> None:
    """Export a run's launch table as a Perfetto trace, whichever profiler captured it."""
    from kprof.export import write_perfetto
    from kprof.store import RunStore

    checks.check_outputs(perfetto=perfetto)
    st = RunStore(store, create=False)
    rec = st.run(run)
    launches = st.launches(rec["id"])
    if launches.empty:
        can = checks.runnable_profilers()
        how = (
            f"profile with --profiler {'|'.join(can)} to get one"
            if can
            else "launch tables come from GPU runs: profile on a machine with a GPU (--profiler torch or nsys)"
        )
        raise KprofError(f"run {rec['id']} has no launch table (profiler: {rec.get('profiler')}); {how}")
    info = write_perfetto(launches, perfetto, title=f"kprof {rec['family']} {rec['id']} ({rec.get('profiler')})")
    err_console.print(
        f"{info['events']} trace events -> {perfetto}; {info['untimed_rows']} rows without "
        "timestamps left out (ncu/summaries). Open in https://ui.perfetto.dev"
    )


@app.command()
def diff(
    a: Annotated[str, typer.Argument(help="Run before (id, prefix, 'latest') or a trace file.")],
    b: Annotated[str, typer.Argument(help="Run after, or a trace file.")],
    threshold: Annotated[float, typer.Option(help="Smallest relative change called FASTER/SLOWER (0.03 = 3%).")] = 0.03,
    alpha: Annotated[float, typer.Option(help="Significance level of the test on the change.")] = 0.01,
    markdown: Annotated[Optional[Path], typer.Option(help="Write the diff as markdown (for a pull request).")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the diff as JSON.")] = None,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when any case is SLOWER, a case correct in A is not correct in B or was skipped there, a "
            "case A never had wrong fails in B, or run B is unfinished and never measured cases of A.",
        ),
    ] = False,
    fmt: Annotated[
        Optional[str], typer.Option("--format", help="Profiler of both trace files; sniffed when omitted.")
    ] = None,
    samples: Annotated[
        str,
        typer.Option(
            "--samples",
            help="Which stored samples of each case to compare (gpu: per-call device times, alternated between "
            "--rev arms; host, graph, ...: judged by their own `kprof noise --samples` floor, else UNCERTAIN).",
        ),
    ] = "gpu",
    store: StoreOpt = None,
) -> None:
    """FASTER / SLOWER / SAME / UNCERTAIN per case between two runs (or two traces), beyond the noise,
    and correctness verdicts (BROKEN / FIXED / ...) between two runs."""
    from kprof import diff as d
    from kprof import verdict_cli as v
    from kprof.safe_text import for_terminal

    if not 0 < threshold < 1 or not 0 < alpha < 1:
        raise KprofError("--threshold and --alpha must be between 0 and 1 (e.g. 0.03 and 0.01)")
    checks.check_outputs(markdown=markdown, json=json_out)
    rule = d.DiffRule(threshold=threshold, alpha=alpha)
    broken: list[str] = []
    new_failures: list[str] = []
    unchecked: list[str] = []
    unmeasured = ""
    if Path(a).is_file() and Path(b).is_file():
        counts = v.diff_files(a, b, fmt, rule, markdown, json_out, console)
    else:
        from kprof.store import RunStore

        res = v.diff_stored(
            RunStore(store, create=False), a, b, rule, samples, markdown, json_out, console, err_console
        )
        counts, broken, unmeasured, new_failures = res.counts, res.broken, res.unmeasured, res.new_failures
        unchecked = res.unchecked_in_b
    console.print(", ".join(f"{counts.get(x, 0)} {x.lower()}" for x in d.VERDICTS) + f"  ({rule.describe()})")
    message = v.fail_message(counts, broken, unmeasured, new_failures, unchecked)
    if fail_on_regression and message:
        err_console.print(f"[bold red]{for_terminal(message)}[/bold red]")
        raise typer.Exit(1)


@app.command()
def noise(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Runs (ids, prefixes) or a family name (all its complete GPU runs) measured repeatedly on one device."
        ),
    ],
    samples: Annotated[
        str,
        typer.Option(
            "--samples",
            help="Which stored samples to calibrate on (gpu: per-call device times; a floor holds for its kind alone).",
        ),
    ] = "gpu",
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Also write the calibration as JSON.")] = None,
    store: StoreOpt = None,
) -> None:
    """Learn this device's run-to-run noise floor from repeated runs of identical code; `kprof diff` of
    separate runs then uses it instead of the conservative default."""
    from kprof import verdict_cli as v
    from kprof.store import RunStore

    v.noise(RunStore(store), runs, samples, json_out, console)


@app.command()
def dashboard(
    traces: Annotated[
        Optional[list[Path]],
        typer.Argument(help="Trace files to open on the Trace page (any format `kprof parse` reads)."),
    ] = None,
    store: StoreOpt = None,
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8501,
    host: Annotated[str, typer.Option(help="Address to bind; 0.0.0.0 exposes it to the network.")] = "127.0.0.1",
    headless: Annotated[bool, typer.Option(help="Do not open a browser.")] = True,
) -> None:
    """Start the Streamlit dashboard on this store (the bundled demo runs when it is empty)."""
    import importlib.util
    import os

    checks.check_port(port)
    if importlib.util.find_spec("streamlit") is None or importlib.util.find_spec("plotly") is None:
        raise KprofError(
            "the dashboard needs streamlit and plotly: pip install 'kprof[dashboard]' (or pip install streamlit plotly)"
        )
    checks.check_port(port, host)  # the address is free: before Streamlit starts, not in its traceback
    from kprof.dashboards import __file__ as pkg

    app_path = Path(pkg).parent / "app.py"
    env = dict(os.environ)
    if store:
        env["KPROF_STORE"] = str(Path(store).expanduser().resolve())
    if traces:
        missing = [str(t) for t in traces if not t.exists()]
        if missing:
            raise KprofError(f"no trace file {', '.join(missing)} (give the path of a file `kprof parse` reads)")
        env["KPROF_TRACES"] = os.pathsep.join(str(t.expanduser().resolve()) for t in traces)
    # kprof.dashboards.serve is `streamlit` with the pages' imports done before the first visitor arrives
    argv = [
        sys.executable,
        "-m",
        "kprof.dashboards.serve",
        "run",
        str(app_path),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        str(headless).lower(),
        "--browser.gatherUsageStats",
        "false",
        # No source watcher: kprof's pages are not edited while served, and after every script run the watcher
        # resolved the path of each imported module (torch's and Triton's thousands): 0.3 s of each page's
        # first visit on the 2-core dev box, with the GIL contended by the server's event loop.
        "--server.fileWatcherType",
        "none",
    ]
    console.print(
        f"kprof dashboard: http://{host}:{port}  (store: {env.get('KPROF_STORE') or 'default'}; Ctrl-C stops)"
    )
    from kprof.dashboards.process import run_forwarding

    rc = run_forwarding(argv, env)  # signals to `kprof dashboard` reach the server; it never outlives us
    if rc:
        raise KprofError(f"streamlit exited with status {rc} (command: {shlex.join(argv)})")


@app.command()
def families(
    params: Annotated[
        bool,
        typer.Option("--params", help="Only the versions `kprof sweep` can tune, with what each meta-parameter means."),
    ] = False,
) -> None:
    """List kernel families and their providers (and the meta-parameters a sweep may set)."""
    from kprof.kernels import discover

    if params:
        t = Table("family", "version", "meta-parameter", "meaning")
        for fam in discover().values():
            for p in fam.providers.values():
                for name, meaning in p.params:
                    t.add_row(fam.name, p.name, name, meaning)
        console.print(t)
        return
    t = Table("family", "provider", "kind", "description", "sweepable", "available")
    for fam in discover().values():
        for p in fam.providers.values():
            why = checks.gpu_only_reason(p)
            t.add_row(
                fam.name,
                p.name,
                p.kind,
                p.description,
                ", ".join(p.param_names),
                "yes" if why is None else f"no: {why}",
            )
    console.print(t)


def main() -> None:
    checks.run_cli(app, _error_line, lambda: _in_run[0])


def _error_line(msg: str) -> None:
    # the message may quote a file's content (a kernel name): control characters shown as escapes, and
    # escaped for rich markup, so "pip install 'kprof[dashboard]'" keeps its brackets
    from kprof.safe_text import plain_text

    head, _, rest = plain_text(msg).partition(" ")
    err_console.print(f"[bold red]{escape(head)}[/bold red] {escape(rest)}", soft_wrap=True)


if __name__ == "__main__":
    main()
