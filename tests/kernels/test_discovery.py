"""A new kernel family is one new folder: with no other file edited, it shows in ``kprof families`` and in
the oracle tests. Checked on a temporary copy of the package, with a family copied from the smallest one
under another name."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kprof
from kprof.kernels import LIBRARY, discover, family_folders

REPO = Path(__file__).resolve().parents[2]
NEW = "throwaway_mul"


def _smallest_family(kernels: Path) -> str:
    sizes = {name: sum(f.stat().st_size for f in (kernels / name).glob("*.py")) for name in family_folders()}
    return min(sizes, key=sizes.get)


def _package_copy(tmp: Path) -> Path:
    """``tmp/kprof`` laid out as the installed package is (``pyproject.toml``'s package-dir mapping)."""
    root = tmp / "kprof"
    shutil.copytree(Path(kprof.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    for sub in ("kernels", "profilers", "dashboards"):
        shutil.copytree(REPO / sub, root / sub, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _add_family(kernels: Path, source: str, name: str) -> None:
    """Copy ``kernels/source`` to ``kernels/name`` with every mention of its name renamed (its imports too)."""
    shutil.copytree(kernels / source, kernels / name, ignore=shutil.ignore_patterns("__pycache__"))
    for f in (kernels / name).iterdir():
        if f.suffix in (".py", ".yaml"):
            f.write_text(re.sub(rf"\b{source}\b", name, f.read_text()))


@pytest.fixture(scope="module")
def copied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("pkg")
    root = _package_copy(tmp)
    _add_family(root / "kernels", _smallest_family(root / "kernels"), NEW)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp), os.environ.get("PYTHONPATH", "")]),
        "TRITON_INTERPRET": "1",
        "KPROF_STORE": str(tmp / "store"),
    }
    return tmp, env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_the_copy_is_what_runs(copied):
    tmp, env = copied
    out = _run(["-c", "import kprof, kprof.kernels as k; print(kprof.__file__); print(k.__file__)"], env, tmp)
    assert all(line.startswith(str(tmp)) for line in out.split()), out


def test_new_folder_is_listed_by_kprof_families(copied):
    tmp, env = copied
    out = _run(["-c", "from kprof.cli import main; main()", "families"], env, tmp)
    assert NEW in out
    assert NEW not in _run(
        ["-c", "from kprof.cli import main; main()", "families"],
        {**env, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        REPO,
    )


def test_new_folder_is_under_the_oracle_tests(copied):
    tmp, env = copied
    out = _run(
        ["-m", "pytest", str(REPO / "tests/kernels/test_catalog.py"), "--collect-only", "-q", "-p", "no:cacheprovider"],
        env,
        REPO,
    )
    ids = [line for line in out.splitlines() if f"[{NEW}" in line]
    assert any("test_matches_oracle" in i for i in ids), out[-2000:]
    assert any("test_every_family_keeps_the_house_rules" in i for i in ids), out[-2000:]


def test_the_library_is_no_family():
    assert LIBRARY not in discover() and LIBRARY not in family_folders()
    assert (REPO / "kernels" / LIBRARY / "README.md").is_file()


def test_families_import_each_other_only_by_public_names():
    """No family module imports a ``_private`` name or module from another family's folder."""
    pattern = re.compile(r"from kprof\.kernels\.(\w+)(?:\.(\w+))? import ([^\n]+)")
    bad = []
    for f in (REPO / "kernels").glob("*/*.py"):
        for fam, module, names in pattern.findall(f.read_text()):
            if fam in (f.parent.name, LIBRARY):
                continue
            private = [n.strip() for n in names.split(",") if n.strip().startswith("_")]
            if (module or "").startswith("_") or private:
                bad.append(f"{f.relative_to(REPO)}: kprof.kernels.{fam}.{module} {private}")
    assert not bad, bad


def test_no_private_profiler_imports_outside_profilers():
    pattern = re.compile(r"(?:import|from)\s+kprof\.profilers\._\w+|from kprof\.profilers import _\w+")
    bad = [
        str(f.relative_to(REPO))
        for top in ("toolkit", "kernels", "dashboards", "scripts", "benchmarks", "tests")
        for f in (REPO / top).rglob("*.py")
        if pattern.search(f.read_text())
    ]
    assert not bad, f"private profiler modules imported from outside profilers/: {bad}"
