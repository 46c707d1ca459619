"""Where fan-out workers run: local processes (one per GPU, or per CPU core) or Ray actors.

Both executors speak the same three commands to a :class:`kprof.fanout_worker.CaseWorker` (``init`` -> a
hello with the device, ``case`` -> the store writes of one case, ``finish`` -> the profiler pass and the
trace files) and report back as :class:`Event` s, so the scheduler in :mod:`kprof.fanout` does not care
which one it drives. A worker that dies (signal, exit, lost node) shows up as a ``died`` event with the
reason; the scheduler decides about retries.
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kprof.errors import KprofError

REPLY = {"init": "hello", "case": "ops", "finish": "finished"}


@dataclass(frozen=True)
class Slot:
    """A place a worker runs: a GPU (``CUDA_VISIBLE_DEVICES`` pinned), a CPU process, or a Ray actor."""

    name: str  # "gpu0", "cpu1", "ray2"
    env: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Event:
    handle: int
    kind: str  # hello | ops | finished | error | died
    payload: Any


class LocalExecutor:
    """Worker processes of this host: ``python -m kprof.fanout_worker``, each in its own process group
    (so Ctrl-C reaches the driver only, and the driver stops each worker's whole group)."""

    label = "local processes"

    def __init__(self) -> None:
        self.events: queue.Queue[Event] = queue.Queue()
        self.procs: dict[int, subprocess.Popen] = {}
        self.logs: dict[int, Path] = {}
        self.logdir = Path(tempfile.mkdtemp(prefix="kprof-workers-"))
        self._next = 0
        self._lock = threading.Lock()

    def start(self, slot: Slot, init_args: tuple) -> int:
        handle = self.spawn(slot)
        self.send(handle, "init", init_args)
        return handle

    def spawn(self, slot: Slot, prepare: bool = False) -> int:
        """A worker process that waits for its ``init`` (:meth:`send`); with ``prepare`` it first imports
        torch and kprof's measuring modules and measures its GPU's ceilings, so a worker started before
        the run's options are known has done its slow part by the time they arrive."""
        handle, self._next = self._next, self._next + 1
        env = {**os.environ, **slot.env}
        log = self.logdir / f"{slot.name}-{handle}.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "kprof.fanout_worker", *(["--prepare"] if prepare else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log.open("wb"),
            env=env,
            start_new_session=True,
        )
        self.procs[handle], self.logs[handle] = proc, log
        threading.Thread(target=self._read, args=(handle, proc), daemon=True).start()
        return handle

    def _read(self, handle: int, proc: subprocess.Popen) -> None:
        from kprof.fanout_worker import read_frame

        while True:
            try:
                kind, payload = read_frame(proc.stdout)
            except (EOFError, OSError, ValueError):
                break
            except Exception as exc:  # noqa: BLE001 - an unreadable reply: treat the worker as lost
                self.events.put(Event(handle, "died", f"unreadable reply ({exc})"))
                self.kill(handle)
                return
            self.events.put(Event(handle, kind, payload))
        rc = proc.wait()
        self.events.put(Event(handle, "died", self._why(handle, rc)))

    def _why(self, handle: int, rc: int) -> str:
        what = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exited with status {rc}"
        tail = ""
        try:
            lines = [ln for ln in self.logs[handle].read_text(errors="replace").splitlines() if ln.strip()]
            tail = f"; last output: {' | '.join(lines[-3:])[-400:]}" if lines else ""
        except OSError:
            pass
        return f"worker process {self.procs[handle].pid} {what}{tail}"

    def send(self, handle: int, cmd: str, arg: Any = None) -> None:
        from kprof.fanout_worker import write_frame

        try:
            write_frame(self.procs[handle].stdin, (cmd, arg))
        except (BrokenPipeError, OSError):
            pass  # the reader thread reports the death

    def poll(self, timeout: float) -> list[Event]:
        try:
            out = [self.events.get(timeout=timeout)]
        except queue.Empty:
            return []
        while True:
            try:
                out.append(self.events.get_nowait())
            except queue.Empty:
                return out

    def kill(self, handle: int) -> None:
        """SIGTERM to the worker's process group (profiler children included), SIGKILL if it lingers."""
        proc = self.procs[handle]
        if proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def close(self) -> None:
        for handle in list(self.procs):
            self.kill(handle)
        shutil.rmtree(self.logdir, ignore_errors=True)


