"""Correctness checking catches what it must; run_case records skip / fail / error without raising."""

from __future__ import annotations

import pytest
import torch

from kprof import harness, timing
from kprof.harness import BenchSettings, case_seed, check_correctness, run_case
from kprof.kernels import discover
from kprof.registry import Case, Provider

RMS = discover()["rmsnorm"]


def provider(fn, accepts_out=True, supports=None) -> Provider:
    return Provider("rmsnorm", "test", "triton", fn, "test provider", accepts_out=accepts_out, supports=supports)


def inputs(device, shape=(6, 50), dtype="fp32"):
    return RMS.make_inputs(shape, dtype, device, seed=3)


def good(x, weight, eps, out=None):
    y = RMS.providers["torch_eager"].fn(x, weight, eps)
    if out is None:
        return y
    out.copy_(y)
    return out


def test_correct_provider_passes(device):
    c = check_correctness(RMS, provider(good), Case("rmsnorm", "t", (6, 50), "fp32"), inputs(device))
    assert c.ok and c.rel_err < 1e-6 and c.unwritten == 0


def test_unwritten_row_is_caught_through_the_poisoned_output(device):
    def skips_last_row(x, weight, eps, out):
        out[:-1].copy_(good(x, weight, eps)[:-1])
        return out

    c = check_correctness(RMS, provider(skips_last_row), Case("rmsnorm", "t", (6, 50), "fp32"), inputs(device))
    assert not c.ok and c.unwritten == 50 and "never written" in c.note


def test_slightly_wrong_values_fail_the_tolerance(device):
    def off(x, weight, eps, out):
        return out.copy_(good(x, weight, eps) * 1.001)

    c = check_correctness(RMS, provider(off), Case("rmsnorm", "t", (6, 50), "fp32"), inputs(device))
    assert not c.ok and "above tolerance" in c.note and c.rel_err == pytest.approx(1e-3, rel=1e-2)


def test_provider_ignoring_out_is_caught(device):
    def new_tensor(x, weight, eps, out):
        return good(x, weight, eps)

    c = check_correctness(RMS, provider(new_tensor), Case("rmsnorm", "t", (6, 50), "fp32"), inputs(device))
    assert not c.ok and "ignored out=" in c.note


def test_nan_output_fails(device):
    def nan(x, weight, eps):
        return torch.full_like(x, float("nan"))

    c = check_correctness(RMS, provider(nan, accepts_out=False), Case("rmsnorm", "t", (6, 50), "fp32"), inputs(device))
    assert not c.ok


def test_run_case_statuses(device):
    settings = BenchSettings()
    case = Case("rmsnorm", "t", (6, 50), "fp32")
    skip = run_case(
        RMS, provider(good, supports=lambda s, d: "too wide"), case, device=device, settings=settings, timing=False
    )
    assert skip.status == "skipped" and skip.note == "too wide"

    def boom(x, weight, eps, out=None):
        raise RuntimeError("kernel exploded")

    err = run_case(RMS, provider(boom), case, device=device, settings=settings, timing=False)
    assert err.status == "error" and "kernel exploded" in err.note
    ok = run_case(RMS, provider(good), case, device=device, settings=settings, timing=False)
    assert ok.status == "ok" and not ok.timed and ok.bytes == RMS.bytes_model((6, 50), "fp32")


def test_case_seed_is_stable_and_shared_by_providers():
    a = Case("rmsnorm", "p1", (4, 4), "fp32")
    b = Case("rmsnorm", "p2", (4, 4), "fp32")
    assert case_seed(1, a) == case_seed(1, b) != case_seed(2, a)
    assert case_seed(1, a) != case_seed(1, Case("rmsnorm", "p1", (4, 5), "fp32"))


@pytest.mark.gpu
def test_timing_on_gpu():
    res = run_case(
        RMS,
        RMS.providers["triton_tuned"],
        Case("rmsnorm", "triton_tuned", (64, 4096), "bf16"),
        device="cuda",
        settings=BenchSettings(rep_ms=20, warmup_ms=5),
        timing=True,
    )
    assert res.status == "ok" and res.timed
    assert len(res.gpu_samples_ms) >= 5 and all(0 < s < 1 for s in res.gpu_samples_ms)
    # a graph's time per call counts the spacing of its nodes, the cold samples only the kernel's busy time: on an
    # H200 this 1.6-2.0 us kernel took 2.05 us a call in a graph, so the graph may exceed the samples by that spacing
    assert res.graph_time_ms is not None and 0 < res.graph_time_ms < max(res.gpu_samples_ms) + 0.003
    assert res.peak_mem_bytes >= 64 * 4096 * 2  # the output


