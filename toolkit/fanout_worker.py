"""One fan-out worker: measures the cases it is handed exactly as a one-process run does, on its own device.

A :class:`CaseWorker` runs the same phases as :func:`kprof.runner.profile_runs` (its own device's ceilings,
each case's correctness and timings with every ``--rev`` arm interleaved, then the profiler pass over the
cases it measured), but never opens the run store: every store write goes into a :class:`Sink` and comes
back to the driver as a list of operations, which the driver alone applies to the store (SQLite stays
single-writer, and a worker on another machine needs no shared filesystem). Raw trace files come back as
bytes.

The same class serves both executors: a local worker process (``python -m kprof.fanout_worker``, one per
GPU, framed pickles on its stdin/stdout) and a Ray actor (:mod:`kprof.executors`).
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import sys
import tempfile
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from kprof import runtime

if TYPE_CHECKING:
    from kprof.context import ProfileOptions
    from kprof.device import Ceiling

# Test-only fault injection, comma-separated specs: "K" makes the worker exit abruptly when handed case index
# K; "K:PATH" does so only while PATH does not exist (it creates PATH first), so the retry succeeds.
EXIT_HOOK_ENV = "KPROF_TEST_WORKER_EXIT_AT"
HANG_HOOK_ENV = "KPROF_TEST_WORKER_HANG_AT"  # "K": the worker hangs on case K (timeouts, Ctrl-C)


class Sink:
    """Stands in for :class:`kprof.store.RunStore` inside a worker: records the writes, keeps traces local.

    Run ids are arm slots (``"arm0"``, ``"arm1"``, ...); the driver maps them to its run ids."""

    def __init__(self, trace_root: Path) -> None:
        self.trace_root = trace_root
        self.root = trace_root
        self.ops: list[tuple[str, tuple, dict]] = []

    def _record(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.ops.append((name, args, kwargs))

    def add_case(self, run_id: str, idx: int, row: Any, samples: Any) -> None:
        self._record("add_case", run_id, idx, dict(row), {k: list(v or ()) for k, v in samples.items()})

    def update_cases(self, run_id: str, updates: Any) -> None:
        self._record("update_cases", run_id, updates)

    def add_launches(self, run_id: str, launches: Any) -> None:
        self._record("add_launches", run_id, launches)

    def clear_launches(self, run_id: str) -> None:
        self._record("clear_launches", run_id)

    def add_capture(self, run_id: str, profiler: str, version: str, run: Any, notes: str | None = None) -> None:
        self._record("add_capture", run_id, profiler, version, run, notes=notes)

    def set_fields(self, run_id: str, **fields: Any) -> None:
        self._record("set_fields", run_id, **fields)

    def run(self, ref: str) -> dict:
        """The run record is the driver's: a worker reads it as empty (no notes yet, as far as it knows)."""
        return {}

    def trace_dir(self, run_id: str) -> Path:
        path = self.trace_root / run_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def take(self) -> list[tuple[str, tuple, dict]]:
        ops, self.ops = self.ops, []
        return ops


