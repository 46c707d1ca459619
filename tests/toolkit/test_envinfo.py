"""Git state recorded with a run, including on machines where the checkout's .git is stale or missing."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kprof.envinfo import git_state

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_env_override_wins_and_keeps_what_git_said(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("x")
    subprocess.run(["git", "-C", str(tmp_path), "add", "f"], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "m"], check=True
    )
    real = git_state(tmp_path)
    assert real.commit and real.dirty is False and real.note is None
    monkeypatch.setenv("KPROF_GIT_COMMIT", "1234567")
    monkeypatch.setenv("KPROF_GIT_DIRTY", "0")
    got = git_state(tmp_path)
    assert got.commit == "1234567" and got.dirty is False
    assert "KPROF_GIT_COMMIT" in got.note and real.commit[:12] in got.note


def test_outside_git(tmp_path, monkeypatch):
    monkeypatch.delenv("KPROF_GIT_COMMIT", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    got = git_state(tmp_path)
    assert got.commit is None and "not a git checkout" in got.note