@pytest.mark.parametrize("failures, status", [(1, "ok"), (2, "error"), (0, "ok")])
def test_a_case_out_of_gpu_memory_is_measured_once_more(failures, status, monkeypatch):
    """Out of GPU memory, the case is measured once more after the allocator's cache is emptied (memory that
    earlier, larger cases freed can still sit there), and no more than once; twice is recorded as such."""
    import kprof.harness as harness

    real, calls, emptied = harness.check_correctness, [], []

    def check(*args, **kwargs):
        calls.append(1)
        if len(calls) <= failures:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.18 GiB")
        return real(*args, **kwargs)

    monkeypatch.setattr(harness, "check_correctness", check)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    case = Case("rmsnorm", "torch_eager", (3, 77), "fp32")
    res = run_case(RMS, RMS.providers["torch_eager"], case, device="cpu", settings=BenchSettings(), timing=False)
    assert res.status == status and len(calls) == min(failures, 1) + 1 and len(emptied) == failures
    if status == "error":
        assert res.note.startswith(harness.OUT_OF_MEMORY) and "9.18 GiB" in res.note


# ------------------------------------------------------------------ the blocked check of large cases
BLOCKED = [("rmsnorm", (37, 53)), ("add_rmsnorm", (29, 41)), ("silu_mul", (23, 70))]


def _check_at(family, prov, shape, device, limit, monkeypatch):
    from kprof import harness

    monkeypatch.setattr(harness, "ORACLE_BLOCK_ELEMENTS", limit)
    ins = family.make_inputs(shape, "fp32", device, seed=11)
    return check_correctness(family, prov, Case(family.name, prov.name, shape, "fp32"), ins)


