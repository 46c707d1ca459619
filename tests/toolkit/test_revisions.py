"""Profiling a family as it was at a git revision: checkout into the store, side-by-side import, runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kprof.kernels import discover
from kprof.revisions import RevisionError, load_family_at
from tests.conftest import DEVICE, HAS_CUDA

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

TODAY = discover()["rmsnorm"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A temporary repository with two commits of kernels/rmsnorm: the second changes the looped chunk."""
    root = tmp_path / "repo"
    fam = root / "kernels" / "rmsnorm"
    shutil.copytree(TODAY.package_dir, fam, ignore=shutil.ignore_patterns("__pycache__"))
    git(tmp_path, "init", "-q", str(root))
    git(root, "add", ".")
    git(root, "commit", "-qm", "first")
    looped = fam / "looped.py"
    looped.write_text(looped.read_text().replace("DEFAULT_CHUNK = 4096", "DEFAULT_CHUNK = 512"))
    git(root, "commit", "-qam", "smaller chunks")
    return root


def test_two_revisions_side_by_side(repo, tmp_path):
    fam_dir = repo / "kernels" / "rmsnorm"
    old = load_family_at(fam_dir, "HEAD~1", tmp_path / "cache", 0)
    new = load_family_at(fam_dir, "HEAD", tmp_path / "cache", 1)
    assert old.commit == git(repo, "rev-parse", "HEAD~1") and new.subject == "smaller chunks"
    assert old.family.name == new.family.name == "rmsnorm"
    assert old.family is not new.family and discover()["rmsnorm"] is TODAY  # the global registry is untouched
    import sys

    assert sys.modules[f"{old.package}.looped"].DEFAULT_CHUNK == 4096
    assert sys.modules[f"{new.package}.looped"].DEFAULT_CHUNK == 512
    # hashes are of the files as committed (before kprof rewrites their imports), as a normal run records
    blob = subprocess.run(["git", "-C", str(repo), "show", "HEAD:kernels/rmsnorm/looped.py"], capture_output=True,
                          check=True).stdout
    import hashlib

    assert new.source_hashes["kernels/rmsnorm/looped.py"] == hashlib.sha256(blob).hexdigest()[:16]
    assert old.source_hashes["kernels/rmsnorm/looped.py"] != new.source_hashes["kernels/rmsnorm/looped.py"]


def test_both_revisions_compute_correct_results(repo, tmp_path):
    from kprof.harness import BenchSettings, run_case
    from kprof.registry import Case

    fam_dir = repo / "kernels" / "rmsnorm"
    for slot, rev in enumerate(("HEAD~1", "HEAD")):
        fr = load_family_at(fam_dir, rev, tmp_path / "cache", slot)
        case = Case("rmsnorm", "triton_looped", (3, 1500), "fp32")
        res = run_case(fr.family, fr.family.providers["triton_looped"], case, device=DEVICE,
                       settings=BenchSettings(seed=3), timing=False)
        assert res.status == "ok", res.note


def test_bad_revisions_are_clear(repo, tmp_path):
    fam_dir = repo / "kernels" / "rmsnorm"
    with pytest.raises(RevisionError, match="no such commit, branch or tag"):
        load_family_at(fam_dir, "nosuchbranch", tmp_path / "c")
    (repo / "kernels" / "other").mkdir()
    (repo / "kernels" / "other" / "x.py").write_text("x = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "other")
    with pytest.raises(RevisionError, match="did not exist at that revision"):
        load_family_at(repo / "kernels" / "other", "HEAD~1", tmp_path / "c")


def _in_git_checkout() -> bool:
    cp = subprocess.run(["git", "-C", str(TODAY.package_dir), "rev-parse", "HEAD"], capture_output=True)
    return cp.returncode == 0


@pytest.mark.skipif(not _in_git_checkout(), reason="needs the kprof sources in a git checkout")
@pytest.mark.skipif(HAS_CUDA, reason="an in-process interpreter-mode run needs kernels imported under the "
                    "interpreter, which a GPU machine's test process did not do")
def test_interleaved_runs_of_two_revisions(tmp_path):
    """kprof profile rmsnorm --rev HEAD --rev HEAD: two runs, cases interleaved, records say which revision."""
    from kprof.diff import diff_runs
    from kprof.harness import BenchSettings
    from kprof.runner import ProfileOptions, profile_runs
    from kprof.store import RunStore

    opts = ProfileOptions(family="rmsnorm", providers=("triton_tuned", "torch_eager"), shapes=((3, 37), (2, 300)),
                          dtypes=("fp32",), mode="interpreter", settings=BenchSettings(seed=2),
                          store=str(tmp_path / "s.db"), revisions=("HEAD", "HEAD"))
    order = []
    ids = profile_runs(opts, lambda phase, done, total, label: order.append(label) if phase == "cases" else None)
    assert len(ids) == 2
    st = RunStore(tmp_path / "s.db")
    head = subprocess.run(["git", "-C", str(TODAY.package_dir), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    for run_id in ids:
        run = st.run(run_id)
        assert run["status"] == "complete" and run["git_commit"] == head and run["git_dirty"] == 0
        assert run["config"]["revision"] == "HEAD" and run["config"]["interleaved_revisions"] == ["HEAD", "HEAD"]
        assert "at --rev HEAD" in run["git_note"]
        m = st.metrics(run_id)
        assert len(m) == 4 and m["ok"].all()
    res = diff_runs(st, ids[0], ids[1])
    assert res.comparison == "interleaved"
    assert any("interpreter run" in w for w in res.warnings)  # no GPU timings: correctness verdicts only
    assert res.cases.empty and len(res.correctness) == 4
    assert set(res.correctness["verdict"]) == {"SAME-CORRECT"}
