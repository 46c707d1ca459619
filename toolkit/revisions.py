"""A kernel family's code as it was at a git revision, loaded next to today's harness.

``kprof profile FAMILY --rev A --rev B`` measures the kernel code the family runs as it is at each revision,
with the harness of the working tree, in one process, so both are timed by the same code on the same inputs
and machine state. :func:`load_family_at`:

1. resolves the rev-spec (a commit, a branch, ``HEAD~1``) with ``git rev-parse --verify --end-of-options
   REV^{commit}``; the name is only ever an argv item (never code, never a shell word) and one starting
   with ``-`` is refused, so it cannot become a git option;
2. finds the family's import closure at that commit (:mod:`kprof.closure`: ``kernels/FAMILY/`` and every
   module under ``kernels/`` it imports, read from git, never run), and refuses when the closure needs
   something the commit does not have;
3. writes the closure to ``STORE_DIR/revisions/<slot>_<commit>/kprof_rev_<slot>_<commit12>/`` (the layout of
   ``kernels/``), rewriting every ``kprof.kernels`` reference to that package, so two revisions (or one
   commit twice, an A/A comparison) live in one process and in the replay child of external profilers; an
   import the textual rewrite misses (``from kprof. kernels.lib import x``) is refused, never left to run today's;
4. imports it with :func:`kprof.registry.isolated_registry`, so its ``Family`` keeps its name but neither it
   nor any other family of the closure (rmsnorm for rmsnorm_linear) enters today's registry. The package's
   own ``__init__`` is a fixed stub: ``kernels/__init__.py`` (discovery of every family) is harness.

Source hashes are of the closure's files as stored in git (before the rewrite), so they match the hashes a
normal run of that commit records (:func:`kprof.closure.working_tree_sources`).
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kprof.closure import ROOT, Closure, ClosureError, absolute_imports, family_closure, git_tree
from kprof.errors import KprofError
from kprof.registry import Family, isolated_registry


class RevisionError(KprofError):
    pass


@dataclass(frozen=True)
class FamilyRevision:
    rev: str  # as the user wrote it
    commit: str  # resolved full sha
    family: Family
    package: str  # import name of the loaded copy of the family folder
    root: Path  # folder to put on sys.path to import ``package`` (the replay child needs it)
    source_hashes: dict[str, str]
    subject: str  # the commit's subject line
    closure: Closure  # which files came from the revision, which modules are harness


# a fixed text: nothing the user typed (the rev-spec) ever goes into generated code
_STUB_INIT = b'"""kernels/ as at one git commit, written by kprof --rev (see ../closure-*.json)."""\n'


def _git(repo: Path, *args: str, binary: bool = False) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=not binary, timeout=60)
    except FileNotFoundError:
        raise RevisionError("--rev needs git, and git is not on PATH") from None


def check_rev(rev: str) -> None:
    """Refuse rev-specs git would not read as a revision: empty, starting with ``-`` (an option), control
    characters."""
    if not rev.strip():
        raise RevisionError("--rev needs a revision (a commit, branch, tag or HEAD~1), not an empty string")
    if rev.startswith("-"):
        raise RevisionError(f"--rev {rev!r}: a revision cannot start with '-' (git would read it as an option)")
    if any(ord(c) < 32 for c in rev):
        raise RevisionError(f"--rev {rev!r}: a revision cannot hold control characters")


def resolve(repo: Path, rev: str) -> str:
    check_rev(rev)
    cp = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
    sha = cp.stdout.strip()
    if cp.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?", sha):
        top = _git(repo, "rev-parse", "--show-toplevel")
        if top.returncode != 0:
            raise RevisionError(f"--rev {rev!r}: {repo} is not inside a git checkout ({top.stderr.strip()[-200:]})")
        raise RevisionError(
            f"--rev {rev!r}: no such commit, branch or tag in {top.stdout.strip()} (`git log --oneline` lists commits)"
        )
    return sha


def repo_root(path: Path) -> Path:
    cp = _git(path, "rev-parse", "--show-toplevel")
    if cp.returncode != 0:
        raise RevisionError(f"--rev needs a git checkout; {path} is not in one ({cp.stderr.strip()[-200:]})")
    return Path(cp.stdout.strip())


class _Blobs:
    """``kernels/`` at one commit: the file list and each file's bytes (read once)."""

    def __init__(self, repo: Path, commit: str, kernels_rel: str) -> None:
        self.repo, self.commit, self.prefix = repo, commit, kernels_rel
        listing = _git(repo, "ls-tree", "-r", "-z", "--name-only", commit, "--", kernels_rel)
        if listing.returncode != 0:
            raise RevisionError(f"git ls-tree {commit[:10]} {kernels_rel} failed: {listing.stderr.strip()[-200:]}")
        head = kernels_rel + "/"
        self.paths = {f[len(head) :] for f in listing.stdout.split("\0") if f.startswith(head)}
        self._cache: dict[str, bytes] = {}

    def read(self, rel: str) -> bytes:
        if rel not in self._cache:
            blob = _git(self.repo, "cat-file", "blob", f"{self.commit}:{self.prefix}/{rel}", binary=True)
            if blob.returncode != 0:
                raise RevisionError(
                    f"git cat-file {self.commit[:10]}:{self.prefix}/{rel} failed: "
                    f"{blob.stderr.decode(errors='replace')[-200:]}"
                )
            self._cache[rel] = blob.stdout
        return self._cache[rel]


