"""Finding external profilers and running them as subprocesses, with nothing swallowed.

:func:`find_tool` looks, in order, at an explicit path, the tool's environment variable
(``KPROF_NSYS``, ``KPROF_NCU``, ``KPROF_ROCPROFV3``, ``KPROF_ROCPROF``, ...), ``PATH``, then the places the
vendors install to. Each profiler backend declares its tools (:class:`ToolSpec`: executable, variable,
install places) in its own module; :data:`TOOLS` gathers them.

A tool that is not found raises :class:`ToolNotFoundError` naming every place it looked and how
to point kprof at it.

:func:`run_tool` runs an argv list (never a shell string) in a process group of its own, with a timeout
that kills the whole group (the profiler *and* the program it profiles), and returns a
:class:`ToolRun` holding the exact command, exit code, tails of stdout/stderr and wall time, which the
runner stores with the run.
"""

from __future__ import annotations

import functools
import glob
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kprof.errors import KprofError

TAIL_CHARS = 4000


class ToolNotFoundError(KprofError):
    pass


class ToolFailedError(KprofError):
    """A profiler (or the program under it) exited non-zero or timed out; carries the ToolRun."""

    def __init__(self, message: str, run: ToolRun) -> None:
        super().__init__(message)
        self.run = run


@dataclass(frozen=True)
class ToolSpec:
    name: str  # nsys, ncu, rocprofv3, rocprof, ... (unique over all backends)
    executable: str
    env_var: str
    globs: tuple[str, ...]  # install places, newest version first after sorting
    version_args: tuple[str, ...] = ("--version",)
    hint: str = ""


class _ToolTable(MutableMapping):
    """Every profiler backend's tools by name (``kprof.profilers.Backend.tools``), gathered again whenever
    the set of backends changes (a backend module added to the package's path)."""

    def __init__(self) -> None:
        self._d: dict[str, ToolSpec] | None = None
        self._of: tuple[str, ...] = ()

    def _table(self) -> dict[str, ToolSpec]:
        from kprof.profilers import backends

        found = backends()
        if self._d is None or tuple(found) != self._of:
            self._d = {t.name: t for b in found.values() for t in b.tools}
            self._of = tuple(found)
        return self._d

    def __getitem__(self, key: str) -> ToolSpec:
        return self._table()[key]

    def __setitem__(self, key: str, value: ToolSpec) -> None:
        self._table()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._table()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def refresh(self) -> None:
        """Gather again (after a backend was registered)."""
        self._d = None


TOOLS = _ToolTable()


@dataclass(frozen=True)
class ToolLocation:
    name: str
    path: str
    how: str  # "explicit path", "$KPROF_NSYS", "PATH", "install place"


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _version_key(path: str) -> tuple:
    # /opt/nvidia/nsight-systems/2025.3.1/bin/nsys -> newest version first
    parts = []
    for seg in Path(path).parts:
        nums = [int(x) for x in seg.replace("-", ".").split(".") if x.isdigit()]
        if nums:
            parts.append(tuple(nums))
    return tuple(parts)


def candidates(spec: ToolSpec) -> list[str]:
    out: list[str] = []
    for pattern in spec.globs:
        out += sorted(glob.glob(pattern), key=_version_key, reverse=True)
    return out


def find_tool(
    name: str,
    explicit: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ToolLocation:
    """Locate a profiler binary or raise ToolNotFoundError listing where kprof looked."""
    if name not in TOOLS:
        raise KprofError(f"unknown tool {name!r}; kprof drives {', '.join(TOOLS)}")
    spec = TOOLS[name]
    env = os.environ if env is None else env
    looked: list[str] = []
    if explicit:
        if _executable(explicit):
            return ToolLocation(name, explicit, "explicit path")
        raise ToolNotFoundError(f"{name}: the path given, {explicit}, is not an executable file")
    from_env = env.get(spec.env_var)
    if from_env:
        if _executable(from_env):
            return ToolLocation(name, from_env, f"${spec.env_var}")
        raise ToolNotFoundError(f"{name}: ${spec.env_var}={from_env} is not an executable file")
    looked.append(f"${spec.env_var} (unset)")
    on_path = shutil.which(spec.executable, path=env.get("PATH"))
    if on_path:
        return ToolLocation(name, on_path, "PATH")
    looked.append("PATH")
    for path in candidates(spec):
        if _executable(path):
            return ToolLocation(name, path, "install place")
    looked += list(spec.globs)
    raise ToolNotFoundError(f"{name} not found; looked in: {', '.join(looked)}. To fix: {spec.hint}")


@functools.cache
def tool_version(loc: ToolLocation, timeout: float = 60) -> str:
    """The tool's own version line(s); a tool that cannot say its version is reported, not ignored.

    Asked once per process: a run records it, and each of its revisions' captures records it again."""
    spec = TOOLS[loc.name]
    try:
        cp = subprocess.run([loc.path, *spec.version_args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({loc.path} {' '.join(spec.version_args)} failed: {exc})"
    text = (cp.stdout + cp.stderr).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if cp.returncode != 0 or not lines:
        return f"unknown ({loc.path} {' '.join(spec.version_args)} exited {cp.returncode}: {text[-300:]})"
    return " | ".join(lines[-2:]) if len(lines) > 1 else lines[0]


# ------------------------------------------------------------------------------------------ execution
@dataclass(frozen=True)
class ToolRun:
    argv: tuple[str, ...]
    returncode: int | None  # None: killed on timeout
    timed_out: bool
    seconds: float
    stdout_tail: str
    stderr_tail: str

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        what = (
            f"timed out after {self.seconds:.0f} s (process group killed)"
            if self.timed_out
            else f"exited with status {self.returncode}"
        )
        tail = self.stderr_tail.strip()[-1500:] or self.stdout_tail.strip()[-1500:]
        return f"{self.argv[0].rsplit('/', 1)[-1]} {what} (command: `{self.command}`)" + (
            f"; last output:\n{tail}" if tail else ""
        )


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_CHARS))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def run_tool(
    argv: Sequence[str],
    *,
    timeout: float | None,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    log_prefix: str = "tool",
) -> ToolRun:
    """Run ``argv`` in its own process group; stdout/stderr go to files in ``cwd`` (kept with the run).

    On timeout the whole group gets SIGTERM, then SIGKILL 10 s later, so neither the profiler nor the
    program under it outlives the run.
    """
    if isinstance(argv, str):
        raise TypeError("run_tool takes an argv list, not a shell string")
    argv = tuple(str(a) for a in argv)
    cwd.mkdir(parents=True, exist_ok=True)
    out_path, err_path = cwd / f"{log_prefix}.stdout.txt", cwd / f"{log_prefix}.stderr.txt"
    t0 = time.monotonic()
    timed_out = False
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolFailedError(
                f"could not start `{shlex.join(argv)}`: {exc}",
                ToolRun(argv, None, False, 0.0, "", str(exc)),
            ) from None
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        except BaseException:  # Ctrl-C in the parent: do not leave a profiler running
            _kill_group(proc)
            raise
    return ToolRun(
        argv=argv,
        returncode=None if timed_out else proc.returncode,
        timed_out=timed_out,
        seconds=time.monotonic() - t0,
        stdout_tail=_tail(out_path),
        stderr_tail=_tail(err_path),
    )


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # the leader is gone; make sure nothing it started (the profiled program) lingers
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
