"""Process state in one place: every environment variable kprof reads, and every process-wide side effect.

Environment variables are declared in :data:`ENV_VARS` (name, meaning, default, who reads it) and read
through :func:`env` or the named accessors below, so ``grep`` for a variable lands here first. Variables kprof does
not act on but records with each run, because they change what runs (Triton's, ptxas's, Inductor's, cuBLAS's, CUDA's,
PyTorch's), are named by :data:`RECORDED_ENV_PREFIXES` and read by :func:`recorded_env`.

Side effects on the process, each scoped or declared:

* **Triton's interpreter** (``TRITON_INTERPRET=1``): ``@triton.jit`` picks the interpreter when a kernel
  is decorated and the kernel wrappers ask :func:`interpreting` on every call, so the variable must stay
  set for as long as interpreted kernels run. :func:`use_interpreter` switches it on; a function wrapped
  in :func:`restores_interpreter_mode` (or a block in :func:`interpreter_mode`) gets the previous value
  back when it returns, so a CPU run inside a longer-lived process (a test, a notebook) does not leak
  interpreter mode into what runs next.
* **Triton monkey-patches** while launches are recorded (:func:`patched`, used by
  :func:`kprof.specialization.recording`): each :class:`Patch` names the attribute it replaces and why;
  all are restored when the block is left, in reverse order. A counter of recordings open
  (:func:`launch_recording`) sends kprof's own fast launch paths through Triton's JIT meanwhile, where the
  patches see them.
* **Dynamo recompile limits** (:func:`raise_dynamo_limits`): raised to at least 1024 for the rest of the
  process on the first ``torch.compile`` provider call. Not restored: compiled functions keep running
  after the call that built them, and a lower limit would silently fall back to eager under the name
  torch.compile.
* **Route races** (:func:`route_race`, :func:`note_route_choice`): a counter of races timing their routes now,
  read by launch recordings, and every race's decision as text, read by the harness into case notes.
* **Module-level state** (compiled launchers keyed by specialisation, launch plans keyed by call signature, GPU
  properties per device, the harness providers' prepared weights, registries, the wide-row launches' lock):
  listed in :data:`PROCESS_CACHES` with what each is keyed by; a test fails on any that is not.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar


@dataclass(frozen=True)
class EnvVar:
    """One environment variable kprof reads."""

    name: str
    meaning: str
    default: str | None  # None: unset means "not given"
    read_by: str


ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(
        "TRITON_INTERPRET",
        "1: Triton kernels run in Triton's CPU interpreter (set by kprof for CPU runs)",
        "0",
        "kprof.runtime.interpreting (kernel wrappers, launch paths); Triton itself at @triton.jit",
    ),
    EnvVar(
        "KPROF_PDL",
        "0: never launch kernels as programmatic dependents (to compare, or to rule PDL out)",
        "1",
        "kprof.kernels.lib.launching.pdl_ready",
    ),
    EnvVar(
        "KPROF_ROUTE_RACE",
        "0: never time the ops' routes against each other on a shape's first call; take the static rule instead "
        "(a floor provider still races its tiles: it must be at its fastest)",
        "1",
        "kprof.kernels.lib.routes.can_race",
    ),
    EnvVar(
        "KPROF_USE_TRITON",
        "1: kprof.kernels.ops calls the best Triton version instead of eager PyTorch",
        "0",
        "kprof.kernels.ops (read once, at import; use_triton() switches it later)",
    ),
    EnvVar(
        "KPROF_STORE",
        "the run store's folder (overridden by --store)",
        None,
        "kprof.store (default store path), kprof.dashboards.data",
    ),
    EnvVar(
        "KPROF_GIT_COMMIT",
        "the git commit to record where the checkout has no .git (a copied tree, a container)",
        None,
        "kprof.envinfo.git_state",
    ),
    EnvVar(
        "KPROF_GIT_DIRTY",
        "with KPROF_GIT_COMMIT: 1 if that tree had uncommitted changes, 0 if not",
        None,
        "kprof.envinfo.git_state",
    ),
    EnvVar(
        "CUDA_VISIBLE_DEVICES",
        "the GPUs this process may use; a fan-out pins each worker to one",
        None,
        "kprof.fanout (GPUs to fan out over), kprof.fanout_worker (its own GPU)",
    ),
    EnvVar(
        "KPROF_SM_CLOCK_MHZ",
        "the SM clock (MHz) the cold mode counts a call at full clock against (95% of it or more) instead of "
        "nvidia-smi's clocks.max.sm: the clock a GPU is locked at (nvidia-smi -lgc); off: keep every cold call",
        None,
        "kprof.runtime.sm_clock_override (kprof.device.max_sm_clock_mhz)",
    ),
    EnvVar("KPROF_NSYS", "path of the nsys binary", None, "kprof.tools.find_tool"),
    EnvVar("KPROF_NCU", "path of the ncu binary", None, "kprof.tools.find_tool"),
    EnvVar("KPROF_ROCPROFV3", "path of the rocprofv3 binary", None, "kprof.tools.find_tool"),
    EnvVar("KPROF_ROCPROF", "path of the rocprof binary", None, "kprof.tools.find_tool"),
    EnvVar(
        "KPROF_TRACES",
        "trace files `kprof dashboard TRACE...` hands its server (os.pathsep between them)",
        None,
        "kprof.dashboards.data",
    ),
    EnvVar(
        "KPROF_TEST_WORKER_EXIT_AT",
        "tests only: fan-out worker exits at these cases (fault injection)",
        None,
        "kprof.fanout_worker",
    ),
    EnvVar(
        "KPROF_TEST_WORKER_HANG_AT",
        "tests only: fan-out worker hangs on this case (timeouts, Ctrl-C)",
        None,
        "kprof.fanout_worker",
    ),
)

_BY_NAME = {v.name: v for v in ENV_VARS}

# Reads of the environment outside this module, with where they are and why they stay there:
NOT_ROUTED: tuple[tuple[str, str], ...] = (
    (
        "KPROF_NSYS/NCU/ROCPROFV3/ROCPROF",
        "toolkit/tools.py find_tool reads its tool's variable from a mapping "
        "it is given (a child's environment can differ from this process's)",
    ),
    (
        "os.environ copies",
        "toolkit/cli.py, toolkit/external.py, toolkit/specialization.py copy the whole "
        "environment for a child process (TRITON_INTERPRET dropped for the sm_90 compile child)",
    ),
)

PROCESS_CACHES: tuple[tuple[str, str], ...] = (
    ("kprof.kernels.lib.launching._PROPERTIES", "GPU properties per device index"),
    ("kprof.kernels.lib.launching._CARVED", "kernel functions whose shared-memory carveout was set"),
    (
        "kprof.kernels.lib.launching._COUNTERS",
        "the split-K kernels' ticket counters per (device index, stream), zero between calls; a CUDA graph's "
        "capture gets counters of its own",
    ),
    (
        "kprof.kernels.lib.launching._MEETINGS",
        "the wide-row kernels' meeting counters per (device index, stream), the tickets drawn at them so far "
        "(the next launch's ticket base) and the workspace of partial sums kept with them; a CUDA graph's capture "
        "gets counters and a workspace of its own",
    ),
    (
        "kprof.kernels.lib.launching.MEETING_LOCK",
        "a lock, not a cache: held by the wide-row launches from taking a stream's ticket base or workspace to "
        "their last launch, so two threads launching on one stream do not interleave there",
    ),
    ("kernel modules' CompiledLauncher objects", "compiled kernels per specialisation key (kprof.launch)"),
    (
        "kprof.kernels.rmsnorm.tuned._plans, kprof.kernels.lib.plans.Plans (each family's op_plan, gated.py, "
        "rmsnorm.tuned's workspace plans); kprof.kernels.lib.plans._EVERY lists every table, for plans.reset()",
        "launch plans per call signature (shapes, strides, dtypes, devices, alignment; never tensor values), "
        "bounded at 4096 each",
    ),
    ("kprof.device.max_sm_clock_mhz", "the GPU's highest SM clock (nvidia-smi) per device index, for the cold mode"),
    (
        "RouteRace objects (kprof.kernels.lib.routes; kprof.kernels.lib.routes._RACES lists them, for decisions()): "
        "kprof.kernels.swiglu.tuned._mid_rows, kprof.kernels.swiglu.tuned._interleaved_ragged, "
        "kprof.kernels.swiglu.tuned._underfilled, "
        "kprof.kernels.rmsnorm_linear.tuned._mid_rows, kprof.kernels.rmsnorm_linear.op_plan._mid_rows, "
        "kprof.kernels.kasmina.floor._tile_race",
        "the route (or the floor's tile) a shape class's first call timed fastest, per (shapes, dtype, device, "
        "strides), bounded at 4096 each; kprof.runtime keeps the latest 4096 decisions as text for the harness",
    ),
    (
        "SameTensorsMemo objects: kprof.kernels.swiglu.tuned.prepared_interleaved, "
        "kprof.kernels.swiglu.baselines._gate_up, kprof.kernels.rmsnorm_linear.fused.prepared_fold, "
        "kprof.kernels.rmsnorm_linear.fused.prepared_held_fold",
        "one derived weight for the harness's providers on prepared weights (`..._prepared`, `triton_prepared_op`), "
        "held with its source tensors and "
        "reused while the same tensor objects come back at the same versions",
    ),
    ("kprof.registry._FAMILIES", "the kernel families by name, registered as kprof.kernels imports each folder"),
    ("kprof.profilers._BACKENDS", "the profiler backends by name, registered as each profiler module is imported"),
    ("kprof.timing._FLUSH", "the read-only L2 flush kernel, compiled on first use"),
    (
        "kprof.specialization._OFFLINE_CACHE",
        "each described launch's registers, spills and shared memory compiled offline for an arch (by a child "
        "process), keyed by the launch's description and the arch",
    ),
)
"""Memoisation of what a result does not depend on (devices, compiled kernels, launch plans keyed by call
signature, never by tensor values), and the harness providers' derived weights (``SameTensorsMemo``: for
timing one fixed input set; an update that bypasses the version counter is not seen there). Model code gets
derived weights only from the prepared objects of :mod:`kprof.kernels.ops`, which the caller builds and
refreshes."""


# Variables kprof does not act on but records with each run (:func:`recorded_env`, in the run's ``versions``), because
# they change what a kernel compiles to (TRITON_DEFAULT_FP_FUSION, whose default Triton 3.10 turns off; PTXAS_OPTIONS;
# TORCHINDUCTOR_* for the torch.compile peers), which library kernel runs and in what precision (NVIDIA_TF32_OVERRIDE,
# CUBLAS*), or how calls run and where their tensors lie (CUDA_LAUNCH_BLOCKING, PYTORCH_CUDA_ALLOC_CONF). ``kprof diff``
# names any that differ between two runs. Left out: where files are (``*_DIR``, ``*_HOME``, ``*_PATH``), which GPUs
# are visible (the device is recorded) and the interpreter switch (the run's mode is).
RECORDED_ENV_PREFIXES = ("TRITON_", "DISABLE_PTXAS_OPT", "PTXAS_", "TORCHINDUCTOR_", "NVIDIA_TF32_", "CUBLAS", "CUDA_",
                         "PYTORCH_")  # fmt: skip
RECORDED_ENV_LEFT_OUT = ("TRITON_INTERPRET", "CUDA_VISIBLE_DEVICES")
RECORDED_ENV_LEFT_OUT_SUFFIXES = ("_DIR", "_HOME", "_PATH")


def recorded_env() -> dict[str, str]:
    """The environment variables of :data:`RECORDED_ENV_PREFIXES` set in this process, by name."""
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith(RECORDED_ENV_PREFIXES)
        and k not in RECORDED_ENV_LEFT_OUT
        and not k.endswith(RECORDED_ENV_LEFT_OUT_SUFFIXES)
    }


def env(name: str) -> str | None:
    """The value of the declared variable ``name``, or its default (``KeyError`` for an undeclared name:
    declare it in :data:`ENV_VARS` first)."""
    var = _BY_NAME[name]
    return os.environ.get(name, var.default)


def interpreting() -> bool:
    """True when Triton kernels run in Triton's CPU interpreter (``TRITON_INTERPRET=1``)."""
    return env("TRITON_INTERPRET") == "1"


