"""End to end, as a user runs it: a planted error in a module *shared* by a family's versions is measured at
each revision, and a wrong kernel fails the command.

A temporary git repository holds a copy of kprof (``toolkit/`` and ``kernels/``). Commit A is today's code;
commit B multiplies ``up`` by 1.05 where ``kernels/lib/gated.py`` loads it (``load_gate_up``, the building block
every silu_mul kernel in ``kernels/silu_mul/kernels.py`` loads its inputs with, outside the family folder). ``kprof``
runs in a child process whose ``kprof`` package is
that copy (``toolkit/`` with ``kernels/`` beside it), so ``--rev`` reads the temporary repository's history.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import kprof
from kprof.store import RunStore

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SRC = Path(kprof.__file__).resolve().parent.parent  # the checkout: toolkit/ and kernels/
TRITON = ("triton_one_row", "triton_tiled", "triton_tuned")
PROVIDERS = ",".join((*TRITON, "torch_eager"))
SHAPES = "3x34,5x130"  # H = 17 and 65: odd, masked tails


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@dataclass(frozen=True)
class Planted:
    repo: Path
    site: Path  # on PYTHONPATH of the child: site/kprof -> repo/toolkit, whose kernels -> repo/kernels
    a: str
    b: str


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Planted:
    tmp = tmp_path_factory.mktemp("e2e")
    repo, site = tmp / "repo", tmp / "site"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(SRC / "toolkit", repo / "toolkit", ignore=ignore)
    shutil.copytree(SRC / "kernels", repo / "kernels", ignore=ignore)
    git(tmp, "init", "-q", str(repo))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "A: today's kernels")
    gated = repo / "kernels" / "lib" / "gated.py"
    text = gated.read_text()
    right = "    return g.to(tl.float32), u.to(tl.float32)\n"
    assert text.count(right) == 1, "lib.gated.load_gate_up's return moved; plant the error elsewhere"
    gated.write_text(text.replace(right, "    return g.to(tl.float32), 1.05 * u.to(tl.float32)\n"))
    git(repo, "commit", "-qam", "B: silu_mul up x1.05 in the shared module")
    # untracked links (git status of tracked files stays clean): the child imports this copy as kprof
    (repo / "toolkit" / "kernels").symlink_to(repo / "kernels", target_is_directory=True)
    site.mkdir()
    (site / "kprof").symlink_to(repo / "toolkit", target_is_directory=True)
    return Planted(repo, site, git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD"))


def run_kprof(p: Planted, store: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(p.site), "KPROF_STORE": str(store)}
    env.pop("KPROF_GIT_COMMIT", None)
    return subprocess.run(
        [sys.executable, "-m", "kprof.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=p.repo.parent,
        env=env,
        timeout=300,
    )


def revision_run_ids(store: Path) -> tuple[str, str]:
    """The run ids of the first and second ``--rev`` of the one interleaved invocation in ``store`` (for later
    checks: ``kprof diff``)."""
    st = RunStore(store)
    runs = [st.run(r) for r in st.runs()["id"]]
    order = runs[0]["config"]["interleaved_revisions"]
    by_rev = {r["config"]["revision"]: r["id"] for r in runs}
    return by_rev[order[0]], by_rev[order[1]]


def hostile_spec(marker: Path) -> str:
    """A rev-spec naming commit B (the youngest whose subject matches ``B: silu``) that is also Python which
    creates ``marker`` if it is ever pasted into code and run."""
    return 'HEAD^{/B: silu|"""if __import__("os").system("touch ' + str(marker) + '")else"""}'


@dataclass(frozen=True)
class RevRuns:
    proc: subprocess.CompletedProcess
    store: Path
    a: str  # run id of --rev A
    b: str  # run id of --rev B


@pytest.fixture(scope="module")
def rev_runs(planted: Planted) -> RevRuns:
    git(planted.repo, "branch", "-f", "A", planted.a)
    store = planted.repo.parent / "rev-store" / "kprof.db"
    # B is named by a rev-spec holding Python: the whole command must treat it as a name (no file appears)
    marker = planted.repo.parent / "X"
    proc = run_kprof(
        planted,
        store,
        "profile",
        "silu_mul",
        "--rev",
        "A",
        "--rev",
        hostile_spec(marker),
        "--mode",
        "interpreter",
        "-p",
        PROVIDERS,
        "-s",
        SHAPES,
        "-d",
        "fp32",
        "--profiler",
        "none",
        "--seed",
        "7",
    )
    assert not marker.exists()
    a, b = revision_run_ids(store)
    return RevRuns(proc, store, a, b)


def test_rev_measures_the_shared_module_at_each_revision(rev_runs: RevRuns, planted: Planted):
    st = RunStore(rev_runs.store)
    ra, rb = st.run(rev_runs.a), st.run(rev_runs.b)
    assert (ra["git_commit"], rb["git_commit"]) == (planted.a, planted.b)
    # the closure is hashed: lib/gated.py differs, the family folder and lib/checks.py do not
    ha, hb = ra["source_hashes"], rb["source_hashes"]
    assert set(ha) == set(hb) >= {"kernels/lib/gated.py", "kernels/lib/checks.py", "kernels/silu_mul/kernels.py"}
    assert [f for f in ha if ha[f] != hb[f]] == ["kernels/lib/gated.py"]
    src = rb["config"]["sources"]
    assert src["kernels_from"] == f"revision {planted.b}" and "kernels/lib/gated.py" in src["files"]
    assert "kprof.registry" in src["harness"] and not any(h.startswith("kprof.kernels") for h in src["harness"])
    lib = [f for f in src["files"] if f.startswith("kernels/lib/")]  # gated.py, plans.py, checks.py...
    assert len(lib) >= 4 and f"kernel modules it imports (kernels/lib/ ({len(lib)} files))" in rb["report_md"]
    ma, mb = st.metrics(rev_runs.a), st.metrics(rev_runs.b)
    assert len(ma) == len(mb) == 4 * 2
    assert (ma["status"] == "ok").all(), ma[["case", "status", "note"]]
    tri = mb["provider"].isin(TRITON)
    assert (mb.loc[tri, "status"] == "fail").all() and (mb.loc[~tri, "status"] == "ok").all()
    # every output scaled by 1.05: relative error 0.05 (up to fp32 rounding), far above fp32's 1e-5
    assert ((mb.loc[tri, "max_rel_err"] - 0.05).abs() < 1e-4).all(), mb.loc[tri, "max_rel_err"]


def test_rev_run_with_a_failing_revision_exits_1_and_names_each_case(rev_runs: RevRuns):
    proc = rev_runs.proc
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("kprof: FAIL ")]
    assert len(lines) == 3 * 2, proc.stderr[-3000:]  # B's Triton cases, none of A's
    assert all(
        f"run {rev_runs.b}, --rev HEAD^{{/B: silu|" in ln and "silu_mul/triton_" in ln and "tolerance" in ln
        for ln in lines
    )
    assert "## " in proc.stdout  # both reports printed before the verdict


def test_diff_of_the_two_revisions_fails_on_the_correctness_regression(rev_runs: RevRuns, planted: Planted):
    """kprof diff A B: B's Triton cases are BROKEN (correct in A, wrong in B); --fail-on-regression exits 1."""
    out = rev_runs.store.parent / "diff.json"
    proc = run_kprof(
        planted, rev_runs.store, "diff", rev_runs.a, rev_runs.b, "--fail-on-regression", "--json", str(out)
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    broken = sorted(res["correctness_regressions"])
    assert len(broken) == 3 * 2 and all(c.split("/")[1] in TRITON for c in broken)
    assert res["correctness_counts"]["SAME-CORRECT"] == 2  # torch_eager at both shapes
    rows = {c["case"]: c for c in res["correctness"]}
    assert all(rows[c]["verdict"] == "BROKEN" and "tolerance" in rows[c]["why"] for c in broken)
    assert sum(ln.startswith("correctness regression:") for ln in proc.stderr.splitlines()) == len(broken)
    assert not res["cases"]  # interpreter runs: no timing rows, correctness only
    back = run_kprof(planted, rev_runs.store, "diff", rev_runs.b, rev_runs.a, "--fail-on-regression")
    assert back.returncode == 0 and "FIXED" in back.stdout


def test_normal_run_of_a_wrong_kernel_exits_1_and_records_the_same_hashes(rev_runs: RevRuns, planted: Planted):
    """The working tree is commit B: a plain run fails its Triton cases, and records B's closure hashes."""
    store = planted.repo.parent / "plain-store" / "kprof.db"
    args = (
        "profile",
        "silu_mul",
        "--mode",
        "interpreter",
        "-p",
        "triton_tuned,torch_eager",
        "-s",
        "3x34",
        "-d",
        "fp32",
        "--profiler",
        "none",
    )
    proc = run_kprof(planted, store, *args)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert [ln.split(" [")[0] for ln in proc.stderr.splitlines() if ln.startswith("kprof: FAIL")] == [
        "kprof: FAIL silu_mul/triton_tuned/3x34/fp32"
    ]
    st = RunStore(store)
    run = st.run("latest")
    assert run["git_commit"] == planted.b and not run["git_dirty"]
    assert run["source_hashes"] == RunStore(rev_runs.store).run(rev_runs.b)["source_hashes"]
    assert run["config"]["sources"]["kernels_from"] == "working tree"

    allowed = run_kprof(planted, store, *args, "--allow-failures")
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    assert "--allow-failures" in allowed.stderr and "kprof: FAIL silu_mul/triton_tuned/3x34/fp32" in allowed.stderr
    assert len(RunStore(store).runs()) == 2  # both runs stored whatever the exit status


def test_rev_names_are_data(planted: Planted, tmp_path):
    """A rev-spec or a branch name holding Python never runs: loading it creates no file, and a name
    starting with '-' never reaches git as an option."""
    from kprof.revisions import RevisionError, load_family_at

    marker = tmp_path / "X"
    fam_dir = planted.repo / "kernels" / "silu_mul"
    spec = hostile_spec(marker)
    branch = 'a"""if(__import__("pathlib").Path("' + str(marker) + '").touch())else"""'
    git(planted.repo, "branch", "-f", branch, planted.a)
    got = load_family_at(fam_dir, spec, tmp_path / "cache", 0)
    assert got.commit == planted.b  # the regex matched B's subject: resolved as a name, nothing executed
    assert load_family_at(fam_dir, branch, tmp_path / "cache", 1).commit == planted.a
    saved = json.loads((got.root / "closure-silu_mul.json").read_text())
    assert saved["rev"] == spec  # kept as data beside the copy
    assert not marker.exists()
    with pytest.raises(RevisionError, match="cannot start with '-'"):
        load_family_at(fam_dir, "--output=" + str(marker), tmp_path / "cache", 2)
    assert not marker.exists()
