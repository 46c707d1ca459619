"""Checks of the command line's arguments, done before any long work starts, and the CLI's error exit.

Every ordinary mistake (a shape with the wrong number of dimensions, an output file in a missing folder,
a port out of range, an empty ``--shape ""`` from an unset shell variable) ends in one line on stderr,
``kprof: <what is wrong> (<what to do>)``, and exit status 2, never a traceback. Outputs are checked
before the run so an hour of CPU work is not lost to a typo in ``--report``.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from kprof.errors import KprofError

MAX_DIM = 2**31 - 1  # torch sizes are int64, but no kernel here indexes beyond int32 per dimension
MAX_PORT = 65535


# ------------------------------------------------------------------------------------------- lists
def split_list(values: Sequence[str] | None, option: str = "") -> list[str]:
    """Repeated and comma-separated values -> items. Commas inside ``[...]`` belong to the item, so
    ``triton_one_row[BLOCK_N=4096,num_warps=8]`` stays one provider. An option given only empty values
    (``--shape ""``, an unset shell variable) is a mistake, not "use the default"."""
    if values is None:
        return []
    out: list[str] = []
    for v in values:
        depth, start = 0, 0
        for i, ch in enumerate(v + ","):
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth = max(0, depth - 1)
            elif ch == "," and depth == 0:
                item = v[start:i].strip()
                if item:
                    out.append(item)
                start = i + 1
        if depth:
            raise KprofError(f"unclosed '[' in {option or 'a value'} {v!r} (write NAME[K=V,K=V])")
    if values and not out and option:
        raise KprofError(
            f"{option} was given an empty value (an unset shell variable?); give a value or leave "
            f"{option} out for the default"
        )
    return out


def parse_shapes(values: Sequence[str] | None) -> tuple[tuple[int, ...], ...] | None:
    from kprof.registry import parse_shape

    shapes = tuple(parse_shape(s) for s in split_list(values, "--shape"))
    for s in shapes:
        if any(d > MAX_DIM for d in s):
            raise KprofError(
                f"shape {'x'.join(map(str, s))} has a dimension above {MAX_DIM} (2^31-1); "
                "use realistic sizes, e.g. 4096x4096"
            )
    return shapes or None


def parse_dtypes(values: Sequence[str] | None) -> tuple[str, ...] | None:
    from kprof.dtypes import canonical_dtype

    return tuple(canonical_dtype(d) for d in split_list(values, "--dtype")) or None


def check_shapes_fit(family: Any, shapes: Iterable[tuple[int, ...]] | None) -> None:
    """Each shape has the number of dimensions the family takes (its bytes model reads them)."""
    for shape in shapes or ():
        try:
            family.bytes_model(tuple(shape), "fp32")
            family.flops_model(tuple(shape), "fp32")
        except (ValueError, IndexError, TypeError, KeyError) as exc:
            name = "x".join(map(str, shape))
            detail = str(exc) if isinstance(exc, ValueError) and str(exc) else "wrong number of dimensions"
            raise KprofError(
                f"shape {name} does not fit {family.name}: {detail} "
                f"(`kprof profile {family.name}` without --shape runs its default sweep)"
            ) from None


def check_revisions(family: Any, revs: Sequence[str] | None) -> None:
    """Each ``--rev`` names a commit, before any work (git rev-parse; no checkout is touched)."""
    from kprof.revisions import resolve

    for rev in revs or ():
        resolve(family.package_dir, rev)


def check_params(params: dict[str, list[int]]) -> None:
    for name, values in params.items():
        for v in values:
            if not 1 <= v <= MAX_DIM:
                raise KprofError(f"--param {name}={v}: values must be between 1 and {MAX_DIM}")


def check_positive(**values: float | None) -> None:
    """Budgets and counts that must be positive (``--rep-ms 0`` would time nothing)."""
    for option, v in values.items():
        if v is not None and not v > 0:
            raise KprofError(f"--{option.replace('_', '-')} must be positive, not {v}")


def check_non_negative(**values: float) -> None:
    for option, v in values.items():
        if v < 0:
            raise KprofError(f"--{option.replace('_', '-')} must be 0 or more, not {v}")


# ----------------------------------------------------------------------------------------- outputs
def check_outputs(**outputs: Path | None) -> None:
    """Each output file (keyword: option name without dashes) can be written: its folder exists, it is
    not a folder itself, and the folder is writable. Checked before the work that produces it."""
    for option, path in outputs.items():
        if path is None:
            continue
        flag = "--" + option.replace("_", "-")
        p = Path(path).expanduser()
        if str(path) in ("", "."):
            raise KprofError(f"{flag} needs a file name")
        if p.is_dir():
            raise KprofError(f"{flag} {path} is a folder; give a file name inside it (e.g. {p / 'out'}{_ext(option)})")
        parent = p.parent
        probe = parent
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if probe.exists() and not probe.is_dir():
            raise KprofError(f"{flag} {path}: {probe} is a file, not a folder; choose another path")
        if not parent.exists():
            raise KprofError(f"{flag} {path}: the folder {parent} does not exist (create it: mkdir -p {parent})")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise KprofError(f"{flag} {path}: the folder {parent} is not writable; choose another path")
        if p.exists() and not os.access(p, os.W_OK):
            raise KprofError(f"{flag} {path} exists and is not writable; choose another path")


def _ext(option: str) -> str:
    return {"markdown": ".md", "report": ".md", "guide": ".md", "json": ".json", "perfetto": ".json.gz"}.get(
        option, ".csv"
    )


def check_port(port: int, host: str | None = None) -> None:
    """The port is a TCP port and, with ``host``, the server could listen there (resolvable address, port
    free): asked of the OS before the server starts, instead of reading Streamlit's traceback after."""
    if not 1 <= port <= MAX_PORT:
        raise KprofError(f"--port {port} is not a TCP port; give one between 1 and {MAX_PORT} (default 8501)")
    if host is None:
        return
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise KprofError(f"--host {host}: not an address of this machine ({exc}); use 127.0.0.1 or 0.0.0.0") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            raise KprofError(
                f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another --port (or --host)"
            ) from None


