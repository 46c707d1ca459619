"""Where a run came from: git revision, software versions and the environment variables that change what runs (source
hashes: :mod:`kprof.closure`)."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kprof import runtime
from kprof.runtime import git_override


@dataclass(frozen=True)
class GitState:
    commit: str | None
    dirty: bool | None
    note: str | None = None  # why commit/dirty are unknown, when they are


SHORT_COMMIT = 10  # one length wherever a commit is shown (CLI, reports, diffs, dashboard)


def short_commit(commit: object) -> str:
    """A commit hash as shown to people: its first ``SHORT_COMMIT`` characters, ``?`` when unknown."""
    text = "" if commit is None else str(commit)
    return text[:SHORT_COMMIT] if text and text not in ("nan", "None", "<NA>") else "?"


def git_state(path: Path) -> GitState:
    """Commit and dirty flag of the repository holding ``path`` (None with a reason outside git).

    Where the sources were copied to another machine (containers, remote GPU machines) their ``.git`` is
    missing or stale, so the environment variables ``KPROF_GIT_COMMIT`` and ``KPROF_GIT_DIRTY`` (0/1),
    when set, take precedence, and the note says so and what git itself reported.
    """
    found = _git_state(path)
    given = git_override()
    if given:
        seen = f"git said {found.commit[:12]}{' dirty' if found.dirty else ''}" if found.commit else found.note
        return GitState(*given, f"from KPROF_GIT_COMMIT ({seen})")
    return found


def _git_state(path: Path) -> GitState:
    if shutil.which("git") is None:
        return GitState(None, None, "git not found on PATH")
    cwd = path if path.is_dir() else path.parent

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30)

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        return GitState(None, None, f"not a git checkout ({head.stderr.strip()[-200:]})")
    status = git("status", "--porcelain", "--untracked-files=no")
    if status.returncode != 0:
        return GitState(head.stdout.strip(), None, f"git status failed: {status.stderr.strip()[-200:]}")
    return GitState(head.stdout.strip(), bool(status.stdout.strip()))


@dataclass(frozen=True)
class Versions:
    python: str
    torch: str
    triton: str
    kprof: str
    platform: str
    extra: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)  # kprof.runtime.recorded_env: variables that change what runs

    def to_dict(self) -> dict:
        return asdict(self)


def versions() -> Versions:
    import torch
    import triton

    import kprof

    extra = {}
    try:
        import importlib.metadata as md

        extra["liger_kernel"] = md.version("liger-kernel")
    except Exception:  # noqa: BLE001 - optional peer: absent is normal
        pass
    return Versions(
        python=sys.version.split()[0],
        torch=torch.__version__,
        triton=triton.__version__,
        kprof=kprof.__version__,
        platform=platform.platform(),
        extra=extra,
        env=runtime.recorded_env(),
    )
