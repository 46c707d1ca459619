"""Fan-out workers started early: at the beginning of ``kprof profile|sweep --workers N``, before the command's
checks import torch and load the family. Without a GPU here, the GPU parts (CUDA, the ceilings) are faked
in-process; the process handling (handed on, stopped, never orphaned) runs real worker processes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import asdict

import pandas as pd
import pytest
import torch

from kprof import device as devmod
from kprof import fanout, fanout_worker, runtime
from kprof.device import Ceiling, DeviceInfo
from kprof.errors import KprofError
from kprof.executors import LocalExecutor, Slot
from kprof.fanout import EarlyWorkers, early_slots, gpu_slots, local_slots, start_early, workers_started_early
from kprof.fanout_worker import CaseWorker
from kprof.harness import BenchSettings
from kprof.runner import ProfileOptions, profile_runs
from kprof.store import RunStore

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU fan-out: GPU parts faked")

PROVIDERS = ("triton_one_row[BLOCK_N=2048,num_warps=2]", "triton_one_row", "torch_eager")
SHAPES = ((3, 1000), (5, 333))


def _opts(store, seed, **kw) -> ProfileOptions:
    return ProfileOptions(
        family="rmsnorm",
        providers=kw.pop("providers", PROVIDERS),
        shapes=SHAPES,
        dtypes=("fp16",),
        mode=kw.pop("mode", "interpreter"),
        store=str(store),
        settings=BenchSettings(seed=seed),
        profiler="none",
        **kw,
    )


def _gone(pid: int) -> bool:
    """The process and its process group no longer exist (reaped, not a zombie)."""
    for probe in (lambda: os.kill(pid, 0), lambda: os.killpg(pid, 0)):
        try:
            probe()
            return False
        except ProcessLookupError:
            pass
    return True


def _wait_gone(pids: list[int], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def _fake_ceiling() -> Ceiling:
    return Ceiling(
        gbps=random.uniform(3000, 4800),
        copy_bytes=1 << 30,
        time_ms=random.uniform(0.4, 0.7),
        tflops={"bf16": random.uniform(600, 900)},
    )


@pytest.fixture
def measured(monkeypatch):
    """Ceilings that are measured (a fresh random one per measurement, each kept in the list)."""
    calls: list[Ceiling] = []
    monkeypatch.setattr(devmod, "measure_ceilings", lambda: calls.append(_fake_ceiling()) or calls[-1])
    return calls


def _prepare_on_a_fake_gpu(inits: list[bool] | None = None) -> Ceiling | None:
    """``prepare`` with CUDA there and no interpreter: faked for this call only (kernel modules imported
    meanwhile would otherwise take the GPU paths for the rest of this test process)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runtime, "interpreting", lambda: False)
        mp.setattr(torch.cuda, "is_available", lambda: True)
        mp.setattr(torch.cuda, "init", lambda: (inits if inits is not None else []).append(True))
        return fanout_worker.prepare()


def test_prepare_measures_the_ceilings_once_and_hello_hands_on_the_kept_ones(measured, monkeypatch, tmp_path):
    inits: list[bool] = []
    kept = _prepare_on_a_fake_gpu(inits)
    assert kept is measured[0] and len(measured) == 1 and inits == [True]
    # the rest of hello on a faked GPU: the mode, the device and its identity
    monkeypatch.setattr("kprof.runner.resolve_mode", lambda requested: "gpu")
    monkeypatch.setattr(devmod, "current_device", lambda: DeviceInfo(kind="cuda", name="Fake H200", sm_count=132))
    ident = {"gpu_name": "Fake H200", "gpu_index": "1", "gpu_uuid": "GPU-" + os.urandom(8).hex(), "gpu_serial": None}
    monkeypatch.setattr(fanout_worker, "gpu_identity", lambda: dict(ident))
    seed = random.randrange(1, 2**31)
    opts = _opts(tmp_path / "k.db", seed, mode="gpu", providers=PROVIDERS[1:])
    prepared = CaseWorker(opts, "gpu", seed, "gpu1", ceiling=kept).hello()
    assert len(measured) == 1, "a prepared worker measured its ceilings twice"
    assert prepared["ceiling"] == asdict(kept) and prepared["identity"]["gpu_uuid"] == ident["gpu_uuid"]
    # without prepare, hello measures them itself; everything else in the hello is the same
    plain = CaseWorker(opts, "gpu", seed, "gpu1").hello()
    assert len(measured) == 2 and plain["ceiling"] == asdict(measured[1]) != prepared["ceiling"]
    assert {k: v for k, v in plain.items() if k != "ceiling"} == {k: v for k, v in prepared.items() if k != "ceiling"}


