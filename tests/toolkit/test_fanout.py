"""Fan-out over worker processes and Ray: same answers as one process, faults retried and named, Ctrl-C."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import torch

from kprof.errors import KprofError
from kprof.fanout import _drop_cleared_launches, device_mismatch, local_slots, parse_workers
from kprof.fanout_worker import EXIT_HOOK_ENV, HANG_HOOK_ENV
from kprof.harness import BenchSettings
from kprof.runner import ProfileOptions, profile_runs
from kprof.store import RunStore

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="CPU fan-out: interpreter worker processes")

SWEEP = (
    "triton_one_row[BLOCK_N=512,num_warps=2]",
    "triton_one_row[BLOCK_N=2048,num_warps=2]",
    "triton_one_row[BLOCK_N=2048,num_warps=8]",
    "triton_one_row",
    "torch_eager",
)
SHAPES = ((3, 1000), (5, 333))


def _opts(store, seed, **kw) -> ProfileOptions:
    return ProfileOptions(
        family="rmsnorm",
        providers=kw.pop("providers", SWEEP),
        shapes=kw.pop("shapes", SHAPES),
        dtypes=("fp16",),
        mode="interpreter",
        store=str(store),
        settings=BenchSettings(seed=seed),
        profiler="none",
        **kw,
    )


def test_two_workers_give_the_same_cases_and_results_as_one(tmp_path):
    seed = random.randrange(1, 2**31)
    store = tmp_path / "k.db"
    one = profile_runs(_opts(store, seed))[0]
    two = profile_runs(_opts(store, seed, workers="2"))[0]
    st = RunStore(store)
    a, b = st.metrics(one), st.metrics(two)
    assert list(a["case"]) == list(b["case"]) and len(a) == len(SWEEP) * len(SHAPES)
    cols = ["status", "note", "max_rel_err", "max_abs_err", "config", "bytes"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert (a["status"] == "ok").sum() >= 6  # BLOCK_N=512 is skipped at N=1000 in both
    assert st.run(two)["status"] == "complete" and st.run(two)["error"] is None
    dev = st.case_devices(two)
    assert set(dev["case_id"]) == set(b["case"]) and set(dev["worker"]) == {"cpu0", "cpu1"}
    assert (dev["attempt"] == 1).all()
    # two (shape, dtype) groups for two workers: cases are spread one by one, and the report says where a
    # shape's providers were compared across workers
    split = dev.groupby(dev["case_id"].str.split("/").str[2])["worker"].nunique().max() > 1
    assert ("measured on more than one device" in st.run(two)["report_md"]) == split
    assert st.case_devices(one).empty
    fan = st.run(two)["config"]["fanout"]
    assert fan["executor"] == "local processes" and len(fan["workers"]) == 2


def test_killed_workers_cases_are_retried_once_then_the_run_reads_incomplete_with_the_lost_case_named(
    tmp_path, monkeypatch
):
    # case `lost` kills every worker handed it (lost, retried, lost again); case `once` kills only the first
    lost, once = random.sample(range(6), 2)
    monkeypatch.setenv(EXIT_HOOK_ENV, f"{lost},{once}:{tmp_path / 'died-once'}")
    store = tmp_path / "k.db"
    run_id = profile_runs(_opts(store, 11, workers="2", providers=SWEEP[1:4]))[0]
    st = RunStore(store)
    run, m = st.run(run_id), st.metrics(run_id).set_index("case")
    lost_id, once_id = m.index[lost], m.index[once]
    assert run["status"] == "incomplete"
    assert "1 case(s) lost" in run["error"] and lost_id in run["error"] and once_id not in run["error"]
    assert m.loc[lost_id, "status"] == "error" and "lost twice" in m.loc[lost_id, "note"]
    assert m.loc[lost_id, "note"].count("exited with status 17") == 2
    others = m.drop(index=lost_id)
    assert len(others) == 5 and (others["status"] == "ok").all()
    dev = st.case_devices(run_id).set_index("case_id")
    assert lost_id not in dev.index and dev.loc[once_id, "attempt"] == 2
    assert (dev.drop(index=once_id)["attempt"] == 1).all()
    # the retry ran on the other slot, not on a replacement of the worker that died with it
    died_on = [ln.split()[1].split("#")[0] for ln in run["notes"].splitlines() if "lost:" in ln]
    assert len(died_on) == 3
    first, second = (
        part.split(":")[0].split("#")[0] for part in m.loc[lost_id, "note"].split("(", 1)[1].split("; ")[:2]
    )
    assert first != second  # its retry went to the other worker's slot
    assert "Retried after a worker was lost" in run["report_md"] and "not measured" in run["report_md"]


def test_a_hanging_case_times_out_twice_and_is_recorded_failed(tmp_path, monkeypatch):
    monkeypatch.setenv(HANG_HOOK_ENV, "2")
    store = tmp_path / "k.db"
    run_id = profile_runs(_opts(store, 13, workers="2", providers=SWEEP[2:4], case_timeout_s=6.0))[0]
    st = RunStore(store)
    run, m = st.run(run_id), st.metrics(run_id).set_index("case")
    assert run["status"] == "incomplete" and len(m) == 4
    hung = m.index[2]
    assert m.loc[hung, "status"] == "error" and m.loc[hung, "note"].count("timed out after 6 s") == 2
    assert (m.drop(index=hung)["status"] == "ok").all()


def test_ctrl_c_stops_every_worker_and_keeps_the_finished_cases(tmp_path):
    store = tmp_path / "k.db"
    env = {**os.environ, HANG_HOOK_ENV: "3"}
    cmd = [
        sys.executable,
        "-m",
        "kprof.cli",
        "sweep",
        "rmsnorm",
        "--version",
        "triton_one_row",
        "--param",
        "BLOCK_N=2048",
        "--param",
        "num_warps=2,8",
        "--shapes",
        "3x1000,5x333",
        "--dtypes",
        "fp16",
        "--mode",
        "interpreter",
        "--store",
        str(store),
        "--workers",
        "2",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    done = 0
    while time.monotonic() < deadline and done < 5:
        time.sleep(1)
        if store.exists():
            runs = RunStore(store).runs()
            done = int(runs["cases"].iloc[0]) if len(runs) else 0
    assert done == 5, "the five cases that do not hang should have finished"
    run = RunStore(store).run("latest")
    pids = [w["pid"] for w in run["config"]["fanout"]["workers"]]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()[-2000:]
    run = RunStore(store).run("latest")
    assert run["status"] == "incomplete" and "KeyboardInterrupt" in run["error"]
    assert "was being measured on" in run["error"]
    assert len(RunStore(store).metrics(run["id"])) == 5
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.slow
def test_ray_local_runs_a_sweep_end_to_end_into_one_store(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'kprof[ray]'")
    from typer.testing import CliRunner

    from kprof.cli import app

    store = tmp_path / "k.db"
    res = CliRunner().invoke(
        app,
        [
            "sweep",
            "rmsnorm",
            "--version",
            "triton_one_row",
            "--param",
            "BLOCK_N=1024,2048",
            "--param",
            "num_warps=4",
            "--shapes",
            "3x1000",
            "--dtypes",
            "fp16,fp32",
            "--store",
            str(store),
            "--ray",
            "local",
            "--workers",
            "2",
        ],
    )
    assert res.exit_code == 0, res.output
    assert not ray.is_initialized()  # the throwaway instance is gone
    st = RunStore(store)
    run = st.run("latest")
    m = st.metrics(run["id"])
    assert run["status"] == "complete" and len(m) == 6 and (m["status"] == "ok").all()
    assert m["registers_per_thread"].notna().all()  # offline sm_90 resources came back from the workers
    fan = run["config"]["fanout"]
    assert fan["executor"].startswith("Ray local instance") and len(fan["workers"]) == 2
    src = os.path.dirname(os.path.dirname(__import__("kprof").__file__))
    # kprof reached the workers through Ray's runtime environment, not this checkout's path
    assert all(not w["kprof"].startswith(src) for w in fan["workers"]), fan["workers"]
    assert set(st.case_devices(run["id"])["worker"]) <= {"ray0", "ray1"}


@pytest.mark.skipif(
    subprocess.run(["git", "-C", os.path.dirname(__file__), "rev-parse", "HEAD"], capture_output=True).returncode != 0,
    reason="needs the sources in a git checkout",
)
def test_both_revisions_of_a_case_run_on_one_worker(tmp_path):
    store = tmp_path / "k.db"
    opts = _opts(
        store,
        14,
        workers="2",
        providers=("triton_tuned", "torch_eager"),
        shapes=((3, 37), (2, 300)),
        revisions=("HEAD", "HEAD"),
    )
    ids = profile_runs(opts)
    st = RunStore(store)
    a, b = (st.case_devices(i).set_index("case_id") for i in ids)
    assert len(a) == 4 and set(a["worker"]) == {"cpu0", "cpu1"}
    assert (a["worker"] == b.loc[a.index, "worker"]).all()  # every case: both arms on the same worker
    assert all(st.run(i)["status"] == "complete" for i in ids)
    from kprof.diff import diff_runs

    assert not any("different GPUs" in w for w in diff_runs(st, ids[0], ids[1]).warnings)


def test_workers_option_is_checked():
    assert parse_workers("all") == "all" and parse_workers("3") == 3 and parse_workers(None) is None
    for bad in ("0", "-2", "two"):
        with pytest.raises(KprofError, match="--workers must be"):
            parse_workers(bad)
    slots = local_slots("interpreter", 3)
    assert [s.name for s in slots] == ["cpu0", "cpu1", "cpu2"]
    assert all(s.env["TRITON_INTERPRET"] == "1" and s.env["CUDA_VISIBLE_DEVICES"] == "" for s in slots)


def test_gpu_slots_pin_one_visible_device_each(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    slots = local_slots("gpu", "all")
    assert [(s.name, s.env["CUDA_VISIBLE_DEVICES"]) for s in slots] == [("gpu3", "3"), ("gpu5", "5")]
    assert "CUDA_DEVICE_ORDER" not in slots[0].env  # the user's own numbering is kept
    with pytest.raises(KprofError, match="shows 2 GPU"):
        local_slots("gpu", 4)


def _devices(rows):
    return pd.DataFrame(
        rows, columns=["case_id", "worker", "host", "gpu_index", "gpu_uuid", "gpu_name", "gpu_serial", "attempt"]
    )


def test_device_mismatch_names_cases_measured_on_different_gpus():
    uu = [f"GPU-{random.getrandbits(64):016x}" for _ in range(3)]
    a = _devices([("c1", "gpu0", "h", "0", uu[0], "H100", None, 1), ("c2", "gpu1", "h", "1", uu[1], "H100", None, 1)])
    b = _devices([("c1", "gpu0", "h", "0", uu[0], "H100", None, 1), ("c2", "gpu0", "h", "0", uu[2], "H200", None, 1)])
    run_a, run_b = {"id": "A", "device_name": "H100"}, {"id": "B", "device_name": "H100"}
    warn = device_mismatch(run_a, run_b, a, b)
    assert len(warn) == 1 and warn[0].startswith("1 of 2 matched cases") and uu[1] in warn[0] and "H200" in warn[0]
    assert device_mismatch(run_a, run_b, a, a) == []
    one = device_mismatch(run_a, run_b, a, _devices([]))
    assert len(one) == 1 and "spread its cases over 2 GPUs" in one[0]
    assert device_mismatch(run_a, run_b, _devices([]), _devices([])) == []


def test_a_workers_fallback_clears_only_its_own_launches():
    ops = [
        ("add_launches", ("arm0", "L1"), {}),
        ("update_cases", ("arm0", "U"), {}),
        ("add_launches", ("arm1", "L2"), {}),
        ("clear_launches", ("arm0",), {}),
        ("add_launches", ("arm0", "L3"), {}),
    ]
    assert [o[1][1] for o in _drop_cleared_launches(ops)] == ["U", "L2", "L3"]


def test_trace_files_from_a_worker_land_in_the_drivers_store(tmp_path):
    """Raw traces come back as bytes; the driver writes them under its own trace folder, per worker."""
    from kprof.executors import Slot
    from kprof.fanout import _Fanout, _Worker

    st = RunStore(tmp_path / "k.db")
    fields = []
    st.set_fields = lambda run_id, **kw: fields.append((run_id, kw))
    fan = _Fanout.__new__(_Fanout)
    fan.store, fan.run_ids, fan.attempts = st, ["RUN-A", "RUN-B"], {}
    w = _Worker(0, Slot("gpu1"), "gpu1", hello={"identity": {"worker": "gpu1"}})
    data = os.urandom(333)
    root = "/elsewhere/kprof-worker-gpu1/traces"
    fan._apply(
        w,
        [("set_fields", ("arm1",), {"trace_path": f"{root}/arm1/nsys/trace.sqlite"})],
        files=[("arm1/nsys/trace.sqlite", data)],
        trace_root=root,
    )
    target = st.trace_dir("RUN-B") / "gpu1" / "nsys" / "trace.sqlite"
    assert target.read_bytes() == data
    assert fields == [("RUN-B", {"trace_path": str(target)})]  # the run points at the driver's copy
    assert not (st.trace_dir("RUN-A") / "gpu1").exists()


def test_ray_without_a_cluster_says_how_to_get_one(monkeypatch):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'kprof[ray]'")
    from kprof.executors import RayExecutor

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(KprofError, match=r"cannot reach a Ray cluster at --ray auto .*--ray local"):
        RayExecutor("auto", "interpreter", {})


def test_report_section_lists_workers_and_groups_mixed_gpu_kinds():
    from kprof.fanout import devices_section

    uu = [f"GPU-{random.getrandbits(64):016x}" for _ in range(3)]
    t = [random.uniform(3, 90) for _ in range(4)]
    metrics = pd.DataFrame(
        {
            "case": ["f/p/8x96/bf16", "f/q/8x96/bf16", "f/p/7x33/bf16", "f/q/7x33/bf16"],
            "shape": ["8x96", "8x96", "7x33", "7x33"],
            "dtype": ["bf16"] * 4,
            "status": ["ok"] * 4,
            "gpu_time_us": t,
        }
    )
    devices = _devices(
        [
            ("f/p/8x96/bf16", "gpu0", "h", "0", uu[0], "NVIDIA H100", "132", 1),
            ("f/q/8x96/bf16", "gpu0", "h", "0", uu[0], "NVIDIA H100", "132", 1),
            ("f/p/7x33/bf16", "gpu1", "h", "1", uu[1], "NVIDIA H200", None, 1),
            ("f/q/7x33/bf16", "gpu1#2", "h", "1", uu[2], "NVIDIA H200", None, 2),
        ]
    )
    run = {
        "config": {
            "fanout": {
                "executor": "local processes",
                "workers": [
                    {
                        "worker": "gpu0",
                        "host": "h",
                        "gpu_name": "NVIDIA H100",
                        "gpu_index": "0",
                        "gpu_uuid": uu[0],
                        "gpu_serial": "132",
                        "ceiling_gbps": 3012.4,
                    },
                    {
                        "worker": "gpu1",
                        "host": "h",
                        "gpu_name": "NVIDIA H200",
                        "gpu_index": "1",
                        "gpu_uuid": uu[1],
                        "gpu_serial": None,
                        "ceiling_gbps": 4410.0,
                    },
                ],
            }
        }
    }
    md = devices_section(run, metrics, devices)
    assert f"| gpu0 | h | NVIDIA H100 | 0 | {uu[0]} | 132 | 3012 | 2 |" in md
    assert f"| gpu1#2 | h | NVIDIA H200 | 1 | {uu[2]} |  | 4410 | 1 |" in md  # the replacement, its slot's ceiling
    assert "Retried after a worker was lost: f/q/7x33/bf16." in md
    assert "1 of 2 (shape, dtype) groups were measured on more than one device" in md and "7x33/bf16" in md
    assert "measured on 2 GPU kinds" in md
    h100 = md.split("### NVIDIA H100")[1].split("###")[0]
    assert f"| f/p/8x96/bf16 | ok | {t[0]:.2f} |" in h100 and "7x33" not in h100
    assert devices_section(run, metrics, _devices([])) == ""


def _fanout_with_workers(names_measured: dict[str, int]):
    from types import SimpleNamespace

    from kprof.executors import Slot
    from kprof.fanout import _Fanout, _Worker

    fan = _Fanout.__new__(_Fanout)
    written: list = []
    fan.store = SimpleNamespace(set_fields=lambda run_id, **kw: written.append((run_id, kw)))
    fan.run_ids, fan.attempts, fan.fallbacks = ["RUN-A"], {}, {}
    fan.choice = SimpleNamespace(name="nsys")
    fan.workers = {
        i: _Worker(i, Slot(name), name, hello={"identity": {"worker": name}}, measured=m)
        for i, (name, m) in enumerate(names_measured.items())
    }
    return fan, written


_FELL_BACK = (
    "set_fields",
    ("arm0",),
    {"profiler": "torch", "profiler_version": "2.11; auto fell back after nsys failed"},
)


def test_one_workers_fallback_does_not_relabel_the_whole_run():
    """gpu0's nsys pass failed and it fell back to torch.profiler; gpu1's nsys pass worked. The run used to take the
    label of whichever worker wrote last (torch here), so its nsys-named kernels of gpu1 were compared as
    torch.profiler spells them; it now says both, and which worker used which."""
    fan, written = _fanout_with_workers({"gpu0": 3, "gpu1": 4})
    fan._apply(fan.workers[0], [_FELL_BACK])
    assert written == [], "the label was written before every worker had said"
    fields = fan._profiler_fields(0)
    assert fields["profiler"] == "nsys+torch (mixed)"
    assert "torch on gpu0" in fields["profiler_version"] and "nsys on gpu1" in fields["profiler_version"]
    assert "auto fell back after nsys failed" in fields["profiler_version"]


def test_every_workers_fallback_labels_the_run_with_it():
    fan, _ = _fanout_with_workers({"gpu0": 3, "gpu1": 4})
    fan._apply(fan.workers[0], [_FELL_BACK])
    fan._apply(fan.workers[1], [_FELL_BACK])
    assert fan._profiler_fields(0) == {"profiler": "torch", "profiler_version": _FELL_BACK[2]["profiler_version"]}
    fan, _ = _fanout_with_workers({"gpu0": 3, "gpu1": 4})
    assert fan._profiler_fields(0) == {}  # no fallback: the label the run began with stands


def test_a_fallback_beside_other_fields_keeps_them():
    fan, written = _fanout_with_workers({"gpu0": 3})
    op = ("set_fields", ("arm0",), {**_FELL_BACK[2], "notes": "n"})
    fan._apply(fan.workers[0], [op])
    assert written == [("RUN-A", {"notes": "n"})]
