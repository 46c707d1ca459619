"""A case written again lands whole: nothing of its earlier write (samples of a kind the new write lacks, the
GPU that measured the earlier attempt) stays beside the new row."""

from __future__ import annotations

from kprof.store import RunStore
from tests.toolkit.test_store import record, row


def test_a_case_written_again_keeps_no_samples_of_its_earlier_write(store_path):
    """The fan-out driver records a case it gave up on as an error row without samples; timings of an
    earlier write of the case must not stay beside it (read back as that error case's samples)."""
    st = RunStore(store_path)
    rid = st.begin_run(record())
    case = "rmsnorm/a/4x4/fp32"
    st.add_case(rid, 0, row(case), {"gpu": [0.001, 0.002], "host": [5.0], "cold_kernel/0/k": [1.0]})
    st.add_case(rid, 0, row(case, status="error", ok=False, gpu_time_us=None, note="not measured: lost"), {})
    assert st.samples(rid, case).empty
    assert st.metrics(rid).loc[0, "status"] == "error"


def test_a_case_written_again_keeps_only_the_new_writes_kinds(store_path):
    st = RunStore(store_path)
    rid = st.begin_run(record())
    case = "rmsnorm/a/4x4/fp32"
    st.add_case(rid, 0, row(case), {"gpu": [0.001], "cold_kernel/0/old_kernel": [1.0]})
    st.add_case(rid, 0, row(case), {"gpu": [0.003], "cold_kernel/0/new_kernel": [2.0]})
    got = st.samples(rid, case).sort_values("kind")
    assert list(got["kind"]) == ["cold_kernel/0/new_kernel", "gpu"] and list(got["value"]) == [2.0, 0.003]


def test_a_case_written_again_forgets_the_gpu_of_its_earlier_write(store_path):
    st = RunStore(store_path)
    rid = st.begin_run(record())
    case = "rmsnorm/a/4x4/fp32"
    st.add_case(rid, 0, row(case), {"gpu": [0.001]})
    st.add_case_device(rid, case, {"worker": "gpu1", "gpu_uuid": "GPU-1", "attempt": 1})
    st.add_case(rid, 0, row(case, status="error", ok=False, note="not measured: lost"), {})
    assert st.case_devices(rid).empty
