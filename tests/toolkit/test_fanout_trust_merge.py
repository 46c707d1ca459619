"""What the fan-out driver merges into one stored run: only cases a worker measured as the driver planned them,
and a run record that claims nothing of one worker's GPU for another's cases.

The driver (:class:`kprof.fanout._Fanout`) runs with a real plan and store, but its executor is faked: each
"worker" answers ``init`` with a hello and ``case`` with the store writes a real worker makes for the case it
measures, which is case ``index`` of its *own* selection."""

from __future__ import annotations

import time
from dataclasses import asdict, replace

import pytest

from kprof.context import quiet
from kprof.executors import Event, Slot
from kprof.fanout import _Fanout
from kprof.fanout_worker import CaseWorker, Sink, arm_code
from kprof.harness import BenchSettings
from kprof.registry import get_family
from kprof.runner import ProfileOptions, plan_run, resolve_mode
from kprof.store import RunStore

PROVIDERS = ("triton_one_row", "torch_eager")
SHAPES = ((3, 1000), (5, 333))


class FakeExecutor:
    """Speaks the executor protocol; ``hellos`` by slot name, ``measures[slot](index)`` -> that worker's case id."""

    label = "fake executor"

    def __init__(self, hellos: dict, measures: dict) -> None:
        self.hellos, self.measures = hellos, measures
        self.slots: dict[int, Slot] = {}
        self.events: list[Event] = []
        self.killed: set[int] = set()

    def start(self, slot: Slot, init_args: tuple) -> int:
        handle = len(self.slots)
        self.slots[handle] = slot
        hello = self.hellos[slot.name]  # a list: one hello per process started on the slot (replacements)
        hello = hello.pop(0) if isinstance(hello, list) else hello
        if hello is not None:  # None: a process that never says hello and never dies
            self.events.append(Event(handle, "hello", hello))
        return handle

    def send(self, handle: int, cmd: str, arg=None) -> None:
        if cmd == "case":
            case_id = self.measures[self.slots[handle].name](arg)
            if case_id is None:  # the worker died on this case
                self.events.append(Event(handle, "died", "worker process 1 exited with status 17"))
                return
            self.events.append(Event(handle, "ops", [("add_case", ("arm0", arg, _row(case_id), {"gpu": [0.01]}), {})]))
        elif cmd == "finish":
            self.events.append(Event(handle, "finished", {"ops": [], "files": [], "trace_root": "/w", "error": None}))

    def poll(self, timeout: float) -> list[Event]:
        out, self.events = self.events, []
        return out

    def kill(self, handle: int) -> None:
        self.killed.add(handle)

    def close(self) -> None:
        pass


def _row(case_id: str) -> dict:
    family, provider, shape, dtype = case_id.split("/")
    return {
        "case": case_id,
        "family": family,
        "provider": provider,
        "kind": "library",
        "shape": shape,
        "dtype": dtype,
        "status": "ok",
        "ok": True,
        "gpu_time_us": 10.0,
    }


def _plan(tmp_path, providers=PROVIDERS):
    opts = ProfileOptions(
        family="rmsnorm",
        providers=providers,
        shapes=SHAPES,
        dtypes=("fp16",),
        mode="interpreter",
        store=str(tmp_path / "k.db"),
        settings=BenchSettings(seed=7),
        profiler="none",
    )
    mode = resolve_mode("interpreter")
    return plan_run(opts, mode, get_family("rmsnorm"), tmp_path / "cache", quiet, seed=7)


def _hello(plan, name: str, gpu: str = "NVIDIA H100 80GB HBM3", gbps: float = 3000.0, cases=None) -> dict:
    return {
        "device": {"name": gpu},
        "ceiling": {"gbps": gbps, "copy_bytes": 1 << 30, "time_ms": 0.5, "tflops": {"fp16": 700.0}},
        "identity": {
            "worker": name,
            "host": "h",
            "gpu_name": gpu,
            "gpu_index": name[-1],
            "gpu_uuid": f"GPU-{name}",
            "gpu_serial": None,
        },
        "cases": [c.id for c in plan.selection.cases()] if cases is None else cases,
        "pid": 1,
        "kprof_file": "/x/kprof/__init__.py",
        "settings": asdict(plan.settings),
        "arms": [arm_code(a) for a in plan.arms],
    }


def _only_gpu0_stored(store: RunStore, fan: _Fanout, planned: list[str]) -> dict:
    """The run record, after checking that every planned case was stored once, all of them gpu0's (the other
    worker refused)."""
    run_id = fan.run_ids[0]
    assert list(store.metrics(run_id)["case"]) == planned
    assert set(store.case_devices(run_id)["worker"]) == {"gpu0"}
    return store.run(run_id)


def _dies_on_its_first_case(cases: list[str]):
    """A worker's ``measures``: it dies on the first case it is sent, then measures case ``i`` as ``cases[i]``."""
    died = []

    def measure(i):
        if not died:
            died.append(i)
            return None
        return cases[i]

    return measure


