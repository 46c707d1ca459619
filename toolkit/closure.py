"""The kernel code a family runs: its import closure under ``kernels/``, found from the code itself.

A family is its folder ``kernels/FAMILY/`` *and* every module under ``kernels/`` that folder imports,
directly or through other modules: the shared library ``kernels/lib/`` (``checks.py``, ``gated.py`` where
silu_mul and gelu_mul keep their kernels' common building blocks...), other families' public modules
(rmsnorm_linear imports rmsnorm). :func:`family_closure` reads each file's syntax tree (never runs it) and
follows, recursively:

* ``import kprof.kernels.X.Y`` and ``from kprof.kernels.X import Y`` (Y a module or a name), ``from
  kprof.kernels import X``, relative imports (``from . import x``, ``from ..X import y``), wherever they
  are written (a lazy import inside a function counts like one at the top);
* ``importlib.import_module("kprof.kernels.X")`` / ``__import__`` with a literal name;
* ``load_family_modules(__name__, __path__)`` (a family folder's ``__init__``): every module of that folder;
* importing ``kprof.kernels.X.Y`` runs the ``__init__`` of ``X`` too, so it is part of the closure.

Modules of ``kprof`` outside ``kprof.kernels`` (``kprof.registry``, ``kprof.launch``...) are the *harness*:
listed, never part of the closure. ``kernels/__init__.py`` (the discovery of every family) is harness too.

What it cannot follow it refuses with :class:`ClosureError`, saying which file, which line and why: an import
of a ``kprof.kernels`` module that does not exist in that tree, a dynamic import whose name is computed, a
relative import that leaves ``kernels/``, ``kprof.kernels`` reached as an attribute (of ``kprof`` by any name), the
registry's lookups (``get_family``, ``registered_families``: today's families) reached by any route. A module found
both as ``X.py`` and ``X/__init__.py`` is the package, as Python imports it. The same function serves
the working tree (a normal run) and a git commit (``--rev``), so both hash the same files the same way.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kprof.errors import KprofError

ROOT = "kprof.kernels"
HASHED_SUFFIXES = (".py", ".yaml")


class ClosureError(KprofError):
    pass


@dataclass(frozen=True)
class Closure:
    family: str
    files: tuple[str, ...]
    """Paths under ``kernels/`` (``kernels/lib/gated.py``, ``kernels/silu_mul/family.py``...): every module of the
    closure and the family folder's own other files (``sweep.yaml``)."""
    harness: tuple[str, ...]
    """``kprof`` modules outside ``kprof.kernels`` the closure imports (today's code in every run)."""

    def hashes(self, read: Callable[[str], bytes]) -> dict[str, str]:
        """``{path: sha256 prefix}`` of the closure's Python and YAML files, of the bytes ``read`` gives
        (:func:`source_digest`)."""
        return {f: source_digest(read(f)) for f in self.files if f.endswith(HASHED_SUFFIXES)}


