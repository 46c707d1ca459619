"""The import closure must not let a revision's kernel code reach today's kernels, nor name a file Python would
not import: each gap here let ``kprof profile FAMILY --rev A --rev B`` measure or record the wrong code."""

from __future__ import annotations

import re

import pytest

from kprof.closure import ClosureError, family_closure, git_tree

FAMILY_INIT = "from kprof.registry import load_family_modules\nload_family_modules(__name__, __path__)\n"


def tree(files: dict[str, str]):
    return git_tree(set(files), lambda p: files[p].encode(), "0" * 40)


@pytest.mark.parametrize(
    "source",
    [
        "from kprof import registry\n\ndef norm():\n    return registry.get_family('rmsnorm')\n",
        "import kprof.registry\n\nALL = kprof.registry.registered_families()\n",
        "import kprof.registry as reg\n\ndef norm():\n    return reg.get_family('rmsnorm')\n",
        "import importlib\n\nLOOKUP = importlib.import_module('kprof.registry').get_family\n",
        "from kprof import registry\n\nLOOKUP = getattr(registry, 'get_family')\n",
    ],
)
def test_registry_lookups_reached_through_the_module_are_refused(source):
    """``from kprof.registry import get_family`` was refused, but ``registry.get_family('rmsnorm')`` was not: it
    hands back today's rmsnorm, so a revision of rmsnorm_linear written that way ran today's norm kernel under the
    revision's name."""
    files = {"fam/__init__.py": FAMILY_INIT, "fam/v.py": source}
    with pytest.raises(ClosureError, match="holds today's kernels") as err:
        family_closure(tree(files), "fam")
    assert re.search(r"kernels/fam/v\.py in commit 0+, line \d", str(err.value))


@pytest.mark.parametrize(
    "source",
    [
        "import kprof as k\n\ndef checks():\n    return k.kernels.lib.checks\n",
        "import kprof.launch as launch, kprof as kp\n\nLIB = kp.kernels.lib\n",
    ],
)
def test_kprof_kernels_reached_through_another_name_for_kprof_is_refused(source):
    """``kprof.kernels`` as an attribute was refused only when the package was bound to the name ``kprof``;
    ``import kprof as k`` then ``k.kernels.lib.checks`` reached today's library from a revision's code."""
    files = {"fam/__init__.py": FAMILY_INIT, "fam/v.py": source, "lib/__init__.py": "", "lib/checks.py": ""}
    with pytest.raises(ClosureError, match="as an attribute") as err:
        family_closure(tree(files), "fam")
    assert re.search(r"kernels/fam/v\.py in commit 0+, line \d", str(err.value))


def test_an_attribute_named_like_a_lookup_on_a_kernel_object_is_still_refused_with_the_reason():
    """The rule is by name, so it says why: kprof cannot tell such a method from the registry's."""
    files = {"fam/__init__.py": FAMILY_INIT, "fam/v.py": "def f(plan):\n    return plan.get_family()\n"}
    with pytest.raises(ClosureError, match="rename it"):
        family_closure(tree(files), "fam")


def test_a_package_shadows_a_module_of_its_name_as_python_imports_it():
    """With ``lib/extra.py`` and ``lib/extra/__init__.py`` both there, Python imports the package; the closure
    named the module file, so a revision's copy held (and ran, and hashed) ``extra.py`` where a plain run of the
    same commit ran ``extra/__init__.py``."""
    files = {
        "fam/__init__.py": FAMILY_INIT,
        "fam/v.py": "from kprof.kernels.lib import extra\n",
        "lib/__init__.py": "",
        "lib/extra.py": "WHO = 'module'\n",
        "lib/extra/__init__.py": "WHO = 'package'\n",
    }
    files_got = family_closure(tree(files), "fam").files
    assert "kernels/lib/extra/__init__.py" in files_got
    assert "kernels/lib/extra.py" not in files_got
