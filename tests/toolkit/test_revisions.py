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
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A temporary repository with two commits of kernels/: the second changes rmsnorm's looped chunk."""
    root = tmp_path / "repo"
    fam = root / "kernels" / "rmsnorm"
    shutil.copytree(TODAY.package_dir.parent, root / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
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
    blob = subprocess.run(
        ["git", "-C", str(repo), "show", "HEAD:kernels/rmsnorm/looped.py"], capture_output=True, check=True
    ).stdout
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
        res = run_case(
            fr.family,
            fr.family.providers["triton_looped"],
            case,
            device=DEVICE,
            settings=BenchSettings(seed=3),
            timing=False,
        )
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
@pytest.mark.skipif(
    HAS_CUDA,
    reason="an in-process interpreter-mode run needs kernels imported under the "
    "interpreter, which a GPU machine's test process did not do",
)
def test_interleaved_runs_of_two_revisions(tmp_path):
    """kprof profile rmsnorm --rev HEAD --rev HEAD: two runs, cases interleaved, records say which revision."""
    from kprof.diff import diff_runs
    from kprof.harness import BenchSettings
    from kprof.runner import ProfileOptions, profile_runs
    from kprof.store import RunStore

    opts = ProfileOptions(
        family="rmsnorm",
        providers=("triton_tuned", "torch_eager"),
        shapes=((3, 37), (2, 300)),
        dtypes=("fp32",),
        mode="interpreter",
        settings=BenchSettings(seed=2),
        store=str(tmp_path / "s.db"),
        revisions=("HEAD", "HEAD"),
    )
    order = []
    ids = profile_runs(opts, lambda phase, done, total, label: order.append(label) if phase == "cases" else None)
    assert len(ids) == 2
    st = RunStore(tmp_path / "s.db")
    head = subprocess.run(
        ["git", "-C", str(TODAY.package_dir), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
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


def test_a_family_at_a_revision_runs_the_other_families_modules_it_imports_at_that_revision(repo, tmp_path):
    """rmsnorm_linear imports rmsnorm's kernels: at each revision they come from that revision, in one process
    (an A/A pair of one commit too), and nothing enters today's registry."""
    import sys

    from kprof.registry import registered_families

    before = dict(registered_families())
    fam_dir = repo / "kernels" / "rmsnorm_linear"
    loads = [
        load_family_at(fam_dir, rev, tmp_path / "cache", slot) for slot, rev in enumerate(("HEAD~1", "HEAD", "HEAD"))
    ]
    chunks = [sys.modules[f"{fr.package.rsplit('.', 1)[0]}.rmsnorm.looped"].DEFAULT_CHUNK for fr in loads]
    assert chunks == [4096, 512, 512]
    assert loads[1].family is not loads[2].family  # the A/A pair: two separate copies
    commons = {id(sys.modules[f"{fr.package.rsplit('.', 1)[0]}.lib.checks"]) for fr in loads}
    assert len(commons) == 3  # kernels/lib/checks.py: one module per load
    assert registered_families() == before and discover()["rmsnorm"] is TODAY
    assert "kernels/rmsnorm/looped.py" in loads[0].closure.files
    assert loads[0].source_hashes["kernels/rmsnorm/looped.py"] != loads[1].source_hashes["kernels/rmsnorm/looped.py"]
    assert loads[1].source_hashes == loads[2].source_hashes


def test_the_replay_child_imports_the_revision_copy_not_todays_kernels(repo, tmp_path):
    """What an external profiler's replay child does with a --rev family: only the copy is imported."""
    import sys

    fr = load_family_at(repo / "kernels" / "rmsnorm_linear", "HEAD~1", tmp_path / "cache", 0)
    code = (
        "import sys\n"
        "from kprof.revisions import import_loaded\n"
        "from kprof.registry import registered_families\n"
        f"fam = import_loaded({fr.package!r}, {str(fr.root)!r})\n"
        "mods = sorted(m for m in sys.modules if m.startswith('kprof.kernels'))\n"
        f"root = {fr.package.rsplit('.', 1)[0]!r}\n"
        "print(fam.name, sys.modules[root + '.rmsnorm.looped'].DEFAULT_CHUNK, len(registered_families()), mods)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "TRITON_INTERPRET": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["rmsnorm_linear", "4096", "0", "[]"]


def test_two_families_of_one_commit_share_its_copy_whatever_the_store(repo, tmp_path):
    """silu_mul then gelu_mul at one commit (one slot), loaded with two different stores in one process: the
    second adds its files to the copy already imported, and both use that copy's kernels/lib/gated.py."""
    import sys

    silu = load_family_at(repo / "kernels" / "silu_mul", "HEAD", tmp_path / "store1", 5)
    gelu = load_family_at(repo / "kernels" / "gelu_mul", "HEAD", tmp_path / "store2", 5)
    assert silu.root == gelu.root and gelu.family.name == "gelu_mul"
    root = silu.package.rsplit(".", 1)[0]
    assert sys.modules[f"{gelu.package}.family"].gated is sys.modules[f"{root}.lib.gated"]