def route_races_allowed() -> bool:
    """False when ``KPROF_ROUTE_RACE=0`` keeps the ops' static routing rules (no timing on first calls)."""
    return env("KPROF_ROUTE_RACE") != "0"


@contextmanager
def _counted(counter: list[int]) -> Iterator[None]:
    """``counter[0]`` one higher for the length of the block (blocks nest)."""
    counter[0] += 1
    try:
        yield
    finally:
        counter[0] -= 1


_ROUTE_RACES = [0]  # route races running now (nested: none are)


def route_race() -> contextlib.AbstractContextManager[None]:
    """Marks a route race's timing calls (:mod:`kprof.kernels.lib.routes`), so that a recording of launches
    (:func:`kprof.specialization.recording`) leaves them out: the route picked runs after and is recorded.
    A counter here rather than an attribute of the race's class: a ``--rev`` run loads its own copy of the
    kernels' library, whose races mark the same counter."""
    return _counted(_ROUTE_RACES)


def in_route_race() -> bool:
    """Whether a route race's timing calls are running (:func:`route_race`)."""
    return _ROUTE_RACES[0] > 0


# recordings of launches open now; public so that the launch hot path reads it without a call
# (``kprof.launch.launch_hooks_installed``: a function call there cost about 40 ns a launch on the CPU)
LAUNCH_RECORDINGS = [0]