@pytest.mark.parametrize(("name", "shape"), BLOCKED)
def test_blocked_check_gives_the_whole_check_sums(name, shape, device, monkeypatch):
    """In blocks of a few rows (the last one short) the same error as the whole oracle, within rounding of
    the sums' order; a small limit stands in for a case too big for the device."""
    family = discover()[name]
    eager = family.providers["torch_eager"]
    whole = _check_at(family, eager, shape, device, 1 << 40, monkeypatch)
    per_row = shape[1] * len(family.row_inputs)
    blocked = _check_at(family, eager, shape, device, per_row * 4, monkeypatch)
    from kprof import harness

    monkeypatch.setattr(harness, "ORACLE_BLOCK_ELEMENTS", per_row * 4)
    ins = family.make_inputs(shape, "fp32", device, seed=11)
    blocks = harness.oracle_row_blocks(family, ins)
    assert blocks is not None and len(blocks) == -(-shape[0] // 4) and blocks[-1].stop == shape[0]
    assert whole.ok and blocked.ok
    assert blocked.rel_err == pytest.approx(whole.rel_err, rel=1e-9, abs=1e-15)
    assert blocked.max_abs_err == whole.max_abs_err


def test_blocked_check_finds_a_wrong_row_in_any_block(device, monkeypatch):
    rows = torch.randperm(37)[:3].tolist()

    def wrong_rows(x, weight, eps, out):
        good(x, weight, eps, out)
        out[rows] *= 1.01
        return out

    def unwritten_row(x, weight, eps, out):
        y = good(x, weight, eps)
        out[: rows[0]].copy_(y[: rows[0]])
        out[rows[0] + 1 :].copy_(y[rows[0] + 1 :])
        return out

    bad = _check_at(RMS, provider(wrong_rows), (37, 53), device, 53 * 5, monkeypatch)
    assert not bad.ok and "above tolerance" in bad.note
    lost = _check_at(RMS, provider(unwritten_row), (37, 53), device, 53 * 5, monkeypatch)
    assert not lost.ok and lost.unwritten == 53


def test_blocked_check_refuses_a_provider_that_changes_its_inputs(device, monkeypatch):
    """The blocked check runs the oracle after the provider: a provider that wrote into x would otherwise
    be compared against the truth of its own scribbles."""

    def scribbles(x, weight, eps, out):
        x.mul_(2.0)
        return good(x, weight, eps, out)

    c = _check_at(RMS, provider(scribbles), (37, 53), device, 53 * 5, monkeypatch)
    assert not c.ok and c.note == "provider changed its inputs"


# ------------------------------------------------------------------------------------------ placements
def test_relocated_inputs_keep_values_layout_and_shared_storage_at_new_addresses():
    gen = torch.Generator().manual_seed(11)
    base = torch.randn(7, 13, generator=gen)
    given = {"x": base[:, 2:9], "w": base[3], "xt": base.t(), "eps": 1e-5}  # a view, a row, a transpose
    moved, keep = harness.relocated(given, spacer_bytes=4096 + 512, after_bytes=1024)
    assert moved["eps"] == given["eps"]
    for name in ("x", "w", "xt"):
        a, b = given[name], moved[name]
        assert torch.equal(a, b) and a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
        assert b.data_ptr() != a.data_ptr()
    # the three views shared one storage and still share one (a provider may rely on it)
    assert len({moved[n].untyped_storage().data_ptr() for n in ("x", "w", "xt")}) == 1
    assert keep[0].numel() == 4096 + 512 and keep[-1].numel() == 1024  # the spacers, held with the copies
    moved["x"].add_(1.0)  # the copies are the caller's: the case's own inputs stay as checked
    assert torch.equal(given["x"], base[:, 2:9]) and not torch.equal(moved["x"], given["x"])


def test_a_cpu_case_is_timed_where_it_lies():
    with harness.placements(RMS.providers["torch_eager"], inputs("cpu"), BenchSettings(placements=4)) as where:
        assert len(where) == 1 and where[0].pool is None


def _fake_sessions(monkeypatch, per_call_us: list[float]):
    """measure_cupti replaced: the n-th session's cold calls all take ``per_call_us[n]``."""
    seen = []

    def cupti(fn, **kw):
        t = per_call_us[len(seen)]
        seen.append(kw["rep_ms"])
        cold = timing.CallTimes((t,) * 5, (t,) * 5, (t,) * 5, 1, ("k",))
        warm = timing.CallTimes((t / 2,) * 5, (t / 2,) * 5, (t / 2,) * 5, 1, ("k",))
        return timing.ModeSamples(cold, warm, "cupti")

    monkeypatch.setattr(timing, "measure_cupti", cupti)
    return seen


def test_placements_are_pooled_and_their_spread_is_named(monkeypatch):
    seen = _fake_sessions(monkeypatch, [2.88, 3.39, 2.88, 3.39])
    spots = [harness.Placement(lambda: None)] * 4
    samples, timer, notes = harness.measure_modes(spots, BenchSettings(rep_ms=100), [10.0], 0.003)
    assert timer == "cupti" and seen == [25.0] * 4  # the repetition budget is shared, not multiplied
    assert sorted(samples["cold"]) == sorted([2.88] * 10 + [3.39] * 10)
    assert samples["cold_placements"] == (2.88, 3.39, 2.88, 3.39)
    assert len(notes) == 1 and "18%" in notes[0] and "4 placements" in notes[0]


def test_placements_that_agree_get_no_note(monkeypatch):
    _fake_sessions(monkeypatch, [4.42, 4.45])
    samples, _, notes = harness.measure_modes([harness.Placement(lambda: None)] * 2, BenchSettings(), [10.0], 0.005)
    assert notes == [] and samples["cold_placements"] == (4.42, 4.45)


def test_one_placement_stores_no_placement_samples(monkeypatch):
    _fake_sessions(monkeypatch, [4.42])
    samples, _, notes = harness.measure_modes([harness.Placement(lambda: None)], BenchSettings(), [10.0], 0.005)
    assert "cold_placements" not in samples and notes == []


def test_a_session_without_cupti_makes_the_case_fall_back(monkeypatch):
    results = iter(
        [
            timing.ModeSamples(timing.CallTimes((3.0,), (3.0,), (3.0,), 1, ("k",)), None, "cupti"),
            timing.ModeSamples(None, None, "events", "CUPTI delivered no device records"),
        ]
    )
    monkeypatch.setattr(timing, "measure_cupti", lambda fn, **kw: next(results))
    monkeypatch.setattr(harness, "time_gpu", lambda fn, s, host_us=None: [0.004] * 5)
    samples, timer, notes = harness.measure_modes([harness.Placement(lambda: None)] * 3, BenchSettings(), [10.0], 0.005)
    assert timer == "events" and "no device records" in notes[0] and "cold" not in samples


def _check_placements(where: list, given: dict) -> None:
    """Each placement's inputs are copies elsewhere, and the call there gives the same answer."""
    assert len(where) == 3 and where[0].pool is None and all(w.pool is not None for w in where[1:])
    first = where[0].call()
    for spot in where[1:]:
        x = spot.call.keywords["x"]
        assert x.data_ptr() != given["x"].data_ptr() and torch.equal(x, given["x"])
        assert torch.equal(spot.call(), first)
    samples, timer, _ = harness.measure_modes(where, BenchSettings(rep_ms=20), [20.0], 0.005)
    assert timer == "cupti" and len(samples["cold_placements"]) == 3


@pytest.mark.gpu
def test_a_small_case_is_timed_in_pools_of_its_own_and_they_are_given_back():
    given = RMS.make_inputs((512, 3072), "bf16", "cuda", seed=5)
    timing.flush()  # the process's flush buffer exists before the count starts: it is kept for good
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_reserved()
    with harness.placements(RMS.providers["triton_tuned"], given, BenchSettings(placements=3)) as where:
        _check_placements(where, given)
        assert torch.cuda.memory_reserved() > before + (2 << 20)  # the pools' spacers and copies
    torch.cuda.synchronize()
    assert torch.cuda.memory_reserved() <= before + (2 << 20)  # the pools went back when the block ended


def test_a_route_race_during_the_first_call_is_in_the_case_note(device, monkeypatch):
    from kprof import runtime

    def racing(x, weight, eps, out=None):  # a version that decides its route by timing, as swiglu's does
        runtime.note_route_choice("route race (test): a 2.0 us, b 3.0 us -> a")
        return good(x, weight, eps, out)

    case = Case("rmsnorm", "t", (6, 50), "fp32")
    res = run_case(RMS, provider(racing), case, device=device, settings=BenchSettings(), timing=False)
    assert res.status == "ok" and res.note == "route race (test): a 2.0 us, b 3.0 us -> a"
    plain = run_case(RMS, provider(good), case, device=device, settings=BenchSettings(), timing=False)
    assert plain.note is None  # an earlier case's race is not this one's