def quiet_interpreter(mode: str) -> None:
    """Triton's interpreter evaluates ``exp`` with numpy, which warns when it overflows to inf. On the GPU
    that overflow is ordinary IEEE behaviour kernels rely on (``sigmoid(-100)`` = 1 / (1 + inf) = 0), and
    every output is checked against the float64 oracle anyway, so the warning only alarms the reader."""
    if mode == "interpreter":
        import warnings

        warnings.filterwarnings("ignore", r"overflow encountered", RuntimeWarning, r"triton\.runtime\.interpreter")


def check_profiler_here(profiler: str, mode: str, warn: Callable[[str], None]) -> None:
    """A profiler named on a machine without a GPU cannot run: say so instead of dropping it silently."""
    from kprof.external import ALL_PROFILERS

    if profiler not in ALL_PROFILERS:
        raise KprofError(f"--profiler must be one of {', '.join(ALL_PROFILERS)}, not {profiler!r}")
    if mode == "interpreter" and profiler not in ("auto", "none"):
        warn(
            f"--profiler {profiler} is not used: there is no GPU here, so this CPU interpreter run checks "
            "correctness only and has no launches to profile"
        )


def runnable_profilers() -> list[str]:
    """The ``--profiler`` backends that can run on this machine (none without a GPU)."""
    import torch

    if not torch.cuda.is_available():
        return []
    from kprof.external import _find_rocprof, _is_rocm
    from kprof.tools import ToolNotFoundError, find_tool

    out = ["torch", "proton"]
    finders = (
        {"rocprof": lambda: _find_rocprof(None)}
        if _is_rocm()
        else {"nsys": lambda: find_tool("nsys"), "ncu": lambda: find_tool("ncu")}
    )
    for name, find in finders.items():
        try:
            find()
            out.append(name)
        except ToolNotFoundError:
            pass
    return out


def gpu_only_reason(provider: Any) -> str | None:
    """Why a provider is not available here: its own reason, or that it needs a GPU this machine lacks."""
    why = provider.unavailable_reason()
    if why is None and getattr(provider, "gpu_only", False):
        import torch

        if not torch.cuda.is_available():
            why = "GPU only (no GPU here; a CPU run skips it)"
    return why