def launch_recording() -> contextlib.AbstractContextManager[None]:
    """Marks a recording of launches open (:func:`kprof.specialization.recording`). kprof's fast launch paths
    (``kprof.launch.CompiledLauncher`` and the ops API's plans, which launch a compiled kernel directly) ask
    :func:`kprof.launch.launch_hooks_installed` and launch through Triton's JIT while one is, as they do under a
    profiler's launch hook: the recording patches the JIT's path, so a direct launch would go unrecorded."""
    return _counted(LAUNCH_RECORDINGS)


_ROUTE_CHOICES: collections.deque[str] = collections.deque(maxlen=4096)  # the latest races' decisions, described
_ROUTE_CHOICES_MADE = [0]  # how many were ever noted


def note_route_choice(text: str) -> None:
    """Keeps a route race's decision (what it timed, what it chose) for whoever runs the call to read back:
    the harness adds those made during a case to the case's note."""
    _ROUTE_CHOICES.append(text)
    _ROUTE_CHOICES_MADE[0] += 1


def route_choices_made() -> int:
    """How many route races have decided in this process (a mark for :func:`route_choices_since`)."""
    return _ROUTE_CHOICES_MADE[0]


def route_choices_since(mark: int) -> list[str]:
    """The decisions noted after ``mark`` (:func:`route_choices_made`), oldest first (at most the last 4096)."""
    new = _ROUTE_CHOICES_MADE[0] - mark
    return list(_ROUTE_CHOICES)[-new:] if new > 0 else []