def source_digest(data: bytes) -> str:
    """sha256 prefix of a source file with its line endings as LF. Why: git may store LF and check out CRLF
    (``eol=crlf``, ``core.autocrlf``) with the tree still clean, and Python and YAML read both alike; hashed as
    they lie, a plain run of a commit and ``--rev`` of it recorded different hashes for the same code."""
    return hashlib.sha256(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")).hexdigest()[:16]


class _Tree:
    """The files of one ``kernels/`` tree (paths relative to it, posix), from disk or from a git commit."""

    def __init__(self, paths: set[str], read: Callable[[str], bytes], where: str) -> None:
        self.paths = paths
        self.read = read
        self.where = where  # "the working tree", "commit 1a2b3c4d5e"

    def module_file(self, module: str) -> str | None:
        """``kprof.kernels.a.b`` -> ``a/b.py`` or ``a/b/__init__.py`` where the tree has it."""
        parts = module.split(".")[2:]
        if not parts:
            return "__init__.py"
        stem = "/".join(parts)
        # a package first, as Python's finder looks: with both there, ``import`` runs ``stem/__init__.py``
        for cand in (f"{stem}/__init__.py", f"{stem}.py"):
            if cand in self.paths:
                return cand
        return None


def working_tree(kernels_dir: Path) -> _Tree:
    """The ``kernels/`` folder on disk."""
    kernels_dir = kernels_dir.resolve()
    paths = {
        p.relative_to(kernels_dir).as_posix()
        for p in kernels_dir.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    }
    return _Tree(paths, lambda rel: (kernels_dir / rel).read_bytes(), "the working tree")


def git_tree(paths: set[str], read: Callable[[str], bytes], commit: str) -> _Tree:
    """``kernels/`` at a commit: ``paths`` relative to it, ``read(path)`` its blob."""
    return _Tree(paths, read, f"commit {commit[:10]}")


def family_closure(tree: _Tree, family: str) -> Closure:
    """The closure of ``kernels/FAMILY`` in ``tree`` (see the module docstring)."""
    if f"{family}/__init__.py" not in tree.paths:
        if any(p.startswith(f"{family}/") for p in tree.paths):
            raise ClosureError(
                f"kernels/{family}/ in {tree.where} has no __init__.py, so it is no family package kprof can import"
            )
        raise ClosureError(
            f"kernels/{family}/ does not exist in {tree.where}: the family did not exist at that revision"
        )
    own = sorted(p for p in tree.paths if p.startswith(f"{family}/"))
    todo = [p for p in own if p.endswith(".py")]
    modules: set[str] = set()
    harness: set[str] = set()
    while todo:
        path = todo.pop()
        if path in modules:
            continue
        modules.add(path)
        for dep in _imports_of(tree, path, harness):
            if dep not in modules:
                todo.append(dep)
    files = sorted(set(own) | modules)
    return Closure(family, tuple(f"kernels/{f}" for f in files), tuple(sorted(harness)))


# ----------------------------------------------------------------------------------------------- imports
def _module_name(path: str) -> tuple[str, str]:
    """``a/b.py`` -> (``kprof.kernels.a.b``, its package ``kprof.kernels.a``); a package's ``__init__`` is
    its own package."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        name = ".".join([ROOT, *parts[:-1]])
        return name, name
    name = ".".join([ROOT, *parts])
    return name, name.rsplit(".", 1)[0]


def _imports_of(tree: _Tree, path: str, harness: set[str]) -> list[str]:
    """Files under ``kernels/`` that importing ``path`` imports (parents' ``__init__`` included)."""
    where = f"kernels/{path} in {tree.where}"
    try:
        mod = ast.parse(tree.read(path), filename=f"kernels/{path}")
    except SyntaxError as exc:
        raise ClosureError(
            f"{where} does not parse ({exc.msg}, line {exc.lineno}); kprof reads its imports "
            "from the code, so it cannot load this revision"
        ) from None
    name, package = _module_name(path)
    out: list[str] = []
    kprof_names = _names_of_kprof(mod)

    def need(module: str, line: int, what: str = "") -> None:
        """``module`` (absolute) is imported at ``line``: add it and its parent packages, or refuse."""
        if module != ROOT and not module.startswith(ROOT + "."):
            if module.startswith("kprof."):
                harness.add(module)
            return
        parts = module.split(".")
        for i in range(3, len(parts) + 1):
            sub = ".".join(parts[:i])
            found = tree.module_file(sub)
            if found is None:
                raise ClosureError(
                    f"{where}, line {line}: imports {what or module}, but there is no "
                    f"kernels/{'/'.join(parts[2:i])}.py nor kernels/{'/'.join(parts[2:i])}/__init__.py "
                    f"in {tree.where}; kprof loads only kernel code that exists there"
                )
            out.append(found)

    for node in ast.walk(mod):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == ROOT:
                    raise ClosureError(
                        f"{where}, line {node.lineno}: `import {ROOT}` reaches the package of every "
                        "family (the harness's discovery), not one module; import the module it "
                        f"uses (`from {ROOT} import X`)"
                    )
                need(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, name, package, where)
            if base == "kprof" and any(a.name == "kernels" for a in node.names):
                raise ClosureError(
                    f"{where}, line {node.lineno}: `from kprof import kernels` cannot be rewritten to "
                    f"the revision's copy; write `from {ROOT} import X` for the module it uses"
                )
            if base == ROOT:
                for alias in node.names:
                    sub = f"{ROOT}.{alias.name}"
                    if alias.name == "*" or tree.module_file(sub) is None:
                        raise ClosureError(
                            f"{where}, line {node.lineno}: `from {ROOT} import {alias.name}` names no module "
                            f"kernels/{alias.name}.py in {tree.where} (and kernels/__init__.py, the family "
                            "discovery, is harness, not loaded at a revision)"
                        )
                    need(sub, node.lineno)
                continue
            if base == "kprof.registry" and {a.name for a in node.names} & _REGISTRY_LOOKUPS:
                raise ClosureError(
                    f"{where}, line {node.lineno}: looks families up by name in kprof's registry "
                    f"({', '.join(sorted({a.name for a in node.names} & _REGISTRY_LOOKUPS))}), which "
                    "holds today's kernels, not the revision's; take the family object by import"
                )
            need(base, node.lineno)
            if base.startswith(ROOT + "."):
                for alias in node.names:
                    if alias.name != "*" and tree.module_file(f"{base}.{alias.name}") is not None:
                        need(f"{base}.{alias.name}", node.lineno)
            elif base == "kprof":
                harness.update(f"{base}.{a.name}" for a in node.names if _is_harness_module(f"{base}.{a.name}"))
        elif isinstance(node, ast.Call):
            _refuse_registry_lookup(_getattr_name(node), node.lineno, where)
            out += _dynamic_import(node, tree, path, package, where, need)
        elif isinstance(node, ast.Attribute):
            if node.attr == "kernels" and isinstance(node.value, ast.Name) and node.value.id in kprof_names:
                raise ClosureError(
                    f"{where}, line {node.lineno}: uses `kprof.kernels` as an attribute (of "
                    f"`{node.value.id}`), which kprof cannot point at the revision's copy; import the module instead"
                )
            _refuse_registry_lookup(node.attr, node.lineno, where)
    return out


def _names_of_kprof(mod: ast.Module) -> set[str]:
    """The names the ``kprof`` package itself is bound to in ``mod``: ``kprof`` (``import kprof``, ``import
    kprof.launch``) and any ``import kprof as k``, so ``k.kernels`` is seen as ``kprof.kernels``."""
    names = {"kprof"}
    for node in ast.walk(mod):
        if isinstance(node, ast.Import):
            names.update(a.asname for a in node.names if a.name == "kprof" and a.asname)
    return names


def _getattr_name(node: ast.Call) -> str | None:
    """The literal attribute name of ``getattr(obj, "name")``, else None."""
    if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
        arg = node.args[1]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    return None


def _refuse_registry_lookup(attr: str | None, line: int, where: str) -> None:
    """``registry.get_family(...)`` (the module reached by any name, or ``getattr``) returns today's families,
    as ``from kprof.registry import get_family`` does. kprof cannot tell which object an attribute is read
    from, so the name alone is refused."""
    if attr in _REGISTRY_LOOKUPS:
        raise ClosureError(
            f"{where}, line {line}: reads `{attr}`, kprof's registry lookup, which holds today's kernels, "
            "not the revision's; take the family object by import (if it is a method of your own, rename it)"
        )


def _is_harness_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _absolute(node: ast.ImportFrom, name: str, package: str, where: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    if node.level - 1 > len(parts) - 2:  # above kprof.kernels
        raise ClosureError(
            f"{where}, line {node.lineno}: a relative import ({'.' * node.level}{node.module or ''}) "
            f"that leaves kernels/; import harness modules absolutely (`from kprof.X import ...`)"
        )
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


_IMPORTERS = ("import_module", "__import__")
# harness functions that hand back *today's* families: kernel code reaching them at a revision would run
# today's kernels under the revision's name (kernels/ops.py does, which is why no family imports it)
_REGISTRY_LOOKUPS = {"get_family", "registered_families"}


def _dynamic_import(
    node: ast.Call, tree: _Tree, path: str, package: str, where: str, need: Callable[..., None]
) -> list[str]:
    func = node.func
    fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if fname == "load_family_modules":
        args = [a.id if isinstance(a, ast.Name) else None for a in node.args]
        if args != ["__name__", "__path__"] or not path.endswith("__init__.py"):
            raise ClosureError(
                f"{where}, line {node.lineno}: load_family_modules is only followed as "
                "`load_family_modules(__name__, __path__)` in a family folder's __init__.py"
            )
        folder = path[: -len("__init__.py")]
        return sorted(p for p in tree.paths if _is_family_module(p, folder))
    if fname not in _IMPORTERS:
        return []
    arg = node.args[0] if node.args else None
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)) or arg.value.startswith("."):
        raise ClosureError(
            f"{where}, line {node.lineno}: a dynamic import ({fname}) whose module name is not a "
            "literal absolute name; kprof cannot tell which kernel code it loads, so it cannot "
            "load this revision faithfully"
        )
    need(arg.value, node.lineno)
    return []


def absolute_imports(source: bytes) -> list[tuple[int, str]]:
    """``(line, module)`` of every import ``source`` names absolutely: ``import X``, ``from X import ...`` and
    ``import_module`` / ``__import__`` of a literal name (what Python resolves whatever the text looks like)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args:
            func, arg = node.func, node.args[0]
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if fname in _IMPORTERS and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.append((node.lineno, arg.value))
    return out


def _is_family_module(path: str, folder: str) -> bool:
    """What ``pkgutil.iter_modules`` + ``load_family_modules`` import from ``folder``: its ``*.py`` modules
    and sub-packages not starting with ``_``."""
    if not path.startswith(folder):
        return False
    rest = path[len(folder) :].split("/")
    if rest[0].startswith("_"):
        return False
    if len(rest) == 1:
        return rest[0].endswith(".py")
    return len(rest) == 2 and rest[1] == "__init__.py"


@dataclass(frozen=True)
class Sources:
    """What a run records about its kernel code: the closure's hashes, and where its files came from."""

    hashes: dict[str, str]
    record: dict
    """``{"kernels_from": ..., "files": [...], "harness": [...]}`` (with ``"error"`` when the closure could
    not be found and only the family folder was hashed)."""


def working_tree_sources(family_dir: Path) -> Sources:
    """The closure of a family as it is on disk (a normal run), hashed as :func:`kprof.revisions` hashes a
    commit's, so a run of commit X and a ``--rev X`` run record the same hashes.

    Where the closure cannot be followed the run still goes ahead (Python imported the code; only the record
    is partial): the family folder alone is hashed and the record says why."""
    family_dir = Path(family_dir).resolve()
    tree = working_tree(family_dir.parent)
    try:
        closure = family_closure(tree, family_dir.name)
    except ClosureError as exc:
        own = sorted(f"kernels/{p}" for p in tree.paths if p.startswith(f"{family_dir.name}/"))
        closure = Closure(family_dir.name, tuple(own), ())
        return Sources(
            closure.hashes(lambda f: tree.read(f.removeprefix("kernels/"))),
            {
                "kernels_from": "working tree",
                "files": list(own),
                "harness": [],
                "error": f"only kernels/{family_dir.name}/ hashed: {exc}",
            },
        )
    return Sources(
        closure.hashes(lambda f: tree.read(f.removeprefix("kernels/"))),
        {"kernels_from": "working tree", "files": list(closure.files), "harness": list(closure.harness)},
    )