class RayExecutor:
    """Ray actors with ``num_gpus=1`` each (``num_cpus=1`` for interpreter runs). kprof's code and its family
    folders travel to the workers in Ray's runtime environment (``py_modules``), not through a shared
    filesystem; results and trace files come back as the actors' return values."""

    def __init__(self, address: str, mode: str, env: dict) -> None:
        try:
            import ray
        except ImportError:
            raise KprofError("--ray needs Ray: pip install 'kprof[ray]' (or pip install 'ray[default]')") from None
        self.ray = ray
        self.mode = mode
        self.started_local = False
        self.stage = Path(tempfile.mkdtemp(prefix="kprof-ray-"))
        runtime_env = {
            "py_modules": [str(stage_package(self.stage))],
            "env_vars": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", **env},
        }
        if address == "local":
            # a throwaway instance on this machine only; fake GPUs are not declared (real ones are detected)
            ray.init(
                address="local",
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                runtime_env=runtime_env,
                log_to_driver=False,
                configure_logging=False,
            )
            self.started_local = True
        else:
            # "auto" honours RAY_ADDRESS, else finds a cluster started on this node with `ray start`
            try:
                ray.init(address=address, runtime_env=runtime_env, log_to_driver=False, configure_logging=False)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                shutil.rmtree(self.stage, ignore_errors=True)
                raise KprofError(
                    f"cannot reach a Ray cluster at --ray {address} ({str(exc)[:300]}) (start one with "
                    "`ray start --head`, set RAY_ADDRESS, or use --ray local)"
                ) from None
        self.label = f"Ray {'local instance' if address == 'local' else address} ({ray.__version__})"
        from kprof.fanout_worker import CaseWorker

        gpus = 1 if mode == "gpu" else 0
        self.actor_cls = ray.remote(num_gpus=gpus, num_cpus=1, max_restarts=0)(CaseWorker)
        self.actors: dict[int, Any] = {}
        self.pending: dict[Any, tuple[int, str]] = {}
        self._next = 0

    def capacity(self) -> int:
        res = self.ray.cluster_resources()
        return int(res.get("GPU", 0)) if self.mode == "gpu" else int(res.get("CPU", 1))

    def start(self, slot: Slot, init_args: tuple) -> int:
        handle, self._next = self._next, self._next + 1
        self.actors[handle] = self.actor_cls.remote(*init_args)
        self.pending[self.actors[handle].hello.remote()] = (handle, "init")
        return handle

    def send(self, handle: int, cmd: str, arg: Any = None) -> None:
        actor = self.actors[handle]
        ref = actor.measure.remote(arg) if cmd == "case" else actor.finish.remote()
        self.pending[ref] = (handle, cmd)

    def poll(self, timeout: float) -> list[Event]:
        if not self.pending:
            time.sleep(min(timeout, 0.2))
            return []
        ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=timeout)
        out = []
        for ref in ready:
            handle, cmd = self.pending.pop(ref)
            try:
                out.append(Event(handle, REPLY[cmd], self.ray.get(ref)))
            except self.ray.exceptions.RayTaskError as exc:  # the method raised: the worker is still there
                out.append(Event(handle, "error", str(exc)[-3000:]))
                if cmd == "init":
                    self.kill(handle)
            except self.ray.exceptions.RayError as exc:  # actor died, node lost, worker crashed
                out.append(Event(handle, "died", f"Ray worker lost: {type(exc).__name__}: {str(exc)[-400:]}"))
        return out

    def kill(self, handle: int) -> None:
        for ref, (h, _) in list(self.pending.items()):
            if h == handle:
                try:
                    self.ray.cancel(ref)
                except Exception:  # noqa: BLE001 - finished meanwhile
                    pass
                self.pending.pop(ref)
        try:
            self.ray.kill(self.actors[handle], no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def close(self) -> None:
        for handle in list(self.actors):
            self.kill(handle)
        if self.started_local:
            self.ray.shutdown()
        shutil.rmtree(self.stage, ignore_errors=True)


def stage_package(dest: Path) -> Path:
    """A self-contained copy of the ``kprof`` package (toolkit, kernel families, profilers) for Ray's
    ``py_modules``: the source tree maps ``toolkit/`` to ``kprof``, which Ray cannot upload as is."""
    import kprof
    import kprof.kernels
    import kprof.profilers

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    pkg = dest / "kprof"
    shutil.copytree(Path(kprof.__file__).parent, pkg, ignore=ignore)
    for sub in (kprof.kernels, kprof.profilers):
        target = pkg / sub.__name__.split(".")[-1]
        if not target.exists():
            shutil.copytree(Path(sub.__file__).parent, target, ignore=ignore)
    return pkg