def gpu_identity(index_hint: str | None = None) -> dict:
    """UUID, physical index, name and (where nvidia-smi reports one) serial of the GPU this process uses."""
    import shutil
    import subprocess

    import torch

    visible = runtime.env("CUDA_VISIBLE_DEVICES") or ""
    physical = index_hint or (visible.split(",")[0].strip() if visible else "0")
    p = torch.cuda.get_device_properties(0)
    uuid = getattr(p, "uuid", None)
    ident = {"gpu_name": p.name, "gpu_index": physical, "gpu_uuid": None, "gpu_serial": None}
    if uuid is not None:
        text = str(uuid)
        ident["gpu_uuid"] = text if text.startswith("GPU-") else f"GPU-{text}"
    exe = shutil.which("nvidia-smi")
    if exe:
        query = ident["gpu_uuid"] or physical
        try:
            res = subprocess.run(
                [exe, f"--id={query}", "--query-gpu=index,uuid,serial", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            parts = [s.strip() for s in res.stdout.strip().split(",")]
            if res.returncode == 0 and len(parts) == 3:
                ident["gpu_index"], ident["gpu_uuid"] = parts[0], parts[1]
                # boards without a serial (GeForce) say "[N/A]"
                ident["gpu_serial"] = None if parts[2].startswith("[") else parts[2]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return ident


def arm_code(arm: Any) -> dict[str, Any]:
    """What code an arm runs, as the driver and its workers compare it: the commit and the closure's hashes."""
    return {"commit": arm.git_commit, "hashes": dict(arm.source_hashes)}


class CaseWorker:
    """Measures cases of one invocation; see the module docstring."""

    def __init__(self, opts: ProfileOptions, mode: str, seed: int, worker: str, ceiling: Ceiling | None = None) -> None:
        """``ceiling``: this GPU's ceilings as :func:`prepare` measured them before the options arrived."""
        self.opts, self.mode, self.seed, self.worker = opts, mode, seed, worker
        self.kept_ceiling = ceiling
        self.tmp = Path(tempfile.mkdtemp(prefix=f"kprof-worker-{worker}-"))
        self.sink = Sink(self.tmp / "traces")
        self.results: list[list[Any]] | None = None

    def hello(self) -> dict:
        """Load the family (every arm), find the profiler, identify the device, measure its ceilings."""
        from kprof import device as devmod
        from kprof.context import RunContext, quiet
        from kprof.registry import get_family
        from kprof.runner import plan_run, resolve_mode

        mode = resolve_mode(self.mode)
        plan = plan_run(self.opts, mode, get_family(self.opts.family), self.tmp / "cache", quiet, seed=self.seed)
        dev = devmod.current_device()
        ceiling = self._ceiling(mode)
        self.ctx = RunContext.of(plan, store=self.sink, device=dev, ceiling=ceiling, progress=quiet)
        self.cases = plan.selection.cases()
        self.results = [[] for _ in plan.arms]
        ident = (
            gpu_identity()
            if mode == "gpu"
            else {"gpu_name": None, "gpu_index": None, "gpu_uuid": None, "gpu_serial": None}
        )
        self.ident = {"worker": self.worker, "host": socket.gethostname(), **ident}
        import kprof

        return {
            "device": dev.to_dict(),
            "ceiling": asdict(ceiling) if ceiling else None,
            "identity": self.ident,
            "cases": [c.id for c in self.cases],
            "pid": os.getpid(),
            "kprof_file": kprof.__file__,
            "settings": asdict(plan.settings),
            # the code each arm runs here: a worker resolves --rev names itself (at its start, or a replacement's)
            "arms": [arm_code(a) for a in plan.arms],
        }

    def _ceiling(self, mode: str) -> Ceiling | None:
        """This GPU's ceilings: those :func:`prepare` kept (same process, same pinned GPU, moments ago),
        else measured now; none for an interpreter run."""
        from kprof import device as devmod

        if mode != "gpu":
            return None
        return self.kept_ceiling if self.kept_ceiling is not None else devmod.measure_ceilings()

    def _slots(self) -> list[str]:
        return [f"arm{j}" for j in range(len(self.ctx.arms))]  # the Sink's run ids, one per arm

    def measure(self, index: int) -> list:
        """Case ``index`` of the selection, every arm interleaved; the store writes it made."""
        from kprof.runner import measure_cases

        _fault_hook(index)
        try:
            res = measure_cases(self.ctx, self._slots(), [self.cases[index]], first_index=index)
        except BaseException:
            # the driver records this case as failed; writes it made before raising (one arm's row of several)
            # would otherwise go out with the next case's and replace that record with half a case
            self.sink.take()
            raise
        for j, r in enumerate(res):
            self.results[j] += r
        return self.sink.take()

    def finish(self) -> dict:
        """Offline resources (interpreter sweeps) and the profiler pass over this worker's cases; the traces.

        A profiler failure is returned as ``error`` (the measured cases are already with the driver)."""
        from kprof.runner import profile_cases

        error = None
        try:
            if self.results and any(self.results):
                profile_cases(self.ctx, self._slots(), self.results)
        except Exception as exc:  # noqa: BLE001 - the profiler failed: the cases stay, the run is incomplete
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()[-1000:]
        files = [
            (p.relative_to(self.sink.trace_root).as_posix(), p.read_bytes())
            for p in sorted(self.sink.trace_root.rglob("*"))
            if p.is_file()
        ]
        return {"ops": self.sink.take(), "files": files, "trace_root": str(self.sink.trace_root), "error": error}


def _fault_hook(index: int) -> None:
    if runtime.env(HANG_HOOK_ENV) == str(index):
        import time

        time.sleep(3600)
    for spec in filter(None, (runtime.env(EXIT_HOOK_ENV) or "").split(",")):
        at, _, marker = spec.partition(":")
        if int(at) != index or (marker and Path(marker).exists()):
            continue
        if marker:
            Path(marker).touch()
        os._exit(17)


# ------------------------------------------------------------------------------------ local process loop
def write_frame(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("stream closed")
    (n,) = struct.unpack("<Q", head)
    data = stream.read(n)
    if len(data) < n:
        raise EOFError("stream closed mid-frame")
    return pickle.loads(data)


def prepare() -> Ceiling | None:
    """What a worker can do before it knows the run (``--prepare``, a worker started early): import torch,
    kprof's measuring modules and Triton, initialise CUDA and measure this GPU's ceilings.

    Returns the ceilings, or None for a CPU worker (no CUDA, or the interpreter) and when measuring fails:
    then ``hello`` measures again, as a worker started without ``--prepare`` does, and a failure reaches the
    driver as that command's error."""
    import torch

    from kprof import device, runner  # noqa: F401 - imported now, while the driver still runs its checks

    if runtime.interpreting() or not torch.cuda.is_available():
        return None
    import triton  # noqa: F401 - the family's kernels need it (a GPU run's: CUDA is there, no interpreter)

    try:
        torch.cuda.init()
        return device.measure_ceilings()
    except Exception:  # noqa: BLE001 - hello measures again and reports the failure as its error
        traceback.print_exc()  # into the worker's log
        return None


def exit_with_driver() -> None:
    """End this worker, and its process group when it leads one, as soon as its driver is gone.

    Why: a local worker runs in its own session (Ctrl-C reaches the driver only), so nothing else stops it
    when its driver dies without killing it (SIGKILL, a SIGTERM before the run began); a driver's death
    reparents the worker, which this thread notices within half a second."""
    import signal
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="kprof-exit-with-driver", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    """Serve commands on stdin (framed pickles) until ``finish``; replies go to the original stdout.

    ``--prepare``: :func:`prepare` before the first command; its ceilings stand in for hello's own.
    Kernel code may print: fd 1 is pointed at stderr so nothing but frames reaches the driver."""
    argv = sys.argv[1:] if argv is None else argv
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    exit_with_driver()
    kept = prepare() if "--prepare" in argv else None
    worker: CaseWorker | None = None
    while True:
        try:
            cmd, arg = read_frame(inp)
        except EOFError:
            return
        try:
            if cmd == "init":
                worker = CaseWorker(*arg, ceiling=kept)
                write_frame(out, ("hello", worker.hello()))
            elif cmd == "case":
                write_frame(out, ("ops", worker.measure(arg)))
            elif cmd == "finish":
                write_frame(out, ("finished", worker.finish()))
                return
        except Exception as exc:  # noqa: BLE001 - any failure goes back to the driver as an error frame
            write_frame(out, ("error", "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-3000:]))
            if cmd == "init":
                return


if __name__ == "__main__":
    main()