def pdl_allowed() -> bool:
    """False when ``KPROF_PDL=0`` turns programmatic dependent launch off."""
    return env("KPROF_PDL") != "0"


def sm_clock_override() -> float | str | None:
    """``KPROF_SM_CLOCK_MHZ``: a clock in MHz, ``"off"``, or None when not given (a value that is neither raises
    a ValueError that says what to write)."""
    value = env("KPROF_SM_CLOCK_MHZ")
    if value is None:
        return None
    if value.strip().lower() == "off":
        return "off"
    try:
        mhz = float(value)
    except ValueError:
        mhz = math.nan
    if not mhz > 0:
        raise ValueError(f"KPROF_SM_CLOCK_MHZ={value!r}: give the SM clock in MHz (e.g. 1755) or off")
    return mhz


def git_override() -> tuple[str, bool | None] | None:
    """``(commit, dirty)`` from ``KPROF_GIT_COMMIT`` / ``KPROF_GIT_DIRTY``, or None when not given."""
    commit = env("KPROF_GIT_COMMIT")
    if not commit:
        return None
    dirty = env("KPROF_GIT_DIRTY")
    return commit, None if dirty is None else dirty == "1"


# ------------------------------------------------------------------------------------ interpreter mode
def use_interpreter() -> None:
    """Switch Triton's interpreter on for what follows (kernel modules imported after this decorate
    interpreted kernels). Call it inside :func:`restores_interpreter_mode` / :func:`interpreter_mode`."""
    os.environ["TRITON_INTERPRET"] = "1"


@contextmanager
def interpreter_mode(on: bool = True) -> Iterator[None]:
    """``TRITON_INTERPRET`` as it is on entry, switched on inside the block when ``on``; restored on exit."""
    before = os.environ.get("TRITON_INTERPRET")
    try:
        if on:
            use_interpreter()
        yield
    finally:
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before


F = TypeVar("F", bound=Callable[..., Any])


def restores_interpreter_mode(fn: F) -> F:
    """``fn`` may switch the interpreter on (:func:`use_interpreter`); the previous value is back when it
    returns or raises."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with interpreter_mode(on=False):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


# ------------------------------------------------------------------------------------- monkey-patches
@dataclass(frozen=True)
class Patch:
    """``owner.name`` replaced by ``replacement`` for the length of a :func:`patched` block, because ``why``."""

    owner: Any
    name: str
    replacement: Any
    why: str

    def describe(self) -> str:
        return f"{getattr(self.owner, '__qualname__', self.owner)}.{self.name}: {self.why}"


@contextmanager
def patched(patches: Sequence[Patch]) -> Iterator[list[str]]:
    """Apply ``patches`` (class attributes as found in the class's own ``__dict__``); yields one line per
    patch saying what it replaces and why; every one is restored on exit, last first."""
    undo: list[tuple[Any, str, Any]] = []
    try:
        for p in patches:
            undo.append((p.owner, p.name, p.owner.__dict__[p.name]))
            setattr(p.owner, p.name, p.replacement)
        yield [p.describe() for p in patches]
    finally:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)


# --------------------------------------------------------------------------------------------- dynamo
DYNAMO_LIMIT = 1024
_DYNAMO_KNOBS = ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit")


def raise_dynamo_limits() -> None:
    """Dynamo's recompile limits raised to at least :data:`DYNAMO_LIMIT` for the rest of the process.

    Why: dynamo recompiles a function for each new shape and dtype (``dynamic=False``); past its default
    limit of 8 it silently falls back to eager, and a sweep would time eager PyTorch under the name
    torch.compile. Knobs this torch does not have are left alone (their names moved between versions)."""
    import torch._dynamo

    for knob in _DYNAMO_KNOBS:
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, max(getattr(torch._dynamo.config, knob), DYNAMO_LIMIT))