# ------------------------------------------------------------------------------------------- store
def open_store_for_reading(store: str | None) -> Any:
    """A store opened to read: a missing one is an error and nothing (no folder, no file) is created."""
    from kprof.store import RunStore

    return RunStore(store, create=False)


def check_store_for_writing(store: str | None) -> None:
    """Before a run starts: the store is new or kprof's (a foreign file is refused, untouched)."""
    from kprof.store_guard import check_store_file

    check_store_file(default_store(store))


def default_store(store: str | None) -> Path:
    from kprof.store import default_store_path

    return default_store_path(store)


def store_exists(store: str | None) -> bool:
    return default_store(store).exists()


def report_of(st: Any, rec: dict) -> str:
    """The run's report; a run whose process died (SIGKILL) has none stored, so render it from its cases."""
    if rec.get("report_md"):
        return rec["report_md"]
    from kprof import report

    try:
        from kprof.registry import get_family

        baseline = get_family(rec["family"]).baseline
    except KprofError:
        baseline = "torch_eager"
    if rec.get("status") == "incomplete" and not rec.get("error"):
        rec = {**rec, "error": "the process ended without finishing the run (killed?); the cases it finished are shown"}
    return report.render(rec, st.metrics(rec["id"]), baseline=baseline)


def require_sweep(rec: dict) -> None:
    if not (rec.get("config") or {}).get("sweep"):
        raise KprofError(
            f"run {rec['id']} is a `kprof profile` run, not a sweep; `kprof guide` reads sweeps "
            "(`kprof sweep FAMILY --version V --param NAME=...`; `kprof runs` lists the runs)"
        )


# ---------------------------------------------------------------------------------------- progress
class ProgressLines:
    """Progress that reaches a log: when stderr is not a terminal, rich's bar stays silent until the end,
    so one line is printed per phase start and then at most every ``every_s`` seconds. For interpreter
    runs it also says, after the first cases, how long the rest will take at the measured per-case cost,
    and how to shrink the run."""

    def __init__(
        self,
        emit: Callable[[str], None],
        *,
        piped: bool,
        interpreter: bool,
        every_s: float = 15.0,
        prior_s_per_case: float | None = None,
    ) -> None:
        self.emit, self.piped, self.interpreter, self.every_s = emit, piped, interpreter, every_s
        self.prior = prior_s_per_case
        self.started: dict[str, float] = {}
        self.last = 0.0
        self.estimated = False

    def __call__(self, phase: str, done: int, total: int, label: str) -> None:
        now = time.monotonic()
        if phase not in self.started:
            self.started[phase] = now
            if phase == "cases" and self.interpreter and total:
                self._before(total)
        elapsed = now - self.started[phase]
        if phase == "cases" and self.interpreter and not self.estimated and done >= 1 and total > done:
            per = elapsed / done
            self.estimated = True
            if per * (total - done) > 60:
                self.emit(
                    f"measured {per:.1f} s per case: about {_dur(per * (total - done))} more for the "
                    f"{total - done} cases left; {SHRINK}"
                )
        if self.piped and total and (done in (0, total) or now - self.last >= self.every_s):
            self.last = now
            eta = f", about {_dur(elapsed / done * (total - done))} left" if 0 < done < total else ""
            self.emit(f"{phase}: {done}/{total} ({_dur(elapsed)} elapsed{eta}) {label}"[:200])

    def _before(self, total: int) -> None:
        if self.prior and self.prior * total > 30:
            self.emit(
                f"{total} cases in Triton's interpreter: about {_dur(self.prior * total)} at the "
                f"{self.prior:.1f} s per case earlier CPU runs of this family took; {SHRINK}"
            )


SHRINK = "to shrink it: fewer --shape / --dtype / --provider (a sweep: fewer --param values)"