def _run(tmp_path, plan, hellos: dict, measures: dict) -> tuple[RunStore, _Fanout]:
    store = RunStore(tmp_path / "k.db")
    slots = [Slot(name) for name in hellos]
    ex = FakeExecutor(hellos, measures)
    fan = _Fanout(plan, store, ex, slots, quiet)
    fan.start({s.name: ex.start(s, ()) for s in slots}, time.monotonic())
    fan.measure()
    fan.finish()
    return store, fan


def test_a_worker_whose_selection_differs_is_refused_not_stored_under_the_drivers_case_numbers(tmp_path):
    """A worker measures case ``index`` of its own selection. One whose selection has another provider (a
    package installed on its node only: liger_kernel on one Ray node) measured other cases than the driver
    stored them as: some planned cases never ran, others twice, one not planned at all, and the run read
    complete."""
    plan = _plan(tmp_path)
    mine = [c.id for c in plan.selection.cases()]
    theirs = [*mine[:1], mine[0].replace("triton_one_row", "torch_F"), *mine[1:]]  # one provider more
    hellos = {"gpu0": _hello(plan, "gpu0"), "gpu1": _hello(plan, "gpu1", cases=theirs)}
    store, fan = _run(tmp_path, plan, hellos, {"gpu0": mine.__getitem__, "gpu1": theirs.__getitem__})
    run_id = fan.run_ids[0]
    m = store.metrics(run_id)
    assert list(m["case"]) == mine  # every planned case, once, in plan order, none unplanned
    assert set(store.case_devices(run_id)["worker"]) == {"gpu0"}
    run = store.run(run_id)
    assert run["status"] == "incomplete"
    assert "gpu1" in run["error"] and "torch_F" in run["error"] and "selection" in run["error"]


def test_a_worker_with_other_measurement_settings_is_refused(tmp_path):
    """Samples taken with another repetition budget than the run records (another kprof on the worker) are
    not pooled into the run as if measured with the run's."""
    plan = _plan(tmp_path)
    mine = [c.id for c in plan.selection.cases()]
    other = _hello(plan, "gpu1")
    other["settings"] = asdict(replace(plan.settings, rep_ms=plan.settings.rep_ms * 2))
    hellos = {"gpu0": _hello(plan, "gpu0"), "gpu1": other}
    store, fan = _run(tmp_path, plan, hellos, {"gpu0": mine.__getitem__, "gpu1": mine.__getitem__})
    run = _only_gpu0_stored(store, fan, mine)
    assert run["status"] == "incomplete" and "gpu1" in run["error"] and "rep_ms" in run["error"]


def test_a_worker_running_other_kernel_code_is_refused(tmp_path):
    """Each worker loads the arms itself (a --rev name resolved when it starts, a replacement's hours later; its
    own checkout for the working tree): one that loaded another commit, or files with other hashes, measured
    other code than the run records as measured."""
    plan = _plan(tmp_path)
    mine = [c.id for c in plan.selection.cases()]
    moved = _hello(plan, "gpu1")
    code = moved["arms"][0]
    name = next(iter(code["hashes"]))
    moved["arms"] = [{"commit": None, "hashes": {**code["hashes"], name: "0" * 16}}]  # no git there: hashes tell
    hellos = {"gpu0": _hello(plan, "gpu0"), "gpu1": moved}
    store, fan = _run(tmp_path, plan, hellos, {"gpu0": mine.__getitem__, "gpu1": mine.__getitem__})
    run = _only_gpu0_stored(store, fan, mine)
    assert run["status"] == "incomplete" and "gpu1" in run["error"] and "other kernel code" in run["error"]
    assert f"files hashed otherwise: {name}" in run["error"]


def test_a_worker_on_another_commit_of_a_revision_is_refused(tmp_path):
    """With --rev, a worker that resolved the name to another commit (the branch moved before it started)."""
    plan = _plan(tmp_path)
    plan = replace(plan, options=replace(plan.options, revisions=("main",)))
    mine = [c.id for c in plan.selection.cases()]
    moved = _hello(plan, "gpu1")
    moved["arms"] = [{**moved["arms"][0], "commit": "f" * 40}]
    hellos = {"gpu0": _hello(plan, "gpu0"), "gpu1": moved}
    store, fan = _run(tmp_path, plan, hellos, {"gpu0": mine.__getitem__, "gpu1": mine.__getitem__})
    run = store.run(fan.run_ids[0])
    assert run["status"] == "incomplete" and "main: commit ffffffffff" in run["error"]


def test_workers_on_two_gpu_kinds_leave_the_run_without_one_workers_ceiling(tmp_path):
    """The run record's ceiling is what the report says every case's % of peak is against, and what the
    dashboards' roofline draws every case under; with workers on two GPU kinds no one ceiling is that."""
    plan = _plan(tmp_path)
    mine = [c.id for c in plan.selection.cases()]
    hellos = {
        "gpu0": _hello(plan, "gpu0", gpu="NVIDIA H100 80GB HBM3", gbps=3000.0),
        "gpu1": _hello(plan, "gpu1", gpu="NVIDIA A100-SXM4-80GB", gbps=1700.0),
    }
    store, fan = _run(tmp_path, plan, hellos, {"gpu0": mine.__getitem__, "gpu1": mine.__getitem__})
    run = store.run(fan.run_ids[0])
    assert "(mixed)" in run["device_name"]
    assert run["ceiling_gbps"] is None and run["ceiling"] is None
    assert "% peak is against it" not in run["report_md"]
    gbps = {w["worker"]: w["ceiling_gbps"] for w in run["config"]["fanout"]["workers"]}
    assert gbps == {"gpu0": 3000.0, "gpu1": 1700.0}  # each worker's own, still on record


