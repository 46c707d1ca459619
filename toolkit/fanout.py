"""Fan-out: ``kprof profile|sweep ... --workers N|all`` (this host's GPUs) and ``--ray ADDRESS`` (a Ray cluster).

The driver (this module) selects the cases exactly as a one-process run does, starts one worker per GPU
(:mod:`kprof.executors`), hands cases out as workers become free, and alone writes the store: every case a
worker measures comes back as the store writes it would have made (:mod:`kprof.fanout_worker`), plus the
GPU that measured it (UUID, index, name, serial) in the store's ``case_devices`` table.

Start: for a GPU fan-out on this host, the command starts its workers first (:class:`EarlyWorkers`), before
its checks import torch and load the family; each imports torch, initialises CUDA and measures its GPU's
ceilings meanwhile, then waits for the run (:func:`profile_runs_fanout` sends it, or stops the workers when
the run is not the fan-out they were started for).

Placement:

* all ``--rev`` arms of a case run on one worker, interleaved round by round as in a one-process run, so
  a revision comparison never mixes devices;
* when there are enough (shape, dtype) groups (at least four per worker), every provider of one shape and
  dtype runs on the same GPU, so the report's speedups and a sweep's guide compare cases of one device;
  with fewer groups, cases are spread one by one and the report says which comparisons span GPUs.

Trust: a worker whose own selection of cases or measurement settings differ from the driver's (another kprof,
a package installed on its node only), or a replacement worker on a GPU kind the run did not start with, is
refused at its hello: its cases would be stored as others, or under a record that does not describe them.

Faults: a worker that dies or exceeds ``--case-timeout`` loses the case it was measuring; that case is
retried once on another worker (a replacement process is started on the dead one's GPU), and recorded as
an ``error`` case with the reason if it is lost again. Any lost case, failed worker start or lost profiler
pass makes the run ``incomplete`` and the run's error names the cases. Ctrl-C stops every worker (each
local worker's process group; Ray actors are killed) and keeps the cases that finished.
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from kprof import runtime
from kprof.errors import KprofError
from kprof.executors import LocalExecutor, RayExecutor, Slot
from kprof.registry import shape_str

if TYPE_CHECKING:
    from kprof.context import ProfileOptions, ProgressFn, RunPlan
    from kprof.store import RunStore

MAX_ATTEMPTS = 2  # a case lost with its worker is retried once, then recorded as failed
MAX_RESTARTS = 2  # replacement worker processes per slot
DEVICE_COLUMNS = ("worker", "host", "gpu_index", "gpu_uuid", "gpu_name", "gpu_serial", "attempt")


def parse_workers(text: str | None) -> int | str | None:
    """``--workers``: a positive count or ``all``."""
    if text is None:
        return None
    if text.strip().lower() == "all":
        return "all"
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise KprofError(f"--workers must be a positive number or 'all', not {text!r}")
    return n


def listed_gpus() -> list[str] | None:
    """The GPUs ``CUDA_VISIBLE_DEVICES`` names when it is set, else those ``nvidia-smi`` lists; None when
    neither answers. Imports no torch (the fan-out's workers are started before the driver imports it)."""
    env = runtime.env("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and not g.strip().startswith("-")]
    exe = shutil.which("nvidia-smi")
    if exe:
        try:
            res = subprocess.run(
                [exe, "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
            )
            if res.returncode == 0 and res.stdout.strip():
                return [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


def visible_gpus() -> list[str]:
    """GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` entries (respecting one already set)."""
    listed = listed_gpus()
    if listed is not None:
        return listed
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def gpu_slots(gpus: list[str]) -> list[Slot]:
    """One slot per GPU, ``CUDA_VISIBLE_DEVICES`` pinned to it."""
    # nvidia-smi numbers GPUs in PCI bus order; make CUDA agree unless the user pinned devices already
    order = {} if runtime.env("CUDA_VISIBLE_DEVICES") is not None else {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    return [Slot(f"gpu{g}", {"CUDA_VISIBLE_DEVICES": g, **order}) for g in gpus]


def local_slots(mode: str, workers: int | str) -> list[Slot]:
    """One slot per GPU (``CUDA_VISIBLE_DEVICES`` pinned), or per CPU process for interpreter runs."""
    if mode == "gpu":
        gpus = visible_gpus()
        n = len(gpus) if workers == "all" else int(workers)
        if n > len(gpus):
            raise KprofError(
                f"--workers {n} asked for, but this host shows {len(gpus)} GPU(s) "
                f"({', '.join(gpus) or 'none'}); use --workers all or fewer"
            )
        return gpu_slots(gpus[:n])
    n = (os.cpu_count() or 1) if workers == "all" else int(workers)
    threads = str(max(1, (os.cpu_count() or 1) // n))  # N interpreter processes share the cores
    return [
        Slot(f"cpu{i}", {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": threads})
        for i in range(n)
    ]


# ------------------------------------------------------------------------------------------ early start
@dataclass
class EarlyWorkers:
    """Local GPU workers started at the beginning of ``kprof profile|sweep``, before the command's checks.

    Why: the checks import torch and load the family (3-4 s), and each worker's own start (Python, torch,
    CUDA, its GPU's ceilings: about 10 s on an H200) used to begin only after them; started first, the two
    overlap. The workers prepare (``kprof.fanout_worker --prepare``) and then wait for their ``init``, which
    :func:`profile_runs_fanout` sends once the run is planned, or it stops them when the run turns out not
    to be the GPU fan-out they were started for."""

    executor: LocalExecutor
    mode: str  # the mode they can serve: "gpu"
    started: list[tuple[Slot, int]]  # (slot, executor handle), in slot order
    at: float = field(default_factory=time.monotonic)

    def pids(self) -> list[int]:
        return [self.executor.procs[h].pid for _, h in self.started]

    def close(self) -> None:
        """Stop every worker not handed on (each one's process group); safe to call again."""
        self.executor.close()


def early_slots(workers: str | None, ray: str | None, mode: str) -> list[Slot]:
    """The GPU slots worth starting before the command's checks: a local fan-out (``--workers`` without
    ``--ray``) whose mode can be GPU, over GPUs listed without torch. Anything else: none (the run starts
    its workers itself, or its checks fail with their own message)."""
    if workers is None or ray is not None or mode not in ("auto", "gpu"):
        return []
    try:
        n = parse_workers(workers)
    except KprofError:
        return []
    gpus = listed_gpus() or []
    count = len(gpus) if n == "all" else int(n or 0)
    return gpu_slots(gpus[:count]) if 0 < count <= len(gpus) else []


def start_early(slots: list[Slot], mode: str = "gpu") -> EarlyWorkers:
    """A worker process per slot that prepares (imports, CUDA, ceilings) and then waits for its run."""
    executor = LocalExecutor()
    return EarlyWorkers(executor, mode, [(slot, executor.spawn(slot, prepare=True)) for slot in slots])


@contextmanager
def workers_started_early(workers: str | None, ray: str | None, mode: str) -> Iterator[EarlyWorkers | None]:
    """:func:`start_early` for the command's ``--workers/--ray/--mode`` when :func:`early_slots` finds
    any; on leaving (the run done, a check failed, Ctrl-C) every worker not handed on is stopped."""
    slots = early_slots(workers, ray, mode)
    early = start_early(slots) if slots else None
    try:
        yield early
    finally:
        if early is not None:
            early.close()


def _adopt(early: EarlyWorkers | None, mode: str, slots: list[Slot]) -> tuple[LocalExecutor, dict[str, int]]:
    """The executor for ``slots`` and the early workers' handles that serve them (by slot name); early
    workers of another mode or slot are stopped (their slots start fresh workers, as without them)."""
    if early is None:
        return LocalExecutor(), {}
    if early.mode != mode:
        early.close()
        return LocalExecutor(), {}
    keep = {}
    for slot, handle in early.started:
        if slot in slots:
            keep[slot.name] = handle
        else:
            early.executor.kill(handle)
    return early.executor, keep


@dataclass
class _Worker:
    handle: int
    slot: Slot
    name: str
    state: str = "starting"  # starting | idle | busy | finishing | done | dead
    hello: dict = field(default_factory=dict)
    case: int | None = None
    since: float = field(default_factory=time.monotonic)
    group: deque = field(default_factory=deque)
    measured: int = 0
    timed_out: bool = False


def profile_runs_fanout(
    opts: ProfileOptions, progress: ProgressFn | None = None, early: EarlyWorkers | None = None
) -> list[str]:
    """:func:`kprof.runner.profile_runs` spread over workers; returns the run ids (one per ``--rev``).

    ``early``: workers :func:`start_early` started for this run; those that fit its slots are used, the
    rest are stopped, and every one is stopped when this returns or raises."""
    from kprof.context import quiet
    from kprof.registry import get_family
    from kprof.runner import plan_run, resolve_mode
    from kprof.store import RunStore

    progress = progress or quiet
    executor: Any = None
    fan = None
    try:
        mode = resolve_mode(opts.mode)
        if opts.ray and opts.revisions:
            raise KprofError(
                "--rev with --ray is not supported: the revisions are loaded from this git checkout, "
                "which Ray workers do not have (use --workers N on one host)"
            )
        seed = opts.settings.seed if opts.settings.seed else secrets.randbits(31)
        workers = parse_workers(opts.workers) or ("all" if opts.ray else 1)
        handles: dict[str, int] = {}
        if opts.ray:
            executor = RayExecutor(opts.ray, mode, {"TRITON_INTERPRET": "1"} if mode == "interpreter" else {})
            n = executor.capacity() if workers == "all" else int(workers)
            slots = [Slot(f"ray{i}") for i in range(max(1, n))]
        else:
            slots = local_slots(mode, workers)
            executor, handles = _adopt(early, mode, slots)
        # The workers start before anything slow here: those the command started early (EarlyWorkers),
        # before its checks imported torch and loaded the family, are told the run; other slots start now.
        # Why: a worker's start (Python, torch, CUDA, its GPU's ceilings) takes about 10 s on an H200. Begun
        # after this process's own imports and family load (3-4 s), it made a 608-case rmsnorm sweep take
        # 19.5 s to start on 2 H200s against 14 s in one process: 119.5 s against 215.0 s end to end
        # (0.556), although the cases phase itself halved (100 s against 201 s). Started early: 112.8 s
        # against 210.7 s (0.535), the start level with one process's.
        spawned = early.at if handles else time.monotonic()
        started = {}
        for slot in slots:
            if slot.name in handles:
                executor.send(handles[slot.name], "init", (opts, mode, seed, slot.name))
                started[slot.name] = handles[slot.name]
            else:
                started[slot.name] = executor.start(slot, (opts, mode, seed, slot.name))
        today = get_family(opts.family)
        store = RunStore(opts.store)
        plan = plan_run(opts, mode, today, store.root, progress, seed=seed)
        fan = _Fanout(plan, store, executor, slots, progress)
        fan.start(started, spawned, early=bool(handles))
        fan.measure()
        fan.finish()
    except BaseException as exc:  # Ctrl-C, SIGTERM, a failed start: stop every worker, keep what finished
        if fan is not None:
            fan.interrupted(exc)
        raise
    finally:
        if executor is not None:
            executor.close()
        if early is not None:
            early.close()
        if fan is not None:
            fan.close()
    return fan.run_ids


def _code_difference(mine: Mapping[str, Any], theirs: Any) -> str:
    """How a worker's code of one arm differs from the driver's: the commits, else the files hashed otherwise."""
    if not isinstance(theirs, Mapping):
        return "not reported"
    if mine.get("commit") != theirs.get("commit"):
        return f"commit {str(theirs.get('commit'))[:10]} against {str(mine.get('commit'))[:10]}"
    a, b = dict(mine.get("hashes") or {}), dict(theirs.get("hashes") or {})
    files = sorted(f for f in a.keys() | b.keys() if a.get(f) != b.get(f))
    return f"files hashed otherwise: {', '.join(files[:4])}{', ...' if len(files) > 4 else ''}"


START_LIMIT_S = 300.0  # the least time a worker is given to say hello (see _Fanout._start_limit)


class _Fanout:
    def __init__(self, plan: RunPlan, store: RunStore, executor: Any, slots: list[Slot], progress: ProgressFn) -> None:
        self.plan = plan
        self.opts, self.mode, self.seed, self.settings = plan.options, plan.mode, plan.settings.seed, plan.settings
        self.store, self.arms, self.sel, self.choice = store, plan.arms, plan.selection, plan.profiler
        self.executor, self.slots, self.progress = executor, slots, progress
        self.cases = plan.selection.cases()
        self.workers: dict[int, _Worker] = {}
        self.restarts: dict[str, int] = {s.name: 0 for s in slots}
        self.attempts: dict[int, list[str]] = {}
        self.avoid: dict[int, set[str]] = {}
        self.finished_cases: set[int] = set()
        self.lost: dict[int, str] = {}
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.run_ids: list[str] = []
        self.kinds: set[str] = set()  # the GPU kinds (device names) the runs began with
        # (arm, worker) -> (profiler, version) where that worker's profiler pass fell back (auto): the run's label is
        # written once every worker has said, not by whichever fell back last (see _profiler_fields)
        self.fallbacks: dict[tuple[int, str], tuple[Any, Any]] = {}
        self.queue: deque[list[int]] = deque(self._groups())
        self.timeout = float(plan.options.case_timeout_s)

    # ------------------------------------------------------------------------------------------ placement
    def _groups(self) -> list[list[int]]:
        """Cases of one (shape, dtype) together when that still gives every worker four groups or more (fewer
        would leave a GPU idle while the last group runs: 5 groups on 2 GPUs take 3/5 of the one-GPU time)."""
        by_key: dict[tuple, list[int]] = {}
        for i, c in enumerate(self.cases):
            by_key.setdefault((c.shape, c.dtype), []).append(i)
        self.grouped = len(by_key) >= 4 * len(self.slots) and len(self.slots) > 1
        if not self.grouped:
            return [[i] for i in range(len(self.cases))]
        # largest groups first (more cases, then more elements), so the last groups to run are short ones and
        # no GPU waits long for another to finish its last group
        return sorted(by_key.values(), key=lambda g: (len(g), math.prod(self.cases[g[0]].shape)), reverse=True)

    # ------------------------------------------------------------------------------------------ phases
    def start(self, started: dict[str, int], spawned: float, early: bool = False) -> None:
        """Wait for the workers started before this object existed (executor handles by slot name; the
        first spawned at monotonic time ``spawned``, before the command's checks when ``early``) to say
        hello, then begin the runs with those that did."""
        waiting = time.monotonic()
        for slot in self.slots:
            self.workers[started[slot.name]] = _Worker(started[slot.name], slot, slot.name)
        self.progress(
            "profiler",
            0,
            0,
            f"fan-out: {len(self.slots)} worker(s) on {self.executor.label}, "
            f"{len(self.cases)} cases" + (" (each shape and dtype kept on one worker)" if self.grouped else ""),
        )
        limit = self._start_limit()
        deadline = time.monotonic() + limit
        while any(w.state == "starting" for w in self.workers.values()) and time.monotonic() < deadline:
            for ev in self.executor.poll(0.5):
                self._on_event(ev)
        for w in self.workers.values():
            if w.state == "starting":
                self.executor.kill(w.handle)
                self._dead(w, f"did not start within {limit:.0f} s")
        ready = [w for w in self.workers.values() if w.state == "idle"]
        if not ready:
            raise KprofError("no fan-out worker started: " + "; ".join(self.problems)[-2000:])
        now = time.monotonic()
        self.progress(
            "profiler",
            0,
            0,
            f"fan-out: {len(ready)} worker(s) ready {now - spawned:.1f} s after they were started"
            + (" (early, beside the command's checks)" if early else "")
            + f"; this process waited {now - waiting:.1f} s for them",
        )
        self._begin_runs(ready)

    def measure(self) -> None:
        total = len(self.cases)
        while True:
            self._dispatch()
            live = [w for w in self.workers.values() if w.state in ("starting", "idle", "busy")]
            busy = [w for w in live if w.state in ("busy", "starting")]
            if not self.queue and not any(w.group for w in live) and not busy:
                break
            if not live:
                for group in self.queue:
                    for i in group:
                        self._give_up(i, "no worker left to run it: " + "; ".join(self.problems)[-300:])
                self.queue.clear()
                break
            for ev in self.executor.poll(0.5):
                self._on_event(ev)
                done = len(self.finished_cases) + len(self.lost)
                self.progress("cases", done, total, self._label(ev))
            self._check_timeouts()

    def finish(self) -> None:
        """The profiler pass (and offline resources) on every worker over the cases it measured."""
        ready = [w for w in self.workers.values() if w.state == "idle"]
        for w in ready:
            w.state, w.since = "finishing", time.monotonic()
            self.executor.send(w.handle, "finish")
        limit = float(getattr(self.opts, "profiler_timeout_s", 1800.0)) + 300
        self.progress("profile", 0, len(ready), "profiler pass on each worker")
        while any(w.state == "finishing" for w in self.workers.values()):
            for ev in self.executor.poll(0.5):
                self._on_event(ev)
            for w in self.workers.values():
                if w.state == "finishing" and time.monotonic() - w.since > limit:
                    self.executor.kill(w.handle)
                    self._dead(w, f"profiler pass did not end within {limit:.0f} s")
            self.progress(
                "profile", sum(w.state != "finishing" for w in ready), len(ready), "profiler pass on each worker"
            )
        self._finish_runs("complete" if not self.problems else "incomplete", None)

    def interrupted(self, exc: BaseException) -> None:
        if not self.run_ids:
            return
        for w in self.workers.values():
            if w.state == "busy" and w.case is not None:
                self.problems.append(f"{self.cases[w.case].id} was being measured on {w.name} when the run stopped")
        not_run = sum(len(g) for g in self.queue) + sum(len(w.group) for w in self.workers.values())
        if not_run:
            self.problems.append(f"{not_run} case(s) not started")
        error = "".join(__import__("traceback").format_exception_only(type(exc), exc)).strip()[-1000:]
        self.executor.close()
        self._finish_runs("incomplete", error)

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------------------------------ workers
    def _start(self, slot: Slot) -> None:
        n = sum(w.slot == slot for w in self.workers.values())
        name = slot.name if n == 0 else f"{slot.name}#{n + 1}"
        handle = self.executor.start(slot, (self.opts, self.mode, self.seed, name))
        self.workers[handle] = _Worker(handle, slot, name)

    def _dispatch(self) -> None:
        for w in self.workers.values():
            if w.state != "idle":
                continue
            if not w.group:
                group = self._next_group(w)
                if group is None:
                    continue
                w.group.extend(group)
            i = w.group.popleft()
            w.state, w.case, w.since, w.timed_out = "busy", i, time.monotonic(), False
            self.attempts.setdefault(i, [])
            self.executor.send(w.handle, "case", i)

    def _next_group(self, w: _Worker) -> list[int] | None:
        others = [o for o in self.workers.values() if o is not w and o.state in ("starting", "idle", "busy")]
        for k, group in enumerate(self.queue):
            avoid = self.avoid.get(group[0], set())
            # a retried case goes to another GPU while one is alive; else to this (replacement) worker
            if w.slot.name not in avoid or not any(o.slot.name not in avoid for o in others):
                del self.queue[k]
                return group
        return None

    def _on_event(self, ev: Any) -> None:
        w = self.workers.get(ev.handle)
        if w is None or w.state in ("dead", "done"):
            return
        if ev.kind == "hello":
            refused = (
                self._cases_differ(ev.payload)
                or self._settings_differ(ev.payload)
                or self._code_differs(ev.payload)
                or self._other_kind(ev.payload)
            )
            if refused:
                self.executor.kill(w.handle)
                self._dead(w, refused)
                return
            w.hello, w.state = ev.payload, "idle"
        elif ev.kind == "ops":
            done, w.case, w.state = w.case, None, "idle"
            w.measured += 1
            # the worker's next case goes out before the store write, so the write overlaps its measurement
            # rather than adding to it (the driver writes every worker's cases, one after another)
            self._dispatch()
            self._apply(w, ev.payload)
            self.finished_cases.add(done)
        elif ev.kind == "finished":
            self._apply(w, ev.payload["ops"], files=ev.payload["files"], trace_root=ev.payload["trace_root"])
            if ev.payload.get("error"):
                self.problems.append(f"profiler pass on {w.name} failed: {ev.payload['error']}")
            w.state = "done"
        elif ev.kind == "error":
            if w.state == "busy":  # kprof itself raised on this case: not a worker fault, not retried
                self._give_up(w.case, f"kprof error on {w.name}: {ev.payload.strip().splitlines()[-1][:300]}")
                w.state, w.case = "idle", None
            else:
                self.executor.kill(w.handle)
                self._dead(w, f"failed: {ev.payload.strip()[-600:]}")
        elif ev.kind == "died":
            reason = f"timed out after {self.timeout:.0f} s" if w.timed_out else ev.payload
            self._dead(w, reason)

    def _cases_differ(self, hello: Mapping[str, Any]) -> str | None:
        """Why a worker's own selection of cases is not this driver's, or None.

        Why: a case goes out as its index in the driver's selection and the worker measures that index of its
        own selection. A worker whose selection differs (a package such as liger_kernel installed on its node
        only, another kprof) measured other cases than the driver stored them as: planned cases went unmeasured,
        others twice, and the run read complete."""
        mine, theirs = [c.id for c in self.cases], list(hello.get("cases") or ())
        where = f"kprof at {hello.get('kprof_file', '?')}"
        if theirs != mine:
            only_theirs = sorted(set(theirs) - set(mine))
            only_mine = sorted(set(mine) - set(theirs))
            what = (
                f"only the worker's: {', '.join(only_theirs[:4]) or 'none'}; "
                f"only this run's: {', '.join(only_mine[:4]) or 'none'}"
                if only_theirs or only_mine
                else "the same cases in another order"
            )
            return (
                f"refused: its selection of cases differs from this run's ({len(theirs)} against {len(mine)}; "
                f"{what}); install the same packages and kprof ({where}) on every worker, or pass --providers"
            )
        return None

    def _settings_differ(self, hello: Mapping[str, Any]) -> str | None:
        """Why a worker measures with other settings (repetition budget, timing mode, ...) than the run
        records, or None: its samples would be pooled as if taken with the run's."""
        where = f"kprof at {hello.get('kprof_file', '?')}"
        theirs_settings = dict(hello.get("settings") or {})
        mine_settings = asdict(self.settings)
        differ = sorted(
            k for k in mine_settings.keys() | theirs_settings.keys() if mine_settings.get(k) != theirs_settings.get(k)
        )
        if differ:
            return (
                f"refused: its measurement settings differ from this run's ({', '.join(differ)}); "
                f"run the same kprof ({where}) on every worker"
            )
        return None

    def _code_differs(self, hello: Mapping[str, Any]) -> str | None:
        """Why a worker runs other kernel code than the run records, or None. Why: each worker loads the arms
        itself, resolving every ``--rev`` name when it starts (a replacement hours later too), so a branch that
        moved meanwhile, or another checkout on its node, measured another commit under this run's record."""
        from kprof.fanout_worker import arm_code

        theirs = list(hello.get("arms") or ())
        mine = [arm_code(a) for a in self.arms]
        if not self.opts.revisions:  # the working tree: its hashes say what runs (a worker may see no git at all)
            mine = [{**a, "commit": None} for a in mine]
            theirs = [{**b, "commit": None} if isinstance(b, Mapping) else b for b in theirs]
        if theirs == mine:
            return None
        labels = self.opts.revisions or ("the working tree",)
        differ = [f"{label}: {_code_difference(a, b)}" for label, a, b in zip(labels, mine, theirs) if a != b] or [
            f"{len(theirs)} arms against {len(mine)}"
        ]
        return (
            f"refused: it runs other kernel code than this run records ({'; '.join(differ)}); give every worker "
            "the same checkout, and --rev names that do not move during the run (a commit id)"
        )

    def _other_kind(self, hello: Mapping[str, Any]) -> str | None:
        """Why a worker started after the runs began (a replacement: Ray places it on any free GPU) may not
        add cases to them, or None. Why: the run record names the GPU kinds and the ceiling it began with."""
        name = (hello.get("device") or {}).get("name")
        if not self.run_ids or name in self.kinds:
            return None
        return (
            f"refused: it is on a {name}, a GPU kind this run did not start with ({', '.join(sorted(self.kinds))}); "
            "give the run GPUs of one kind, or as many workers as the cluster has GPUs"
        )

    def _dead(self, w: _Worker, reason: str) -> None:
        state, w.state = w.state, "dead"
        self.notes.append(f"worker {w.name} ({state}) lost: {reason}")
        if state == "starting":
            self.problems.append(f"worker {w.name} did not start: {reason}")
        elif state == "finishing":
            self.problems.append(
                f"profiler pass on {w.name} lost ({reason}); its {w.measured} cases are stored without launch metrics"
            )
        if state == "busy" and w.case is not None:
            i, w.case = w.case, None
            self.attempts[i].append(f"{w.name}: {reason}")
            if len(self.attempts[i]) >= MAX_ATTEMPTS:
                self._give_up(i, f"lost twice with its worker ({'; '.join(self.attempts[i])})")
            else:
                self.avoid.setdefault(i, set()).add(w.slot.name)
                self.queue.appendleft([i])
                self.progress(
                    "profiler",
                    0,
                    0,
                    f"{self.cases[i].id}: worker {w.name} lost ({reason[:200]}); retrying on another worker",
                )
        post_pass = self.choice.name != "none" or (self.mode == "interpreter" and self.opts.offline_resources)
        if state in ("busy", "idle") and w.measured and post_pass:
            self.problems.append(
                f"the {w.measured} case(s) {w.name} measured before it was lost are stored without "
                "their profiler pass / offline resources"
            )
        if w.group:  # the rest of its (shape, dtype) group goes back to the queue, together
            self.queue.append(list(w.group))
            w.group.clear()
        work_left = self.queue or any(o.group for o in self.workers.values())
        if state in ("busy", "idle") and work_left and self.restarts[w.slot.name] < MAX_RESTARTS:
            self.restarts[w.slot.name] += 1
            self._start(w.slot)

    def _start_limit(self) -> float:
        """How long a worker may take to say hello: importing torch and measuring the ceilings take a few seconds
        to minutes."""
        return max(self.timeout, START_LIMIT_S)

    def _check_timeouts(self) -> None:
        now = time.monotonic()
        for w in list(self.workers.values()):
            if w.state == "busy" and now - w.since > self.timeout:
                w.timed_out = True
                self.executor.kill(w.handle)
                self._dead(w, f"timed out after {self.timeout:.0f} s on {self.cases[w.case].id}")
            elif w.state == "starting" and now - w.since > self._start_limit():
                # a replacement that never says hello and never dies: the run would wait on it for ever
                self.executor.kill(w.handle)
                self._dead(w, f"did not start within {self._start_limit():.0f} s")

    def _give_up(self, i: int, reason: str) -> None:
        """Record case ``i`` as failed in every arm's run, with the reason."""
        self.lost[i] = reason
        case = self.cases[i]
        for arm, run_id in zip(self.arms, self.run_ids):
            row = {
                "case": case.id,
                "family": case.family,
                "provider": case.provider,
                "kind": arm.family.get_provider(case.provider).kind,
                "shape": shape_str(case.shape),
                "dtype": case.dtype,
                "status": "error",
                "ok": False,
                "note": f"not measured: {reason}"[:1000],
            }
            self.store.add_case(run_id, i, row, {})

    def _label(self, ev: Any) -> str:
        w = self.workers.get(ev.handle)
        busy = sum(x.state == "busy" for x in self.workers.values())
        return f"{busy} worker(s) busy; last: {w.name if w else '?'} {ev.kind}"

    # ------------------------------------------------------------------------------------------ store
    def _apply(self, w: _Worker, ops: list, files: list | None = None, trace_root: str | None = None) -> None:
        """A worker's store writes, applied by the driver: arm slots -> run ids, local trace paths -> the
        store's trace folder, and each measured case's device recorded beside it."""
        ops = _drop_cleared_launches(ops)
        for name, args, kwargs in ops:
            run_id = self.run_ids[int(args[0][3:])]
            if name == "add_case":
                _, idx, row, samples = args
                self.store.add_case(run_id, idx, row, samples)
                ident = {**w.hello.get("identity", {}), "attempt": len(self.attempts.get(idx, ())) + 1}
                self.store.add_case_device(run_id, row["case"], ident)
            elif name == "set_fields":
                if "profiler" in kwargs or "profiler_version" in kwargs:
                    self.fallbacks[(int(args[0][3:]), w.name)] = (
                        kwargs.get("profiler"),
                        kwargs.get("profiler_version"),
                    )
                    kwargs = {k: v for k, v in kwargs.items() if k not in ("profiler", "profiler_version")}
                    if not kwargs:
                        continue
                if kwargs.get("trace_path") and trace_root:
                    kwargs = {**kwargs, "trace_path": str(self._trace_target(w, trace_root, kwargs["trace_path"]))}
                self.store.set_fields(run_id, **kwargs)
            else:
                getattr(self.store, name)(run_id, *args[1:], **kwargs)
        for rel, data in files or ():
            target = self._trace_target(w, trace_root, str(Path(trace_root) / rel))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

    def _profiler_fields(self, arm: int) -> dict[str, Any]:
        """The run's profiler fields where a worker's pass fell back: that worker's label where every worker that
        measured cases fell back alike; otherwise both labels and which worker used which (a run labelled with one
        profiler would have its other workers' kernel names compared as that profiler spells them)."""
        fell = {name: fields for (j, name), fields in self.fallbacks.items() if j == arm}
        if not fell:
            return {}
        measured = sorted(w.name for w in self.workers.values() if w.measured or w.name in fell)
        kept = [name for name in measured if name not in fell]
        labels = set(fell.values())
        if not kept and len(labels) == 1:
            profiler, version = next(iter(labels))
            return {"profiler": profiler, "profiler_version": version}
        used = {name: fell[name][0] if name in fell else self.choice.name for name in measured}
        names = sorted(set(used.values()))
        why = "; ".join(f"{name}: {fell[name][1]}" for name in sorted(fell))
        return {
            "profiler": "+".join(names) + " (mixed)",
            "profiler_version": ", ".join(f"{p} on {name}" for name, p in sorted(used.items())) + f" ({why})",
        }

    def _trace_target(self, w: _Worker, trace_root: str, local: str) -> Path:
        rel = Path(local).relative_to(trace_root)  # armJ/...
        return self.store.trace_dir(self.run_ids[int(rel.parts[0][3:])]) / w.name / Path(*rel.parts[1:])

    def _begin_runs(self, ready: list[_Worker]) -> None:
        from kprof import envinfo
        from kprof.runner import profiler_version, run_record

        first = ready[0].hello
        names = sorted({w.hello["device"]["name"] for w in ready})
        self.kinds = set(names)
        device = {**first["device"], "fanout_workers": len(ready)}
        if len(names) > 1:
            device["name"] = " + ".join(names) + " (mixed)"
        version = profiler_version(self.choice)
        # The run's ceiling is what its report says every case's % of peak is against, and what a roofline
        # draws every case under. Workers on GPUs of different kinds share no ceiling: the run records none
        # (each case's own % of peak is against its worker's, and each worker's ceiling is in config.fanout).
        ceiling = first["ceiling"] if len(names) == 1 else None
        fanout = {
            "executor": self.executor.label,
            "workers": [
                {
                    **w.hello["identity"],
                    "device": w.hello["device"]["name"],
                    "ceiling_gbps": (w.hello["ceiling"] or {}).get("gbps"),
                    "kprof": w.hello["kprof_file"],
                    "pid": w.hello["pid"],
                }
                for w in ready
            ],
            "placement": "shape-dtype groups" if self.grouped else "case by case",
            "case_timeout_s": self.timeout,
        }
        versions = envinfo.versions().to_dict()
        for arm in self.arms:
            record = run_record(self.plan, arm, device, ceiling, version, versions, {"fanout": fanout})
            self.run_ids.append(self.store.begin_run(record))

    def _finish_runs(self, status: str, error: str | None) -> None:
        from kprof import report

        if self.lost:
            self.problems.insert(
                0,
                f"{len(self.lost)} case(s) lost: "
                + "; ".join(f"{self.cases[i].id} ({why})" for i, why in sorted(self.lost.items()))[:3000],
            )
        if self.problems:
            status = "incomplete"
            error = "; ".join(filter(None, [error, *self.problems]))[-4000:]
        skipped = [f"{n}: {r}" for n, r in self.sel.skipped]
        for j, (arm, run_id) in enumerate(zip(self.arms, self.run_ids)):
            self.store.set_fields(run_id, notes="\n".join(skipped + self.notes) or None, **self._profiler_fields(j))
            run = self.store.run(run_id)
            run["status"], run["error"] = status, error or run.get("error")
            metrics = self.store.metrics(run_id)
            md = report.render(run, metrics, baseline=arm.family.baseline)
            md += "\n" + devices_section(run, metrics, self.store.case_devices(run_id))
            self.store.finish_run(run_id, status, report_md=md, error=error)


def _drop_cleared_launches(ops: list) -> list:
    """A worker's ``clear_launches`` (auto fell back to torch.profiler) clears only that worker's own
    launches: drop its earlier ``add_launches`` of the run instead of clearing every worker's rows."""
    out: list = []
    for op in ops:
        if op[0] == "clear_launches":
            out = [o for o in out if not (o[0] == "add_launches" and o[1][0] == op[1][0])]
        else:
            out.append(op)
    return out


# ------------------------------------------------------------------------------------------ reading side
def devices_section(run: Mapping[str, Any], metrics: pd.DataFrame, devices: pd.DataFrame) -> str:
    """Markdown: which worker/GPU measured how many cases, and the comparisons that span GPUs or GPU kinds."""
    if devices.empty:
        return ""
    fan = (run.get("config") or {}).get("fanout") or {}
    lines = [
        f"## Devices ({len(fan.get('workers', []))} worker(s), {fan.get('executor', '?')})",
        "",
        "| worker | host | GPU | index | UUID | serial | copy GB/s | cases |",
        "|---|---|---|---|---|---|---:|---:|",
    ]
    counts = devices.groupby("worker").size()
    started = {w["worker"]: w for w in fan.get("workers", [])}
    # workers of the run record, then replacements started after a worker was lost ("gpu1#2")
    named = list(started) + [n for n in sorted(counts.index) if n not in started]
    for name in named:
        w = started.get(name) or devices[devices["worker"] == name].iloc[0].to_dict()
        gbps = (started.get(name.split("#")[0]) or {}).get("ceiling_gbps")
        cells = [_txt(w.get(k)) for k in ("host", "gpu_name", "gpu_index", "gpu_uuid", "gpu_serial")]
        cells[1] = cells[1] or _txt(w.get("device"))
        lines.append(
            f"| {name} | {' | '.join(cells)} | {'' if gbps is None else f'{gbps:.0f}'} | {int(counts.get(name, 0))} |"
        )
    retried = devices[devices["attempt"].fillna(1) > 1]
    if not retried.empty:
        lines += ["", f"Retried after a worker was lost: {', '.join(retried['case_id'])}."]
    joined = metrics.merge(devices.rename(columns={"case_id": "case"}), on="case", how="inner")
    key = joined["gpu_uuid"].fillna(joined["worker"]) if "gpu_uuid" in joined else joined["worker"]
    spans = joined.assign(dev=key).groupby(["shape", "dtype"])["dev"].nunique()
    spans = spans[spans > 1]
    if not spans.empty:
        lines += [
            "",
            f"**{len(spans)} of {joined.groupby(['shape', 'dtype']).ngroups} (shape, dtype) groups were "
            "measured on more than one device**: speedups and the guide compare cases across devices there "
            "(" + ", ".join(f"{s}/{d}" for s, d in spans.index[:10]) + (", ..." if len(spans) > 10 else "") + ").",
        ]
    kinds = joined["gpu_name"].dropna().unique() if "gpu_name" in joined else []
    if len(kinds) > 1:
        lines += ["", f"**Cases were measured on {len(kinds)} GPU kinds; compare them within a kind:**"]
        for kind in sorted(kinds):
            part = joined[joined["gpu_name"] == kind]
            lines += ["", f"### {kind}", "", "| case | status | GPU µs |", "|---|---|---:|"]
            for r in part.itertuples():
                t = getattr(r, "gpu_time_us", float("nan"))
                lines.append(f"| {r.case} | {r.status} | {'' if pd.isna(t) else f'{t:.2f}'} |")
    return "\n".join(lines) + "\n"


def _txt(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def device_mismatch(
    run_a: Mapping[str, Any], run_b: Mapping[str, Any], devices_a: pd.DataFrame, devices_b: pd.DataFrame
) -> list[str]:
    """Warnings for a diff whose matched cases were measured on different GPUs (or cannot be told apart).

    ``devices_*`` are the runs' ``case_devices`` tables (empty for a one-process run, whose every case ran
    on the run's device)."""

    def per_case(run: Mapping[str, Any], dev: pd.DataFrame) -> dict[str, str] | None:
        if dev.empty:
            return None
        key = dev["gpu_uuid"].fillna(dev["worker"].astype(str) + "@" + dev["host"].fillna("?"))
        return dict(zip(dev["case_id"], key + " (" + dev["gpu_name"].fillna(run.get("device_name") or "?") + ")"))

    a, b = per_case(run_a, devices_a), per_case(run_b, devices_b)
    warn = []
    if a is not None and b is not None:
        common = sorted(set(a) & set(b))
        differ = [c for c in common if a[c] != b[c]]
        if differ:
            pairs = sorted({f"{a[c]} vs {b[c]}" for c in differ})
            warn.append(
                f"{len(differ)} of {len(common)} matched cases were measured on different GPUs "
                f"({'; '.join(pairs[:4])}{'; ...' if len(pairs) > 4 else ''}): their ratios include the "
                "difference between the devices"
            )
    for label, run, devs in (("A", run_a, a), ("B", run_b, b)):
        other = b if label == "A" else a
        if devs is not None and other is None and len(set(devs.values())) > 1:
            warn.append(
                f"run {label} ({run['id']}) spread its cases over {len(set(devs.values()))} GPUs; the other "
                "run does not record per-case GPUs, so some cases compare different GPUs"
            )
    return warn
