"""``--rev`` against a plain run of the same commit: the copy must run the code Python would run at that commit,
and both must record the same source hashes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kprof.closure import working_tree_sources
from kprof.kernels import discover
from kprof.revisions import RevisionError, load_family_at

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

KERNELS = discover()["rmsnorm"].package_dir.parent


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", "-c", "core.autocrlf=false", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def repo_with(tmp_path: Path, files: dict[str, str], attributes: str = "") -> Path:
    """A repository whose one commit is today's ``kernels/`` plus ``files`` (paths under ``kernels/``)."""
    root = tmp_path / "repo"
    shutil.copytree(KERNELS, root / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    for rel, text in files.items():
        (root / "kernels" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "kernels" / rel).write_text(text)
    git(tmp_path, "init", "-q", str(root))
    if attributes:
        (root / ".gitattributes").write_text(attributes)
    git(root, "add", ".")
    git(root, "commit", "-qm", "kernels")
    return root


def test_a_checkout_with_crlf_line_endings_records_the_hashes_of_its_commit(tmp_path):
    """Git stores LF and checks out CRLF (``eol=crlf``, ``core.autocrlf=true``): the working tree is clean at the
    commit, and the plain run recorded hashes of the CRLF bytes, ``--rev`` of the LF blobs, so every file read as
    changed between two runs of one commit."""
    root = repo_with(tmp_path, {}, attributes="*.py text eol=crlf\n*.yaml text eol=crlf\n")
    for f in (root / "kernels").rglob("*"):
        if f.suffix in (".py", ".yaml"):
            f.unlink()
    git(root, "checkout", "--", ".")  # written again, with CRLF
    assert git(root, "status", "--porcelain") == ""
    assert b"\r\n" in (root / "kernels" / "rmsnorm" / "looped.py").read_bytes()
    fam = root / "kernels" / "rmsnorm"
    plain = working_tree_sources(fam)
    assert "error" not in plain.record
    rev = load_family_at(fam, "HEAD", tmp_path / "cache", 0)
    assert plain.hashes == rev.source_hashes


@pytest.mark.parametrize(
    "source",
    [
        "from kprof. kernels.lib import checks\n",
        "import kprof .kernels.lib.checks as checks\n",
        "import importlib\n\nchecks = importlib.import_module('kprof.' 'kernels.lib.checks')\n",
    ],
)
def test_a_kernels_import_the_rewrite_cannot_see_is_refused(tmp_path, source):
    """The copy points ``kprof.kernels`` at itself by rewriting the text; an import spelled another way (spaces
    around the dot, a name split over two literals) kept naming ``kprof.kernels`` and ran today's library in the
    revision's run, silently."""
    root = repo_with(tmp_path, {"rmsnorm_linear/spelled.py": source})
    with pytest.raises(RevisionError, match=r"kernels/rmsnorm_linear/spelled\.py .*line \d") as err:
        load_family_at(root / "kernels" / "rmsnorm_linear", "HEAD", tmp_path / "cache", 0)
    assert "today's" in str(err.value)
    assert not any(m.endswith(".rmsnorm_linear.spelled") for m in sys.modules)


def test_the_copy_runs_the_package_python_imports_over_a_module_of_its_name(tmp_path):
    root = repo_with(
        tmp_path,
        {
            "lib/extra.py": "WHO = 'module'\n",
            "lib/extra/__init__.py": "WHO = 'package'\n",
            "rmsnorm_linear/uses_extra.py": "from kprof.kernels.lib import extra\n",
        },
    )
    fr = load_family_at(root / "kernels" / "rmsnorm_linear", "HEAD", tmp_path / "cache", 0)
    assert sys.modules[f"{fr.package}.uses_extra"].extra.WHO == "package"
    assert "kernels/lib/extra/__init__.py" in fr.source_hashes
    assert fr.source_hashes == working_tree_sources(root / "kernels" / "rmsnorm_linear").hashes


def test_the_replay_child_takes_the_folders_own_family_as_the_profiling_process_does(tmp_path):
    """rmsnorm_linear's ``__init__`` binding ``FAMILY`` to rmsnorm's family (its own under another name): the
    profiling process took the family registered as rmsnorm_linear, the replay child of an external profiler took
    ``FAMILY`` first, and so replayed rmsnorm's ``triton_tuned`` under rmsnorm_linear's case ids."""
    init = KERNELS / "rmsnorm_linear" / "__init__.py"
    text = init.read_text().replace(
        "from kprof.kernels.rmsnorm_linear.family import FAMILY\n",
        "from kprof.kernels.rmsnorm import FAMILY\nfrom kprof.kernels.rmsnorm_linear.family import FAMILY as LINEAR\n",
    )
    root = repo_with(tmp_path, {"rmsnorm_linear/__init__.py": text})
    fr = load_family_at(root / "kernels" / "rmsnorm_linear", "HEAD", tmp_path / "cache", 0)
    assert fr.family.name == "rmsnorm_linear"
    code = f"from kprof.revisions import import_loaded\nprint(import_loaded({fr.package!r}, {str(fr.root)!r}).name)\n"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "TRITON_INTERPRET": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["rmsnorm_linear"]