def load_family_at(
    family_dir: Path,
    rev: str,
    cache_dir: Path,
    slot: int = 0,
) -> FamilyRevision:
    """Load the family of ``family_dir`` (today's ``kernels/FAMILY``) with its import closure as it is at
    ``rev``. ``slot`` keeps two loads of the same commit (an A/A comparison) apart."""
    family_dir = family_dir.resolve()
    check_rev(rev)
    repo = repo_root(family_dir)
    commit = resolve(repo, rev)
    name = family_dir.name
    blobs = _Blobs(repo, commit, family_dir.parent.relative_to(repo).as_posix())
    try:
        closure = family_closure(git_tree(blobs.paths, blobs.read, commit), name)
    except ClosureError as exc:
        raise RevisionError(f"--rev {rev!r} ({commit[:10]}): {exc}") from None
    package = f"kprof_rev_{slot}_{commit[:12]}"
    root = Path(cache_dir) / "revisions" / f"{slot}_{commit}"
    loaded = sys.modules.get(package)
    if loaded is not None:  # this commit is imported already (another store): add to that copy, where it looks
        root = Path(next(iter(loaded.__path__))).parent
    _write(root, package, closure, blobs, fresh=loaded is None, where=f"at {rev!r} ({commit[:10]})")
    (root / f"closure-{name}.json").write_text(
        json.dumps(
            {
                "rev": rev,
                "commit": commit,
                "family": name,
                "files": list(closure.files),
                "harness": list(closure.harness),
            },
            indent=1,
        )
    )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    with isolated_registry() as found:
        try:
            mod = importlib.import_module(f"{package}.{name}")
        except Exception as exc:  # noqa: BLE001 - any import failure of a revision becomes a RevisionError naming it
            raise RevisionError(
                f"kernels/{name} at {rev!r} ({commit[:10]}) does not import with today's kprof: "
                f"{type(exc).__name__}: {exc}"
            ) from None
    family = found.get(name) or getattr(mod, "FAMILY", None)  # imported before in this process: reuse it
    if family is None or family.name != name:
        raise RevisionError(f"kernels/{name} at {rev!r} ({commit[:10]}) defines no family named {name!r}")
    subject = _git(repo, "log", "-1", "--format=%s", commit).stdout.strip()
    hashes = closure.hashes(lambda f: blobs.read(f.removeprefix("kernels/")))
    return FamilyRevision(
        rev=rev,
        commit=commit,
        family=family,
        package=f"{package}.{name}",
        root=root,
        source_hashes=hashes,
        subject=subject,
        closure=closure,
    )


_KERNELS_REF = re.compile(rb"\bkprof\.kernels\b")


def _write(root: Path, package: str, closure: Closure, blobs: _Blobs, fresh: bool, where: str) -> None:
    """The closure's files under ``root/package`` with ``kprof.kernels`` pointing at ``package``. ``fresh``:
    nothing of this package is imported in this process, so files left by an earlier run are cleared first
    (a folder's stray module would otherwise be imported by the family's discovery)."""
    rewritten = {}
    for f in closure.files:  # all checked before any is written: a refused revision leaves no copy to import
        rel = f.removeprefix("kernels/")
        data = blobs.read(rel)
        if rel.endswith(".py"):
            data = _KERNELS_REF.sub(package.encode(), data)
            _check_rewritten(f, data, where)
        rewritten[rel] = data
    pkg_dir = root / package
    if fresh and pkg_dir.exists():
        shutil.rmtree(pkg_dir)
    pkg_dir.mkdir(parents=True, exist_ok=True)
    (pkg_dir / "__init__.py").write_bytes(_STUB_INIT)
    for rel, data in rewritten.items():
        out = pkg_dir / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)


def _check_rewritten(path: str, data: bytes, where: str) -> None:
    """The rewrite is of the text, the closure of the syntax tree: an import spelled so the text does not read
    ``kprof.kernels`` (``from kprof. kernels.lib import x``, ``import_module("kprof." "kernels.x")``) would
    still import today's module into the revision's run. Refused, where the rewritten copy still names one."""
    for line, module in absolute_imports(data):
        if module == ROOT or module.startswith(ROOT + "."):
            raise RevisionError(
                f"{path} {where}, line {line}: imports {module} spelled so that kprof cannot point it at the "
                "revision's copy (it would run today's module); write the name as one dotted `kprof.kernels...`"
            )


def import_loaded(package: str, root: str) -> Family:
    """In another process (the replay child): import a copy written by :func:`load_family_at`."""
    if root not in sys.path:
        sys.path.insert(0, root)
    with isolated_registry() as found:
        mod = importlib.import_module(package)
    # the closure may define other families too (rmsnorm for rmsnorm_linear): take the folder's own, by the
    # rule load_family_at took it with, so the child replays the family the profiling process timed
    name = package.rsplit(".", 1)[-1]
    fam = found.get(name) or getattr(mod, "FAMILY", None)
    if fam is None or fam.name != name:
        raise RevisionError(f"{package} under {root} defines no family named {name!r}")
    return fam