def test_prepare_measures_nothing_for_a_cpu_worker_and_leaves_a_failure_to_hello(measured, monkeypatch, capsys):
    inits: list[bool] = []
    assert fanout_worker.prepare() is None and measured == []  # this process: the interpreter, no CUDA
    with pytest.MonkeyPatch.context() as mp:  # a GPU worker of an interpreter run (TRITON_INTERPRET=1)
        mp.setattr(torch.cuda, "is_available", lambda: True)
        mp.setattr(torch.cuda, "init", lambda: inits.append(True))
        assert fanout_worker.prepare() is None and measured == [] and inits == []

    def broken() -> Ceiling:
        raise RuntimeError("CUDA error: out of memory while timing the copy")

    monkeypatch.setattr(devmod, "measure_ceilings", broken)
    assert _prepare_on_a_fake_gpu() is None  # hello measures again and sends the failure to the driver
    assert "out of memory while timing the copy" in capsys.readouterr().err  # the worker's log says why
    assert CaseWorker(None, "interpreter", 1, "cpu0", ceiling=_fake_ceiling())._ceiling("interpreter") is None


def test_early_slots_only_for_a_local_gpu_fanout_over_listed_gpus(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    slots = early_slots("2", None, "auto")
    assert slots == local_slots("gpu", 2) == gpu_slots(["3", "5"])  # the run's own slots: they will match
    assert early_slots("all", None, "gpu") == slots and early_slots("1", None, "auto") == slots[:1]
    for workers, ray, mode in (
        (None, None, "auto"),  # one process
        ("2", "local", "auto"),  # Ray actors
        ("2", None, "interpreter"),
        ("2", None, "cpu"),  # not a mode: the checks say so
        ("3", None, "auto"),  # more than listed: the run's own error
        ("two", None, "auto"),
    ):
        assert early_slots(workers, ray, mode) == [], (workers, ray, mode)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert early_slots("all", None, "auto") == []


def test_deciding_the_early_slots_imports_no_torch(tmp_path):
    """Without CUDA_VISIBLE_DEVICES and without nvidia-smi, no GPU is listed, and torch is not asked."""
    code = (
        "import sys\nfrom kprof.fanout import early_slots\n"
        "assert early_slots('all', None, 'auto') == []\nassert 'torch' not in sys.modules, 'torch imported'\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PATH"] = str(tmp_path)  # no nvidia-smi on it
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]


def test_early_workers_are_handed_the_run_and_measure_what_fresh_ones_do(tmp_path, monkeypatch):
    seed = random.randrange(1, 2**31)
    store = tmp_path / "k.db"
    early = start_early(local_slots("interpreter", 2), mode="interpreter")
    pids = early.pids()
    spawned = []
    real_spawn = LocalExecutor.spawn
    monkeypatch.setattr(LocalExecutor, "spawn", lambda self, *a, **kw: spawned.append(a) or real_spawn(self, *a, **kw))
    lines = []
    two = profile_runs(_opts(store, seed, workers="2"), lambda *ev: lines.append(ev[3]), early=early)[0]
    assert spawned == [], "a second worker process was started although the early ones fit the run"
    st = RunStore(store)
    fan = st.run(two)["config"]["fanout"]
    assert sorted(w["pid"] for w in fan["workers"]) == sorted(pids)
    assert any("ready" in ln and "early, beside the command's checks" in ln for ln in lines), lines
    assert st.run(two)["status"] == "complete"
    one = profile_runs(_opts(store, seed))[0]  # the same cases in one process
    cols = ["case", "status", "note", "max_rel_err", "max_abs_err", "config"]
    pd.testing.assert_frame_equal(st.metrics(one)[cols], st.metrics(two)[cols])
    assert _wait_gone(pids)