def _dur(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def prior_seconds_per_case(store: str | None, family: str) -> float | None:
    """Median seconds per case of this family's finished interpreter runs in the store, if any."""
    if not store_exists(store):
        return None
    try:
        import pandas as pd

        df = open_store_for_reading(store).runs()
    except (KprofError, sqlite3.DatabaseError):
        return None
    df = df[(df["family"] == family) & (df["mode"] == "interpreter") & (df["status"] == "complete") & (df["cases"] > 0)]
    if df.empty:
        return None
    took = (pd.to_datetime(df["finished_at"]) - pd.to_datetime(df["created_at"])).dt.total_seconds()
    per = (took / df["cases"]).dropna()
    return float(per.median()) if len(per) else None


# ---------------------------------------------------------------------------------------- the exit
def hide_flag_types() -> None:
    """Typer >= 0.20 prints each option's type in help; for on/off flags that is a confusing ``<bool>``."""
    try:
        from typer.core import TyperOption
    except ImportError:
        return
    original = getattr(TyperOption, "display_type_rich", None)
    if original is None or getattr(original, "_kprof", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if getattr(self, "is_flag", False) else original(self, ctx)

    display_type_rich._kprof = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("kprof")
    except PackageNotFoundError:
        v = "unknown (not installed)"
    return f"kprof {v} ({Path(__file__).resolve().parent})"


def _click_modules() -> list[Any]:
    """The click exception modules in use: newer typer vendors click as ``typer._click``."""
    mods = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            mods.append(__import__(name, fromlist=["UsageError"]))
        except ImportError:
            pass
    return mods


def _of(mods: list[Any], name: str) -> tuple[type, ...]:
    return tuple(getattr(m, name) for m in mods if hasattr(m, name))


def run_cli(app: Any, err: Callable[[str], None], run_in_flight: Callable[[], bool]) -> None:
    """Run the typer app; every user mistake ends in one line on stderr and exit status 2."""
    mods = _click_modules()

    def fail(msg: str, code: int = 2) -> None:
        err(f"kprof: {' '.join(str(msg).split())}")
        sys.exit(code)

    try:
        rc = app(standalone_mode=False)
    except KprofError as exc:
        fail(str(exc))
    except _of(mods, "NoArgsIsHelpError") as exc:  # `kprof` or `kprof sweep` alone: show the help
        print(exc.ctx.get_help() if exc.ctx is not None else "")
        sys.exit(0)
    except _of(mods, "UsageError") as exc:
        ctx = exc.ctx
        where = ctx.command_path if ctx is not None else "kprof"
        fail(f"{exc.format_message()} ({where} --help)")
    except (KeyboardInterrupt, *_of(mods, "Abort")):
        interrupted(err, run_in_flight())
    except _of(mods, "Exit") as exc:  # typer.Exit(n)
        sys.exit(exc.exit_code)
    except _of(mods, "ClickException") as exc:
        fail(exc.format_message())
    except sqlite3.DatabaseError as exc:
        fail(f"the run store cannot be read ({exc}): it is damaged; move it aside or pass --store with another path")
    except BrokenPipeError:  # `kprof show | head`
        sys.stderr.close()
        sys.exit(0)
    if isinstance(rc, int) and rc:
        if rc == 130:  # typer turns Ctrl-C into Exit(130)
            interrupted(err, run_in_flight())
        sys.exit(rc)


def interrupted(err: Callable[[str], None], in_run: bool) -> None:
    err(
        "kprof: interrupted; finished cases were kept and the run is marked incomplete (kprof show latest)"
        if in_run
        else "kprof: interrupted"
    )
    sys.exit(130)


def grid_part(family: Any, part: str, mode: str, shapes: Any, dtypes: Any) -> tuple[tuple, tuple]:
    """``--grid PART``: the part's shapes and dtypes (``--dtype`` narrows the dtypes), for a GPU run only."""
    if shapes:
        raise KprofError("--grid races the grid's own shapes: drop --shape (or drop --grid to run your shapes)")
    if mode != "gpu":
        raise KprofError(
            "--grid is a race of GPU times at model sizes; a CPU interpreter run checks correctness "
            "only and would take hours there (use --shape for a small correctness check)"
        )
    sweep = family.grid(part)
    return sweep.shapes, tuple(dtypes) if dtypes else sweep.dtypes