def test_workers_on_one_gpu_kind_keep_the_run_ceiling(tmp_path):
    plan = _plan(tmp_path)
    mine = [c.id for c in plan.selection.cases()]
    hellos = {"gpu0": _hello(plan, "gpu0", gbps=3000.0), "gpu1": _hello(plan, "gpu1", gbps=3010.0)}
    store, fan = _run(tmp_path, plan, hellos, {"gpu0": mine.__getitem__, "gpu1": mine.__getitem__})
    run = store.run(fan.run_ids[0])
    assert run["status"] == "complete" and run["ceiling_gbps"] == 3000.0
    assert list(store.metrics(fan.run_ids[0])["case"]) == mine


def test_a_replacement_worker_on_a_gpu_kind_the_run_did_not_start_with_is_refused(tmp_path):
    """A replacement worker (Ray places it on any free GPU) on another GPU kind than the run's: its cases would
    be stored under a run record that names one kind and one kind's ceiling."""
    plan = _plan(tmp_path)
    mine = [c.id for c in plan.selection.cases()]
    first_dies = _dies_on_its_first_case(mine)
    hellos = {
        "gpu0": _hello(plan, "gpu0"),
        "gpu1": [_hello(plan, "gpu1"), _hello(plan, "gpu1#2", gpu="NVIDIA A100-SXM4-80GB", gbps=1700.0)],
    }
    store, fan = _run(tmp_path, plan, hellos, {"gpu0": mine.__getitem__, "gpu1": first_dies})
    run_id = fan.run_ids[0]
    run = store.run(run_id)
    assert list(store.metrics(run_id)["case"]) == mine
    devices = store.case_devices(run_id)
    assert set(devices["gpu_name"]) == {"NVIDIA H100 80GB HBM3"} and "gpu1#2" not in set(devices["worker"])
    assert run["device_name"] == "NVIDIA H100 80GB HBM3" and run["ceiling_gbps"] == 3000.0
    assert run["status"] == "incomplete" and "NVIDIA A100-SXM4-80GB" in run["error"]


def test_a_replacement_worker_that_never_says_hello_does_not_hold_the_run(tmp_path, monkeypatch):
    """gpu1 dies on its first case; its replacement process never says hello and never dies. Before, the driver
    counted it as busy and waited for it without end; now it is stopped after the start limit and the run ends,
    every case measured by gpu0 or recorded."""
    import kprof.fanout

    monkeypatch.setattr(kprof.fanout, "START_LIMIT_S", 1.0)
    plan = _plan(tmp_path)
    plan = replace(plan, options=replace(plan.options, case_timeout_s=0.5))
    mine = [c.id for c in plan.selection.cases()]
    first_dies = _dies_on_its_first_case(mine)
    hellos = {"gpu0": _hello(plan, "gpu0"), "gpu1": [_hello(plan, "gpu1"), None]}
    started = time.monotonic()
    store, fan = _run(tmp_path, plan, hellos, {"gpu0": mine.__getitem__, "gpu1": first_dies})
    assert time.monotonic() - started < 60
    run = store.run(fan.run_ids[0])
    assert list(store.metrics(fan.run_ids[0])["case"]) == mine
    assert run["status"] == "incomplete" and "did not start within 1 s" in run["error"]


class _Ctx:
    arms = ("today",)

    def __init__(self, sink: Sink) -> None:
        self.store = sink


def test_a_case_that_raised_leaves_none_of_its_writes_for_the_next_case(tmp_path, monkeypatch):
    """A case whose measurement raised after some of its writes (one arm stored, the next arm's row failed)
    is reported as a kprof error and recorded failed by the driver; its leftover writes must not ride along
    with the worker's next case and overwrite that record."""
    import kprof.runner

    calls = []

    def measure_cases(ctx, run_ids, cases, first_index=0):
        calls.append(first_index)
        ctx.store.add_case(run_ids[0], first_index, _row(f"rmsnorm/p{first_index}/3x1000/fp16"), {"gpu": [0.01]})
        if first_index == 0:
            raise ValueError("the second arm's row could not be built")
        return [[first_index]]

    monkeypatch.setattr(kprof.runner, "measure_cases", measure_cases)
    worker = CaseWorker.__new__(CaseWorker)
    worker.sink = Sink(tmp_path / "traces")
    worker.ctx, worker.cases, worker.results = _Ctx(worker.sink), ["c0", "c1"], [[]]
    with pytest.raises(ValueError):
        worker.measure(0)
    ops = worker.measure(1)
    assert [op[1][1] for op in ops] == [1]  # case 1's writes only
    assert calls == [0, 1]
