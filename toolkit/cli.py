"""The ``kprof`` command line (typer + rich).

User mistakes (unknown family, bad shape, unknown run, unreadable trace) print one clear message and exit
with status 2; they never show a traceback.
"""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from kprof.errors import KprofError

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

StoreOpt = Annotated[
    Optional[str],
    typer.Option("--store", help="Run store (SQLite file or folder). Default ./kprof-runs/kprof.db or $KPROF_STORE."),
]


def _split(values: Optional[list[str]]) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [p.strip() for p in v.split(",") if p.strip()]
    return out


@app.command()
def profile(
    family: Annotated[str, typer.Argument(help="Kernel family, e.g. rmsnorm (`kprof families` lists them).")],
    provider: Annotated[Optional[list[str]], typer.Option("--provider", "-p", help="Providers to run (repeat or comma-separate). Default: all.")] = None,
    shape: Annotated[Optional[list[str]], typer.Option("--shape", "-s", help="Shapes like 4096x4096 (repeat or comma-separate). Default: the family's sweep.")] = None,
    dtype: Annotated[Optional[list[str]], typer.Option("--dtype", "-d", help="fp32, bf16, fp16. Default: the family's sweep.")] = None,
    profiler: Annotated[str, typer.Option(help="auto | torch | none. auto = torch.profiler on a GPU.")] = "auto",
    mode: Annotated[str, typer.Option(help="auto | gpu | interpreter (CPU, correctness only).")] = "auto",
    rep_ms: Annotated[int, typer.Option(help="do_bench repetition budget per case, ms.")] = 100,
    warmup_ms: Annotated[int, typer.Option(help="do_bench warm-up budget per case, ms.")] = 25,
    no_graph: Annotated[bool, typer.Option("--no-graph", help="Skip CUDA-graph replay timing.")] = False,
    seed: Annotated[int, typer.Option(help="Input seed; 0 draws a fresh one (recorded with the run).")] = 0,
    report: Annotated[Optional[Path], typer.Option(help="Also write the markdown report to this file.")] = None,
    store: StoreOpt = None,
) -> None:
    """Check, time and profile every provider of FAMILY over its sweep; store the run; print the report."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kprof.harness import BenchSettings
    from kprof.registry import parse_shape
    from kprof.dtypes import canonical_dtype
    from kprof.runner import ProfileOptions, profile as run_profile
    from kprof.store import RunStore

    shapes = tuple(parse_shape(s) for s in _split(shape)) or None
    dtypes = tuple(canonical_dtype(d) for d in _split(dtype)) or None
    opts = ProfileOptions(
        family=family, providers=tuple(_split(provider)) or None, shapes=shapes, dtypes=dtypes,
        profiler=profiler, mode=mode,
        settings=BenchSettings(warmup_ms=warmup_ms, rep_ms=rep_ms, graph=not no_graph, seed=seed),
        store=store, command=" ".join(shlex.quote(a) for a in ["kprof", *sys.argv[1:]]),
    )
    # SIGTERM (timeouts, job schedulers) ends the run like Ctrl-C: what finished is kept, marked incomplete
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with Progress(
        TextColumn("[bold]{task.fields[phase]:<8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), console=err_console, transient=False,
    ) as bar:
        tasks: dict[str, int] = {}

        def on_progress(phase: str, done: int, total: int, label: str) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(label, total=total, phase=phase)
            bar.update(tasks[phase], completed=done, total=total, description=label[:70])

        run_id = run_profile(opts, on_progress)
    st = RunStore(store)
    run = st.run(run_id)
    md = run["report_md"] or ""
    print(md)
    if report:
        report.write_text(md)
    err_console.print(f"[green]run {run_id} stored in {st.path}[/green]  (kprof show {run_id})")
    if run["mode"] == "interpreter":
        err_console.print("[yellow]CPU interpreter run: correctness only, no GPU timings.[/yellow]")


@app.command()
def runs(store: StoreOpt = None) -> None:
    """List the runs in the store, newest first."""
    from kprof.store import RunStore

    df = RunStore(store).runs()
    if df.empty:
        console.print("no runs yet: `kprof profile rmsnorm` makes one")
        return
    t = Table("id", "created", "family", "mode", "status", "device", "profiler", "git", "cases", "failed")
    for r in df.itertuples():
        git = (r.git_commit or "?")[:10] + ("*" if r.git_dirty else "")
        t.add_row(r.id, r.created_at, r.family, r.mode, r.status, r.device_name or "?", r.profiler or "",
                  git, str(r.cases), str(r.failures))
    console.print(t)


@app.command()
def show(
    run: Annotated[str, typer.Argument(help="Run id, a unique prefix, or 'latest'.")] = "latest",
    csv: Annotated[Optional[Path], typer.Option(help="Write the run's metrics table to this CSV file.")] = None,
    samples: Annotated[Optional[Path], typer.Option(help="Write the raw timing samples to this CSV file.")] = None,
    launches: Annotated[Optional[Path], typer.Option(help="Write the run's launch table to this CSV file.")] = None,
    store: StoreOpt = None,
) -> None:
    """Print a run's report, or export its metrics, samples and launch table."""
    from kprof.store import RunStore

    st = RunStore(store)
    rec = st.run(run)
    if csv:
        st.metrics(rec["id"]).to_csv(csv, index=False)
        err_console.print(f"metrics of {rec['id']} -> {csv}")
    if samples:
        st.samples(rec["id"]).to_csv(samples, index=False)
        err_console.print(f"samples of {rec['id']} -> {samples}")
    if launches:
        st.launches(rec["id"]).to_csv(launches, index=False)
        err_console.print(f"launch table of {rec['id']} -> {launches}")
    if not (csv or samples or launches):
        print(rec.get("report_md") or f"run {rec['id']} has no report (status {rec['status']})")


@app.command()
def parse(
    trace: Annotated[Path, typer.Argument(help="A trace file (torch.profiler Chrome trace .json / .json.gz).")],
    csv: Annotated[Optional[Path], typer.Option(help="Write the launch table here.")] = None,
    fmt: Annotated[Optional[str], typer.Option("--format", help="Profiler that wrote it; sniffed when omitted.")] = None,
) -> None:
    """Turn a profiler trace into the canonical launch table."""
    from kprof.profilers import parse_trace

    df = parse_trace(trace, fmt)
    if csv:
        df.to_csv(csv, index=False)
        err_console.print(f"{len(df)} kernel launches -> {csv}")
    else:
        summary = (
            df.groupby("kernel")["duration_ns"].agg(["count", "sum", "median"]).sort_values("sum", ascending=False)
        )
        t = Table("kernel", "launches", "total µs", "median µs")
        for name, r in summary.head(30).iterrows():
            t.add_row(str(name)[:80], str(r["count"]), f"{r['sum'] / 1e3:.1f}", f"{r['median'] / 1e3:.2f}")
        console.print(t)
        console.print(f"{len(df)} kernel launches; --csv FILE writes the full table")


@app.command()
def families() -> None:
    """List kernel families and their providers."""
    from kprof.kernels import discover

    t = Table("family", "provider", "kind", "description", "available")
    for fam in discover().values():
        for p in fam.providers.values():
            why = p.unavailable_reason()
            t.add_row(fam.name, p.name, p.kind, p.description, "yes" if why is None else f"no: {why}")
    console.print(t)


def main() -> None:
    try:
        app()
    except KprofError as exc:
        err_console.print(f"[bold red]kprof:[/bold red] {exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted; finished cases were kept and the run is marked incomplete[/yellow]")
        sys.exit(130)


if __name__ == "__main__":
    main()
