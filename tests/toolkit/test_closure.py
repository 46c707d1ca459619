"""The import closure of a family under kernels/: what is followed, what is refused and why."""

from __future__ import annotations

from pathlib import Path

import pytest

import kprof.kernels
from kprof.closure import ClosureError, family_closure, git_tree, working_tree, working_tree_sources

KERNELS = Path(kprof.kernels.__file__).parent


def tree(files: dict[str, str]):
    return git_tree(set(files), lambda p: files[p].encode(), "0" * 40)


FAMILY_INIT = "from kprof.registry import load_family_modules\nload_family_modules(__name__, __path__)\n"


def test_every_import_form_is_followed():
    files = {
        "fam/__init__.py": FAMILY_INIT,
        "fam/family.py": "from kprof.kernels import _shared as s\nfrom ..other.mod import f\n",
        "fam/v1.py": "from .family import FAMILY\n\ndef run():\n    import kprof.kernels.lazy.deep\n",
        "fam/_private.py": "x = 1\n",  # not imported by anyone and skipped by discovery, but in the folder
        "fam/sweep.yaml": "gpu: {}\n",
        "_shared.py": "from . import _leaf\nfrom kprof.launch import CompiledLauncher\n",
        "_leaf.py": "import importlib\nM = importlib.import_module('kprof.kernels.literal')\n",
        "literal.py": "",
        "other/__init__.py": "",
        "other/mod.py": "def f(): pass\n",
        "lazy/__init__.py": "",
        "lazy/deep.py": "",
        "unused.py": "raise SystemExit('never read as part of fam')\n",
    }
    got = family_closure(tree(files), "fam")
    assert set(got.files) == {f"kernels/{f}" for f in files if f != "unused.py"}
    assert got.harness == ("kprof.launch", "kprof.registry")


@pytest.mark.parametrize(
    "source, why",
    [
        ("from kprof.kernels import nosuch\n", "names no module kernels/nosuch.py"),
        ("import kprof.kernels.gone.mod\n", "no kernels/gone.py nor kernels/gone/__init__.py"),
        ("from kprof.kernels import discover\n", "discovery, is harness"),
        ("import importlib\nimportlib.import_module('kprof.kernels.' + NAME)\n", "dynamic import"),
        ("__import__(name)\n", "dynamic import"),
        ("from ... import registry\n", "leaves kernels/"),
        ("from kprof import kernels\n", "cannot be rewritten"),
        ("import kprof\nkprof.kernels.x\n", "as an attribute"),
        ("def broken(:\n", "does not parse"),
        ("def best():\n    from kprof.registry import get_family\n", "holds today's kernels"),
    ],
)
def test_what_cannot_be_followed_is_refused_with_the_file_and_line(source, why):
    files = {"fam/__init__.py": FAMILY_INIT, "fam/v.py": source}
    with pytest.raises(ClosureError, match=why) as err:
        family_closure(tree(files), "fam")
    assert "kernels/fam/v.py" in str(err.value)


def test_a_missing_family_is_refused():
    with pytest.raises(ClosureError, match="did not exist at that revision"):
        family_closure(tree({"other/__init__.py": ""}), "fam")


def test_real_families_reach_their_shared_modules():
    """The modules outside each folder that its versions really use (a hand-kept list once missed these)."""
    outside = {}
    for fam in ("silu_mul", "gelu_mul", "rmsnorm_linear", "add_rmsnorm", "rmsnorm"):
        files = family_closure(working_tree(KERNELS), fam).files
        outside[fam] = {f for f in files if not f.startswith(f"kernels/{fam}/")}
    lib = {"kernels/lib/__init__.py", "kernels/lib/checks.py", "kernels/lib/launching.py"}
    # the ops' launch plans: the gated families' in the library they share, on the plans' common module; Liger's H limit
    gated = {"kernels/lib/gated.py", "kernels/lib/plans.py", "kernels/lib/peers.py"}
    assert outside["silu_mul"] == outside["gelu_mul"] == lib | gated
    assert {"kernels/rmsnorm/tuned.py", "kernels/rmsnorm/reference.py", "kernels/lib/checks.py"} <= outside[
        "rmsnorm_linear"
    ]
    # add_rmsnorm shares Liger's row limit and the split rule with rmsnorm through the library, not rmsnorm's folder
    # and both launch their wide-row meeting kernels from plans (split_rows.MeetingLaunch, on the plans' module)
    shared = {"kernels/lib/peers.py", "kernels/lib/split_rows.py", "kernels/lib/plans.py"}
    assert outside["rmsnorm"] == outside["add_rmsnorm"] == lib | shared


def test_no_family_reaches_a_family_it_does_not_use():
    """A version launched through its op's plan imports that family's plan only: a module of every op's plans once
    put every family into each closure that imported it, so a change to one family read as a change to all."""
    uses = {"rmsnorm_linear": {"rmsnorm"}, "swiglu": {"silu_mul"}}  # rmsnorm's norm; silu_mul after cuBLAS's products
    for fam in sorted(p.parent.name for p in KERNELS.glob("*/family.py")):
        files = family_closure(working_tree(KERNELS), fam).files
        reached = {f.split("/")[1] for f in files} - {fam, "lib"}
        assert reached == uses.get(fam, set()), f"{fam} reaches {sorted(reached)}"


def test_working_tree_hashes_cover_the_closure():
    src = working_tree_sources(KERNELS / "silu_mul")
    assert "error" not in src.record
    assert {"kernels/lib/gated.py", "kernels/lib/checks.py", "kernels/silu_mul/sweep.yaml"} <= set(src.hashes)
    assert all(len(h) == 16 for h in src.hashes.values())
