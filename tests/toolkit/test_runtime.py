"""kprof.runtime: every environment variable declared, interpreter mode and Triton patches scoped."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kprof import runtime

REPO = Path(__file__).resolve().parents[2]


def test_every_variable_kprof_reads_is_declared():
    declared = {v.name for v in runtime.ENV_VARS}
    read = set()
    for top in ("toolkit", "kernels", "profilers", "dashboards"):
        for f in (REPO / top).rglob("*.py"):
            read |= set(re.findall(r"""(?:environ(?:\.get)?[\[(]|getenv\(|env\()\s*["']([A-Z_]+)["']""", f.read_text()))
    read |= set(re.findall(r'"(KPROF_[A-Z0-9_]+)"', (REPO / "toolkit" / "tools.py").read_text()))
    assert read - declared == set(), f"read but not declared in kprof.runtime.ENV_VARS: {sorted(read - declared)}"
    assert all(v.meaning and v.read_by for v in runtime.ENV_VARS)


def test_undeclared_variable_is_refused():
    with pytest.raises(KeyError):
        runtime.env("KPROF_NOT_A_THING")


@pytest.mark.parametrize("before", [None, "0", "1"])
def test_interpreter_mode_is_restored(before, monkeypatch):
    if before is None:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    else:
        monkeypatch.setenv("TRITON_INTERPRET", before)
    with runtime.interpreter_mode(True):
        assert runtime.interpreting()
    assert os.environ.get("TRITON_INTERPRET") == before

    @runtime.restores_interpreter_mode
    def switches_it_on_then_fails():
        runtime.use_interpreter()
        assert runtime.interpreting()
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        switches_it_on_then_fails()
    assert os.environ.get("TRITON_INTERPRET") == before


def test_resolve_mode_leaves_no_interpreter_mode_behind(monkeypatch):
    """profile_runs switches the interpreter on for its own run and gives the previous value back."""
    from kprof.runner import resolve_mode

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    mode = runtime.restores_interpreter_mode(resolve_mode)("interpreter")
    assert mode == "interpreter" and "TRITON_INTERPRET" not in os.environ


def test_patches_say_what_they_replace_and_are_undone():
    class Owner:
        def f(self) -> int:
            return 1

    original = Owner.__dict__["f"]
    with runtime.patched([runtime.Patch(Owner, "f", lambda self: 2, "to test")]) as lines:
        assert Owner().f() == 2
        assert lines == [f"{Owner.__qualname__}.f: to test"]
    assert Owner.__dict__["f"] is original and Owner().f() == 1


def test_recording_restores_triton(device):
    from triton.runtime.interpreter import InterpretedFunction

    from kprof.specialization import recording

    before = InterpretedFunction.__dict__["run"]
    with recording() as rec:
        assert InterpretedFunction.__dict__["run"] is not before
    assert InterpretedFunction.__dict__["run"] is before
    assert any("InterpretedFunction.run" in line for line in rec.patched)


@pytest.mark.parametrize("value, expected", [(None, None), ("off", "off"), (" OFF ", "off"), ("1755", 1755.0)])
def test_the_sm_clock_a_gpu_is_locked_at_can_be_given(value, expected, monkeypatch):
    if value is None:
        monkeypatch.delenv("KPROF_SM_CLOCK_MHZ", raising=False)
    else:
        monkeypatch.setenv("KPROF_SM_CLOCK_MHZ", value)
    assert runtime.sm_clock_override() == expected


@pytest.mark.parametrize("value", ["fast", "0", "-5", "nan"])
def test_a_bad_sm_clock_says_what_to_write(value, monkeypatch):
    monkeypatch.setenv("KPROF_SM_CLOCK_MHZ", value)
    with pytest.raises(ValueError, match="give the SM clock in MHz"):
        runtime.sm_clock_override()


def test_the_given_sm_clock_is_the_cold_modes_reference_without_asking_nvidia_smi(monkeypatch):
    """A GPU locked at 1755 MHz (nvidia-smi -lgc) never reaches its 1980: the given clock is the reference,
    so its calls are at full clock; off keeps every call. nvidia-smi is not asked either way."""
    from kprof import device

    monkeypatch.setattr(device, "_nvidia_smi_query", lambda gpu, query: pytest.fail("nvidia-smi was asked"))
    for value, expected in (("1755", 1755.0), ("off", None)):
        monkeypatch.setenv("KPROF_SM_CLOCK_MHZ", value)
        device.max_sm_clock_mhz.cache_clear()
        assert device.max_sm_clock_mhz(0) == expected
    device.max_sm_clock_mhz.cache_clear()


# Objects that hold state for the rest of the process once made at module level. CompiledLauncher and Plans are
# declared by class in kprof.runtime.PROCESS_CACHES (one entry covers every module's); the others by name.
_BY_CLASS = {"CompiledLauncher", "Plans"}
_STATEFUL = _BY_CLASS | {"RouteRace", "SameTensorsMemo", "Lock", "RLock"}


def _module_state(path: Path, module: str) -> list[str]:
    """``module.NAME`` of each module-level name bound to process state: an empty dict, list or set (filled as
    the process runs) or an instance of a class in ``_STATEFUL``; ``CLASS`` for those declared by class."""
    import ast

    found = []
    for node in ast.parse(path.read_text()).body:
        target, value = (
            (node.targets[0], node.value) if isinstance(node, ast.Assign) else (node.target, node.value)
            if isinstance(node, ast.AnnAssign) else (None, None)
        )  # fmt: skip
        if not isinstance(target, ast.Name) or value is None:
            continue
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Call):  # Plans().plans
            value = value.value
        empty = isinstance(value, (ast.Dict, ast.List, ast.Set)) and not (
            getattr(value, "keys", None) or getattr(value, "elts", None)
        )
        empty |= (
            isinstance(value, ast.Call)
            and ast.unparse(value.func) in ("dict", "list", "set")
            and not (value.args or value.keywords)
        )
        made = ast.unparse(value.func).rpartition(".")[2] if isinstance(value, ast.Call) else ""
        if made in _BY_CLASS:
            found.append(made)
        elif empty or made in _STATEFUL:
            found.append(f"{module}.{target.id}")
    return found


def test_every_module_level_state_is_declared():
    """Process-wide state lives in one place: every module-level cache, registry, race, memo and lock of the
    package is named in kprof.runtime (its PROCESS_CACHES, or the docstring's list of side effects)."""
    declared = (REPO / "toolkit" / "runtime.py").read_text()
    roots = {
        "toolkit": "kprof",
        "kernels": "kprof.kernels",
        "profilers": "kprof.profilers",
        "dashboards": "kprof.dashboards",
    }
    state = []
    for top, package in roots.items():
        for f in sorted((REPO / top).rglob("*.py")):
            parts = f.relative_to(REPO / top).with_suffix("").parts
            module = ".".join((package, *parts[:-1])) if parts[-1] == "__init__" else ".".join((package, *parts))
            state += _module_state(f, module)
    assert "kprof.kernels.lib.launching._MEETINGS" in state and "CompiledLauncher" in state  # the scan finds them
    missing = sorted({s for s in state if s not in declared})
    assert missing == [], f"module-level state not declared in kprof.runtime.PROCESS_CACHES: {missing}"


def test_the_variables_that_change_what_runs_are_recorded_and_paths_are_not(monkeypatch):
    """kprof acts on none of these, but a run records them: two runs that differ in them are not comparable as code
    alone (``kprof diff`` says so)."""
    for k in list(os.environ):
        if k.startswith(runtime.RECORDED_ENV_PREFIXES):
            monkeypatch.delenv(k)
    recorded = {
        "TRITON_DEFAULT_FP_FUSION": "0",
        "PTXAS_OPTIONS": "-O1",
        "NVIDIA_TF32_OVERRIDE": "0",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "CUDA_LAUNCH_BLOCKING": "1",
        "TORCHINDUCTOR_MAX_AUTOTUNE": "1",
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
        "DISABLE_PTXAS_OPT": "1",
    }
    left_out = {
        "TRITON_CACHE_DIR": "/tmp/t",
        "TRITON_HOME": "/tmp",
        "CUDA_VISIBLE_DEVICES": "0",
        "TRITON_INTERPRET": "1",
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/i",
        "CUDA_PATH": "/usr/local/cuda",
        "KPROF_PDL": "0",
        "HOME": "/root",
    }
    for k, v in {**recorded, **left_out}.items():
        monkeypatch.setenv(k, v)
    assert runtime.recorded_env() == dict(sorted(recorded.items()))
    from kprof import envinfo

    assert envinfo.versions().env == runtime.recorded_env()