def test_early_gpu_workers_are_stopped_when_the_run_resolves_to_the_interpreter(tmp_path):
    early = start_early(gpu_slots(["0", "1"]))  # started for a GPU run; this machine has none
    pids = early.pids()
    run_id = profile_runs(_opts(tmp_path / "k.db", 5, workers="2"), early=early)[0]
    run = RunStore(tmp_path / "k.db").run(run_id)
    used = [w["pid"] for w in run["config"]["fanout"]["workers"]]
    assert run["status"] == "complete" and [w["worker"] for w in run["config"]["fanout"]["workers"]] == ["cpu0", "cpu1"]
    assert not set(used) & set(pids) and _wait_gone(pids)


def test_only_the_early_workers_of_the_runs_slots_are_kept():
    class Stub:
        def __init__(self) -> None:
            self.killed: list[int] = []
            self.closed = False

        def kill(self, handle: int) -> None:
            self.killed.append(handle)

        def close(self) -> None:
            self.closed = True

    slots = [Slot(f"gpu{g}", {"CUDA_VISIBLE_DEVICES": str(g)}) for g in random.sample(range(8), 3)]
    stub = Stub()
    early = EarlyWorkers(stub, "gpu", [(s, 10 + i) for i, s in enumerate(slots)])
    executor, handles = fanout._adopt(early, "gpu", slots[:2])  # fewer workers needed
    assert executor is stub and handles == {slots[0].name: 10, slots[1].name: 11} and stub.killed == [12]
    moved = Slot(slots[0].name, {"CUDA_VISIBLE_DEVICES": "9"})  # same name, another GPU: not the same slot
    executor, handles = fanout._adopt(EarlyWorkers(Stub(), "gpu", [(slots[0], 3)]), "gpu", [moved])
    assert handles == {} and isinstance(executor, Stub)
    other = Stub()
    executor, handles = fanout._adopt(EarlyWorkers(other, "gpu", [(slots[0], 3)]), "interpreter", slots)
    assert isinstance(executor, LocalExecutor) and handles == {} and other.closed
    executor.close()


def test_a_worker_that_dies_while_preparing_fails_its_start_and_the_others_run_every_case(tmp_path):
    early = start_early(local_slots("interpreter", 2), mode="interpreter")
    victim = random.choice(early.pids())
    os.killpg(victim, signal.SIGKILL)
    run_id = profile_runs(_opts(tmp_path / "k.db", 7, workers="2"), early=early)[0]
    st = RunStore(tmp_path / "k.db")
    run, m = st.run(run_id), st.metrics(run_id)
    assert run["status"] == "incomplete" and "did not start" in run["error"] and "SIGKILL" in run["error"]
    assert len(m) == len(PROVIDERS) * len(SHAPES) and m["status"].isin(["ok", "skipped"]).all()
    assert len(set(st.case_devices(run_id)["worker"])) == 1
    assert _wait_gone(early.pids())


def test_a_failed_check_stops_the_early_workers_before_the_error(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from kprof.cli import app

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # two GPUs listed: the command starts two workers early
    started: list[EarlyWorkers] = []
    real = fanout.start_early
    monkeypatch.setattr(
        fanout, "start_early", lambda slots, mode="gpu": started.append(real(slots, mode)) or started[-1]
    )
    name = f"nosuch{random.randrange(10**6)}"
    res = CliRunner().invoke(app, ["profile", name, "--workers", "2", "--store", str(tmp_path / "k.db")])
    assert isinstance(res.exception, KprofError) and name in str(res.exception)
    assert len(started) == 1 and len(started[0].pids()) == 2
    assert all(_gone(p) for p in started[0].pids()), "early workers outlived the failed command"


def test_ctrl_c_while_the_checks_run_stops_the_early_workers(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    with pytest.raises(KeyboardInterrupt):
        with workers_started_early("all", None, "auto") as early:
            pids = early.pids()
            raise KeyboardInterrupt
    assert len(pids) == 1 and _gone(pids[0])


def test_an_early_worker_ends_with_its_driver(tmp_path):
    """A driver killed outright (no clean-up runs) leaves no worker behind: each watches its parent."""
    code = (
        "import sys, time\nfrom kprof.fanout import gpu_slots, start_early\n"
        "early = start_early(gpu_slots(['0', '1']))\nprint(*early.pids(), flush=True)\ntime.sleep(600)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the killed driver cannot remove its workers' log folder
    driver = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    pids = [int(p) for p in driver.stdout.readline().split()]
    assert len(pids) == 2 and not any(_gone(p) for p in pids)
    driver.kill()
    driver.wait(timeout=30)
    assert _wait_gone(pids, within=30), "a worker outlived its driver"
