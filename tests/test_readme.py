"""README promises exactly two set-up commands; CI must run the test one."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).parents[1]


def setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set-up", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_readme_has_exactly_two_setup_commands():
    cmds = setup_commands()
    assert len(cmds) == 2
    assert cmds[0].startswith("scripts/run_profile.sh rmsnorm")
    assert cmds[1].startswith("scripts/run_tests.sh")


def ci_commands() -> list[str]:
    """.ci/run's commands: its lines less comments, the shell options and the cd to the repository root."""
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    return [
        ln for ln in lines if ln and not ln.startswith("#") and not ln.startswith("set -") and not ln.startswith("cd ")
    ]


def test_ci_runs_exactly_the_readme_test_command():
    """CI must be what a newcomer runs: no installs of its own that would make CI green while the README
    command fails on a fresh machine (the README command installs what its tests need)."""
    assert ci_commands() == [setup_commands()[1]]
    text = (ROOT / ".ci" / "run").read_text()
    assert not re.search(r"\b(pip|pip3)\s+install|-m\s+pip|apt-get|apt\s+install|conda\s+install", text)


def test_readme_test_command_installs_what_the_tests_need():
    script = (ROOT / "scripts" / "run_tests.sh").read_text()
    for need in ("pytest", "hypothesis", "streamlit", "plotly", "playwright", "chromium"):
        assert need in script, need
    extras = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^test = \[.*"pytest.*"hypothesis', extras, re.M)


def test_scripts_are_executable():
    for name in ("run_profile.sh", "run_tests.sh"):
        assert os.access(ROOT / "scripts" / name, os.X_OK)
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
