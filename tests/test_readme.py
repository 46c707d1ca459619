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


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert setup_commands()[1] in ci


def test_scripts_are_executable():
    for name in ("run_profile.sh", "run_tests.sh"):
        assert os.access(ROOT / "scripts" / name, os.X_OK)
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
