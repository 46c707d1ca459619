"""A kernel family's sources as they were at a git revision, loaded next to today's harness.

``kprof profile FAMILY --rev A --rev B`` measures the family folder ``kernels/FAMILY/`` as it is at each
revision, with the harness of the working tree, in one process, so both are timed by the same code on the
same inputs and machine state. :func:`load_family_at`:

1. resolves the rev-spec (a commit, a branch, ``HEAD~1``) with ``git rev-parse --verify REV^{commit}``;
2. writes every file of ``kernels/FAMILY/`` at that commit (``git ls-tree`` + ``git show``) into
   ``STORE_DIR/revisions/<slot>_<commit>/kprof_rev_<slot>_<commit12>/FAMILY/``, rewriting the family's own
   absolute imports ``kprof.kernels.FAMILY`` to that package so two revisions can live in one process;
3. imports it with :func:`kprof.registry.isolated_registry`, so its ``Family`` keeps its name but does not
   replace today's in the global registry.

Source hashes are of the files as stored in git (before the import rewrite), so they match the hashes a
normal run of that commit records.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kprof.errors import KprofError
from kprof.registry import Family, isolated_registry


class RevisionError(KprofError):
    pass


@dataclass(frozen=True)
class FamilyRevision:
    rev: str  # as the user wrote it
    commit: str  # resolved full sha
    family: Family
    package: str  # import name of the loaded copy
    root: Path  # folder to put on sys.path to import ``package`` (the replay child needs it)
    source_hashes: dict[str, str]
    subject: str  # the commit's subject line


def _git(repo: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary, timeout=60)
    except FileNotFoundError:
        raise RevisionError("--rev needs git, and git is not on PATH") from None


def resolve(repo: Path, rev: str) -> str:
    cp = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if cp.returncode != 0 or not cp.stdout.strip():
        top = _git(repo, "rev-parse", "--show-toplevel")
        if top.returncode != 0:
            raise RevisionError(f"--rev {rev}: {repo} is not inside a git checkout ({top.stderr.strip()[-200:]})")
        raise RevisionError(f"--rev {rev}: no such commit, branch or tag in {top.stdout.strip()} "
                            "(`git log --oneline` lists commits)")
    return cp.stdout.strip()


def repo_root(path: Path) -> Path:
    cp = _git(path, "rev-parse", "--show-toplevel")
    if cp.returncode != 0:
        raise RevisionError(f"--rev needs a git checkout; {path} is not in one ({cp.stderr.strip()[-200:]})")
    return Path(cp.stdout.strip())


def load_family_at(
    family_dir: Path, rev: str, cache_dir: Path, slot: int = 0,
) -> FamilyRevision:
    """Load ``family_dir`` (today's ``kernels/FAMILY``) as it is at ``rev``. ``slot`` keeps two loads of
    the same commit (an A/A comparison) apart."""
    family_dir = family_dir.resolve()
    repo = repo_root(family_dir)
    commit = resolve(repo, rev)
    rel = family_dir.relative_to(repo).as_posix()
    name = family_dir.name
    listing = _git(repo, "ls-tree", "-r", "--name-only", commit, "--", rel)
    files = [f for f in listing.stdout.splitlines() if f.strip()]
    if listing.returncode != 0 or not files:
        raise RevisionError(f"--rev {rev} ({commit[:10]}) has no {rel}/: the family did not exist at that revision")
    package = f"kprof_rev_{slot}_{commit[:12]}"
    root = cache_dir / "revisions" / f"{slot}_{commit}"
    pkg_dir = root / package
    fam_dir = pkg_dir / name
    fam_dir.mkdir(parents=True, exist_ok=True)
    (pkg_dir / "__init__.py").write_text(f'"""kernels/{name} at {commit} (kprof --rev {rev})."""\n')
    own = re.compile(rf"\bkprof\.kernels\.{re.escape(name)}\b")
    hashes: dict[str, str] = {}
    for f in files:
        blob = _git(repo, "show", f"{commit}:{f}", binary=True)
        if blob.returncode != 0:
            raise RevisionError(f"git show {commit[:10]}:{f} failed: {blob.stderr.decode(errors='replace')[-200:]}")
        data: bytes = blob.stdout
        sub = Path(f).relative_to(rel)
        if sub.suffix in (".py", ".yaml"):
            hashes[f] = hashlib.sha256(data).hexdigest()[:16]
        out = fam_dir / sub
        out.parent.mkdir(parents=True, exist_ok=True)
        if sub.suffix == ".py":
            data = own.sub(f"{package}.{name}", data.decode()).encode()
        out.write_bytes(data)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    with isolated_registry() as found:
        try:
            mod = importlib.import_module(f"{package}.{name}")
        except Exception as exc:
            raise RevisionError(f"kernels/{name} at {rev} ({commit[:10]}) does not import with today's kprof: "
                                f"{type(exc).__name__}: {exc}") from None
    family = found.get(name) or getattr(mod, "FAMILY", None)  # imported before in this process: reuse it
    if family is None or family.name != name:
        raise RevisionError(f"kernels/{name} at {rev} ({commit[:10]}) defines no family named {name!r}")
    subject = _git(repo, "log", "-1", "--format=%s", commit).stdout.strip()
    return FamilyRevision(rev=rev, commit=commit, family=family, package=f"{package}.{name}", root=root,
                          source_hashes=hashes, subject=subject)


def import_loaded(package: str, root: str) -> Family:
    """In another process (the replay child): import a copy written by :func:`load_family_at`."""
    if root not in sys.path:
        sys.path.insert(0, root)
    with isolated_registry() as found:
        mod = importlib.import_module(package)
    fam = getattr(mod, "FAMILY", None) or next(iter(found.values()), None)
    if fam is None:
        raise RevisionError(f"{package} under {root} defines no family")
    return fam
