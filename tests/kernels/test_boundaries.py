"""A kernel family is one folder: each family with Triton versions defines its own ``@triton.jit`` kernels in
its folder, and reaches other folders (another family, ``kernels/lib``) only through their public names.
Checked on the source (syntax trees), on the real tree and on small planted trees."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kprof.kernels
from kprof.kernels import discover, family_folders

KERNELS = Path(kprof.kernels.__file__).parent
ROOT = "kprof.kernels"


def _absolute(module: str | None, level: int, package: str) -> str:
    """The absolute name of a ``from`` import's module, relative ones resolved against ``package``."""
    if not level:
        return module or ""
    base = package.split(".")[: len(package.split(".")) - level + 1]
    return ".".join(base + ([module] if module else []))


def _folder(module: str) -> str | None:
    """``kprof.kernels.X...`` -> ``X``; None outside the kernel folders."""
    parts = module.split(".")
    return parts[2] if module.startswith(ROOT + ".") and len(parts) > 2 else None


def foreign_private_uses(kernels: Path, family: str) -> list[str]:
    """``file:line name`` of each private name (``_x``) one family's files take from another folder under
    ``kernels/``: ``from kprof.kernels.other.mod import _x``, or ``mod._x`` on a module imported from there."""
    found = []
    package = f"{ROOT}.{family}"
    for path in sorted((kernels / family).glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        foreign_modules: set[str] = set()  # local names bound to modules of other folders
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                src = _absolute(node.module, node.level, package)
                if _folder(src) in (None, family):
                    continue
                for alias in node.names:
                    if alias.name.startswith("_"):
                        found.append(f"{path.name}:{node.lineno} {src}.{alias.name}")
                    foreign_modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if _folder(alias.name) not in (None, family) and alias.asname:
                        foreign_modules.add(alias.asname)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in foreign_modules
                and node.attr.startswith("_")
            ):
                found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def jit_functions(folder: Path) -> list[str]:
    """Names of the functions in ``folder``'s files decorated ``@triton.jit`` (or ``@jit``)."""
    names = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d).split("(")[0] in ("triton.jit", "jit") for d in node.decorator_list
            ):
                names.append(node.name)
    return names


@pytest.mark.parametrize("family", family_folders())
def test_families_take_only_public_names_from_other_folders(family):
    assert foreign_private_uses(KERNELS, family) == []


def test_the_shared_library_takes_only_public_names_from_the_families():
    """``kernels/lib`` (the ops API's launch plans among it) uses what a family exports, never its internals."""
    assert foreign_private_uses(KERNELS, "lib") == []


@pytest.mark.parametrize("family", family_folders())
def test_a_family_with_triton_versions_defines_its_kernels_in_its_folder(family):
    if not discover()[family].triton_providers():
        pytest.skip(f"{family} has no Triton versions")
    assert jit_functions(KERNELS / family), f"kernels/{family}/ defines no @triton.jit kernel of its own"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_private_names_from_other_folders_are_found(tmp_path):
    kernels = _write(
        tmp_path,
        {
            "fam/a.py": "from kprof.kernels.other.mod import _kernel, public\n",
            "fam/b.py": "from kprof.kernels.lib import gated\nx = gated._tile_launcher\n",
            "fam/c.py": "import kprof.kernels.other.mod as m\nfrom ..other import mod\ny = m._k, mod._j\n",
            "fam/d.py": "from kprof.kernels.fam.a import _own\nfrom .a import _own2\nimport triton\nz = triton._x\n",
        },
    )
    assert foreign_private_uses(kernels, "fam") == [
        "a.py:1 kprof.kernels.other.mod._kernel",
        "b.py:2 gated._tile_launcher",
        "c.py:3 m._k",
        "c.py:3 mod._j",
    ]


def test_jit_functions_are_found_by_their_decorator(tmp_path):
    folder = _write(
        tmp_path,
        {
            "fam/k.py": "import triton\nfrom triton import jit\n\n@triton.jit\ndef _a(x):\n"
            "    pass\n\n@jit\ndef b(x):\n    pass\n\n@triton.autotune([], key=[])\n"
            "@triton.jit(do_not_specialize=['n'])\ndef c(n):\n    pass\n\n"
            "def plain():\n    pass\n"
        },
    )
    assert jit_functions(folder / "fam") == ["_a", "b", "c"]
