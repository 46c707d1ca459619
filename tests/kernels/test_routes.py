"""Routes raced on a shape's first call (``kprof.kernels.lib.routes``): what a race keeps, when it does not race,
and swiglu's 65-999-row and rmsnorm_linear's 33-999-row races taking each route for real against the float64 oracle
(limits scaled down)."""

from __future__ import annotations

import itertools

import pytest
import torch

from kprof import runtime
from kprof.kernels import discover, ops
from kprof.kernels.lib import plans, routes
from kprof.kernels.lib.plans import CUBLAS
from kprof.kernels.rmsnorm_linear import op_plan as rl_op_plan
from kprof.kernels.rmsnorm_linear import tuned as rl_tuned
from kprof.kernels.rmsnorm_linear.fused import folded_weight
from kprof.kernels.rmsnorm_linear.rstd_epilogue import rmsnorm_linear_folded
from kprof.kernels.swiglu import op_plan, tuned
from tests.kernels.ops_paths import triton_ops

FAM = discover()["swiglu"]


def timer_of(*times_us: float):
    """A timer that reads ``times_us`` in turn: routes are timed in their order, round after round."""
    it = itertools.cycle(times_us)
    calls = []

    def timer(fn):
        calls.append(fn)
        return next(it)

    timer.calls = calls
    return timer


@pytest.fixture
def racing(monkeypatch):
    """Races allowed on any tensor (the CPU here), and no race left in the process registry afterwards; no launch
    plan kept from an earlier test either (on a GPU the ops' versions launch through their op's plan, and a plan
    made at a signature before would skip that signature's race)."""
    monkeypatch.setattr(routes, "_RACES", [])
    monkeypatch.setattr(routes, "can_race", lambda on: True)
    plans.reset()
    yield
    plans.reset()


def test_the_faster_route_is_kept_and_timed_once(racing):
    timer = timer_of(10.0, 7.0)
    race = routes.RouteRace("test", timer=timer)
    ran = {"a": 0, "b": 0}
    run = {name: (lambda name=name: ran.__setitem__(name, ran[name] + 1)) for name in ran}
    on = torch.empty(1)
    assert race.choose(("k",), run, "a", on) == "b"
    assert len(timer.calls) == 2 * routes.ROUNDS and ran == {"a": 1, "b": 1}  # one untimed call each first
    assert race.choose(("k",), run, "a", on) == "b"
    assert len(timer.calls) == 2 * routes.ROUNDS  # remembered: not timed again
    (d,) = routes.decisions()
    assert (d.key, d.default, d.chosen, dict(d.times_us)) == (("k",), "a", "b", {"a": 10.0, "b": 7.0})


def test_a_tie_keeps_the_rules_route(racing):
    margin = 1 + routes.KEEP_DEFAULT_WITHIN
    on = torch.empty(1)
    run = {"a": lambda: None, "b": lambda: None}
    assert routes.RouteRace("tie", timer=timer_of(10.0 * margin * 0.999, 10.0)).choose((1,), run, "a", on) == "a"
    assert routes.RouteRace("past", timer=timer_of(10.0 * margin * 1.001, 10.0)).choose((1,), run, "a", on) == "b"
    asked = []
    lazy = routes.RouteRace("lazy", timer=timer_of(1.0, 2.0))
    assert lazy.choose((1,), run, lambda: asked.append(1) or "b", on) == "a"
    assert asked == [1] and lazy.choose((1,), run, lambda: asked.append(2) or "b", on) == "a"  # asked once


def test_the_oldest_decision_is_forgotten_past_the_bound(racing, monkeypatch):
    monkeypatch.setattr(routes, "MAX_DECISIONS", 2)
    race = routes.RouteRace("bounded", timer=timer_of(1.0, 2.0))
    for key in range(3):
        race.choose((key,), {"a": lambda: None, "b": lambda: None}, "b", torch.empty(1))
    assert [d.key for d in race.decisions()] == [(1,), (2,)]


def test_nothing_is_raced_or_remembered_where_races_cannot_run(monkeypatch):
    monkeypatch.setattr(routes, "_RACES", [])
    race = routes.RouteRace("cpu", timer=timer_of(1.0))
    assert not routes.can_race(torch.empty(1))  # a CPU tensor
    assert race.choose((1,), {"a": lambda: pytest.fail("ran")}, "a", torch.empty(1)) is None
    assert race.decisions() == []


def test_the_switch_that_turns_races_off_is_declared(monkeypatch):
    assert "KPROF_ROUTE_RACE" in {v.name for v in runtime.ENV_VARS}
    monkeypatch.setenv("KPROF_ROUTE_RACE", "0")
    assert not runtime.route_races_allowed()
    monkeypatch.setenv("KPROF_ROUTE_RACE", "1")
    assert runtime.route_races_allowed()


def test_swiglu_races_its_rows_in_16_bit(monkeypatch):
    assert tuned.RACE_MIN_ROWS <= tuned.DECODE_MAX_ROWS  # the pinned tiles' taller rows race, their fewest not
    bf16 = torch.bfloat16
    for m, dtype, interleaved, raced in [
        (tuned.RACE_MIN_ROWS, bf16, True, True),
        (tuned.DECODE_MAX_ROWS, bf16, False, True),  # the pinned tiles' tallest rows
        (tuned.RACE_MIN_ROWS - 1, bf16, False, False),  # the pinned tiles' fewest rows
        (tuned.TMA_MIN_ROWS, bf16, True, False),  # the interleaved kernel's rows
        (tuned.TMA_MIN_ROWS, bf16, False, True),  # the weights as given: raced at every row count from 65
        (tuned.TMA_MIN_ROWS - 1, torch.float16, True, True),
        (tuned.RACE_MIN_ROWS, torch.float32, False, False),
    ]:
        seen = []
        monkeypatch.setattr(tuned._mid_rows, "choose", lambda *a, seen=seen: seen.append(a) or None)
        w = torch.empty(64, 48, dtype=dtype)
        assert tuned.raced_route(torch.empty(m, 64, dtype=dtype), w, w, interleaved) is None
        assert bool(seen) == raced, (m, dtype, interleaved)


# The race's rows scaled down (a product past the real ones takes the interpreter minutes): from 4 rows raced,
# below 64 rows on every path. (5, 37, 19) is one the rules send to cuBLAS, (5, 37, 29) one they send to the
# tiled kernel; (66, 37, 29) is raced on the weights as given only (triton_tuned takes the interleaved kernel).
SMALL_LIMITS = {"RACE_MIN_ROWS": 4, "TMA_MIN_ROWS": 64, "CUBLAS_MIN_ROWS": 4, "CUBLAS_MAX_COLS": 24}


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("shape", [(5, 37, 19), (5, 37, 29), (66, 37, 29)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("faster", ["tiled", "cublas"])
def test_each_raced_route_runs_and_matches_the_oracle(shape, dtype, faster, device, racing, monkeypatch):
    for name, value in SMALL_LIMITS.items():
        monkeypatch.setattr(tuned, name, value)
    times = (5.0, 9.0) if faster == "tiled" else (9.0, 5.0)  # routes are timed tiled first, then cublas
    monkeypatch.setattr(tuned, "_mid_rows", routes.RouteRace("swiglu test", timer=timer_of(*times)))
    m, _, n = shape
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    ref = FAM.oracle(**inputs)
    outs = {"triton_tuned_pointer": FAM.providers["triton_tuned_pointer"].fn(**inputs)}
    outs["triton_tuned"] = FAM.providers["triton_tuned"].fn(**inputs)  # the same decision, or the interleaved rows
    with triton_ops():
        outs["ops first call"] = ops.swiglu(**inputs)
        outs["ops planned call"] = ops.swiglu(**inputs)
        ((_, (launch, _, _)),) = op_plan.PLANS.plans.items()
    (d,) = tuned._mid_rows.decisions()  # one race for every caller of the shape
    rule = "cublas" if tuned.cublas_products(m, n) else "tiled"
    assert (d.chosen, d.default) == (faster, rule)
    assert (launch is CUBLAS) == (faster == "cublas")
    tol = FAM.tolerances[dtype]
    for name, out in outs.items():
        assert out.shape == (m, n) and out.dtype == inputs["x"].dtype
        err = float((out.double() - ref).norm() / ref.norm())
        assert err <= tol, f"{name} {shape} {dtype}: rel err {err:.2e} (tolerance {tol})"


def test_rmsnorm_linear_races_only_its_mid_rows_in_16_bit(monkeypatch):
    bf16 = torch.bfloat16
    for m, dtype, raced in [
        (rl_tuned.RACE_MIN_ROWS, bf16, True),
        (rl_tuned.CUBLAS_MIN_ROWS - 1, torch.float16, True),  # the static rule's Triton product at 14336 columns
        (rl_tuned.RACE_MIN_ROWS - 1, bf16, False),  # the pinned tiles' rows keep their rule
        (rl_tuned.RACE_END_ROWS - 1, torch.float16, True),
        (rl_tuned.RACE_END_ROWS, bf16, False),
        (rl_tuned.CUBLAS_MIN_ROWS, torch.float32, False),
    ]:
        seen = []
        monkeypatch.setattr(rl_tuned._mid_rows, "choose", lambda *a, seen=seen: seen.append(a) or None)
        w = torch.empty(64, 48, dtype=dtype)
        assert rl_tuned.raced_product(torch.empty(m, 64, dtype=dtype), w) is None
        assert bool(seen) == raced, (m, dtype)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("faster", ["triton", "cublas"])
def test_each_raced_product_runs_and_matches_the_oracle(dtype, faster, device, racing, monkeypatch):
    # rows 4 to 63 raced (scaled down as above); 5x37x29 takes cuBLAS by the rule
    monkeypatch.setattr(rl_tuned, "RACE_MIN_ROWS", 4)
    monkeypatch.setattr(rl_tuned, "RACE_END_ROWS", 64)
    times = (5.0, 9.0) if faster == "triton" else (9.0, 5.0)  # timed triton first, then cublas
    monkeypatch.setattr(rl_tuned, "_mid_rows", routes.RouteRace("rmsnorm_linear test", timer=timer_of(*times)))
    shape = (5, 37, 29)
    fam = discover()["rmsnorm_linear"]
    inputs = fam.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    ref = fam.oracle(**inputs)
    outs = {"triton_tuned": fam.providers["triton_tuned"].fn(**inputs)}
    with triton_ops():
        outs["ops first call"] = ops.rms_norm_linear(**inputs)
        outs["ops planned call"] = ops.rms_norm_linear(**inputs)
        ((_, (_, product, _, _)),) = rl_op_plan.PLANS.plans.items()
    (d,) = rl_tuned._mid_rows.decisions()
    assert (d.chosen, d.default) == (faster, "cublas")
    assert (product is CUBLAS) == (faster == "cublas")
    tol = fam.tolerances[dtype]
    for name, out in outs.items():
        assert out.shape == shape[:1] + shape[2:] and out.dtype == inputs["x"].dtype
        err = float((out.double() - ref).norm() / ref.norm())
        assert err <= tol, f"{name} {dtype}: rel err {err:.2e} (tolerance {tol})"


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("faster", ["plain", "statistics"])
def test_a_prepared_rmsnorm_linear_races_its_mid_rows(dtype, faster, device, racing, monkeypatch):
    """Between the decode rows and the TMA kernels' a prepared object runs the plain op or the statistics-first
    kernels on its fold, whichever its race timed faster (the plain op kept within 2%); both routes match the oracle;
    fewer rows than RACE_MIN_ROWS, and fp32, are never raced. On a GPU the object then launches the route the race
    took from its plan (the plain op's, or the rstd kernel and pointer product's), for x's rows and for the same rows
    in a wider buffer, its planned calls giving its first call's output bit for bit."""
    times = (9.0, 5.0) if faster == "statistics" else (5.0, 5.05)  # timed plain first, then statistics
    monkeypatch.setattr(rl_op_plan, "_mid_rows", routes.RouteRace("prepared test", timer=timer_of(*times)))
    fam = discover()["rmsnorm_linear"]
    inputs = fam.make_inputs((rl_tuned.RACE_MIN_ROWS + 2, 40, 24), dtype, device, seed=torch.seed() % 2**31)
    x, g, w, b, eps = (inputs[k] for k in ("x", "g", "w", "b", "eps"))
    wf = folded_weight(g, w)
    assert rl_op_plan.mid_rows_statistics(x, g, w, wf, b, eps) == (faster == "statistics")
    (d,) = rl_op_plan._mid_rows.decisions()
    assert (d.chosen, d.default) == (faster, "plain") and not d.failed
    assert rl_op_plan.mid_rows_statistics(x, g, w, wf, b, eps) == (faster == "statistics")  # remembered, not raced
    assert len(rl_op_plan._mid_rows.decisions()) == 1
    ref = fam.oracle(**inputs).double()
    outs = {
        "plain": rl_op_plan.rms_norm_linear(x, g, w, b, eps),
        "statistics": rmsnorm_linear_folded(x, g, w, b, eps, wf),
    }
    if device == "cuda":  # under the interpreter these rows take the TMA kernels (test_ops has their plan)
        wide = torch.cat([x, x[:, :8]], dim=1)[:, : x.shape[1]]  # the rows of a wider buffer: row stride K + 8
        with triton_ops():
            prepared = ops.PreparedRMSNormLinear(g, w)
            for tag, rows_in in (("", x), (" (slice)", wide)):
                outs[f"object's first call{tag}"] = prepared(rows_in, b, eps)
                # a plan's first launches go through the JIT (which compiles nothing new), the next through its entries
                outs[f"object's planned call{tag}"] = prepared(rows_in, b, eps)
                outs[f"object's compiled call{tag}"] = prepared(rows_in, b, eps)
            made = list(rl_op_plan.PREPARED_PLANS.plans.values())
        assert len(made) == 2  # one a signature
        for plan in made:
            if faster == "statistics":
                assert type(plan) is rl_op_plan.PreparedPointerPlan
                assert plan.rstd.entry is not None and plan.product.entry is not None  # the compiled launches ran
            else:
                assert plan is rl_op_plan.PLAIN
        for tag in ("", " (slice)"):
            for call in ("planned", "compiled"):
                assert torch.equal(outs[f"object's first call{tag}"], outs[f"object's {call} call{tag}"])
    for name, out in outs.items():
        err = float((out.double() - ref).norm() / ref.norm())
        assert err <= fam.tolerances[dtype], f"{name} {dtype}: rel err {err:.2e}"
    few = x[: rl_tuned.RACE_MIN_ROWS - 1]
    assert not rl_op_plan.mid_rows_statistics(few, g, w, wf, b, eps)
    assert not rl_op_plan.mid_rows_statistics(x.float(), g.float(), w.float(), wf.float(), None, eps)
    assert len(rl_op_plan._mid_rows.decisions()) == (2 if device == "cuda" else 1)  # the slice raced on its own


@pytest.mark.parametrize("faster", ["tiled", "cublas"])
def test_a_launch_recording_keeps_only_the_route_picked(faster, device, racing, monkeypatch):
    from kprof.specialization import recording

    for name, value in SMALL_LIMITS.items():
        monkeypatch.setattr(tuned, name, value)
    times = (5.0, 9.0) if faster == "tiled" else (9.0, 5.0)
    monkeypatch.setattr(tuned, "_mid_rows", routes.RouteRace("swiglu test", timer=timer_of(*times)))
    inputs = FAM.make_inputs((5, 37, 29), "bf16", device, seed=torch.seed() % 2**31)
    with recording() as rec:
        FAM.providers["triton_tuned_pointer"].fn(**inputs)  # races (both routes run), then runs the pick
    (d,) = tuned._mid_rows.decisions()
    assert d.chosen == faster
    kernels = [s.kernel for s in rec.launches]
    # the tiled route is one launch of the tiled kernel; cuBLAS's route launches one Triton kernel, silu_mul's
    assert len(kernels) == 1 and (kernels[0] == "_swiglu_tiled_kernel") == (faster == "tiled"), kernels


def test_each_decision_is_noted_for_the_harness(racing):
    from kprof import runtime

    mark = runtime.route_choices_made()
    race = routes.RouteRace("noted", timer=timer_of(3.0, 2.0))
    race.choose((1,), {"a": lambda: None, "b": lambda: None}, "a", torch.empty(1))
    race.choose((1,), {"a": lambda: None, "b": lambda: None}, "a", torch.empty(1))  # remembered: not noted again
    assert runtime.route_choices_since(mark) == ["route race (noted): a 3.0 us, b 2.0 us -> b (the rule's: a)"]
    assert runtime.route_choices_since(runtime.route_choices_made()) == []


@pytest.mark.gpu
def test_a_real_race_on_the_gpu_times_both_routes_and_keeps_one(monkeypatch):
    from kprof import runtime
    from kprof.timing import cold_event_times_us

    times = cold_event_times_us(lambda: torch.empty(1 << 20, device="cuda").zero_(), 5)
    assert len(times) == 5 and all(0 < t < 10_000 for t in times)  # µs: a 4 MB memset, cold
    shape = (320, 2048, 11008)  # a shape where cuBLAS's route ran at half its rate on H100s: both routes matter
    inputs = FAM.make_inputs(shape, "bf16", "cuda", seed=5)
    ref = FAM.oracle(**inputs)
    mark = runtime.route_choices_made()
    previous = ops.use_triton(True)
    try:
        out = ops.swiglu(**inputs)
        monkeypatch.setenv("KPROF_ROUTE_RACE", "0")
        inputs2 = FAM.make_inputs((321, 2048, 11008), "bf16", "cuda", seed=6)
        ops.swiglu(**inputs2)  # a new shape with races off: the static rule, nothing decided
    finally:
        ops.use_triton(previous)
    (d,) = [x for x in tuned._mid_rows.decisions() if x.key[:3] == shape]
    assert d.chosen in ("tiled", "cublas") and {n for n, _ in d.times_us} == {"tiled", "cublas"}
    assert all(t > 0 for _, t in d.times_us)
    assert len(runtime.route_choices_since(mark)) == 1  # this race only; none for the shape raced with races off
    assert not [x for x in tuned._mid_rows.decisions() if x.key[0] == 321]
    err = float((out.double() - ref).norm() / ref.norm())
    assert err <= FAM.tolerances["bf16"]


def test_a_route_that_raises_loses_the_race_and_says_why(racing):
    def broken():
        raise RuntimeError("out of resource: shared memory")

    race = routes.RouteRace("broken", timer=timer_of(1.0))
    on = torch.empty(1)
    assert race.choose((1,), {"a": broken, "b": lambda: None}, "a", on) == "b"  # the rule's route failed
    (d,) = race.decisions()
    assert d.times_us == (("b", 1.0),) and d.failed[0][0] == "a" and "shared memory" in d.failed[0][1]
    assert "a failed (RuntimeError: out of resource" in d.describe()
    with pytest.raises(RuntimeError, match="shared memory"):  # nothing can run: the caller sees the error
        race.choose((2,), {"a": broken, "b": broken}, "a", on)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("faster", ["interleaved", "cublas_pairs"])
def test_the_interleaved_weights_race_a_ragged_width_against_cublas_and_the_pairs_pass(
    faster, dtype, device, racing, monkeypatch
):
    """From TMA_MIN_ROWS rows on interleaved weights, an output width that is not a multiple of 16 races the TMA
    kernel against cuBLAS's product on the same weights then the pairs pass: the prepared provider and the ops
    API's prepared object take the race's route, and both routes match the oracle. A width of 16 or more is not
    raced."""
    for name, value in SMALL_LIMITS.items():
        monkeypatch.setattr(tuned, name, value)
    times = (5.0, 9.0) if faster == "interleaved" else (9.0, 5.0)  # timed interleaved first, then cublas_pairs
    monkeypatch.setattr(tuned, "_interleaved_ragged", routes.RouteRace("swiglu test", timer=timer_of(*times)))
    taken = []
    route = tuned.interleaved_route
    monkeypatch.setattr(tuned, "interleaved_route", lambda *a: taken.append(route(*a)) or taken[-1])
    shape = (66, 40, 24)  # TMA-ready rows (16-byte multiples), 24 = 8 mod 16
    inputs = FAM.make_inputs(shape, dtype, device, seed=torch.seed() % 2**31)
    ref = FAM.oracle(**inputs)
    outs = {"triton_tuned_prepared": FAM.providers["triton_tuned_prepared"].fn(**inputs)}
    with triton_ops():
        outs["ops prepared"] = ops.PreparedSwiGLU(inputs["w_gate"], inputs["w_up"])(inputs["x"])
    assert taken == [faster, faster]  # both callers asked, and took the race's route
    (d,) = tuned._interleaved_ragged.decisions()  # one race for both callers
    assert (d.chosen, d.default) == (faster, "interleaved")
    assert {n for n, _ in d.times_us} == {"interleaved", "cublas_pairs"}
    tol = FAM.tolerances[dtype]
    for name, out in outs.items():
        err = float((out.double() - ref).norm() / ref.norm())
        assert out.shape == shape[:1] + shape[2:] and err <= tol, f"{name}: rel err {err:.2e} (tolerance {tol})"
    aligned = FAM.make_inputs((66, 40, 32), dtype, device, seed=1)
    FAM.providers["triton_tuned_prepared"].fn(**aligned)
    assert len(tuned._interleaved_ragged.decisions()) == 1  # 32 columns: the kernel, no race


@pytest.mark.parametrize(
    "kernel_us, pairs_us, chosen",
    [(5.0, 9.0, "interleaved"), (9.0, 5.0, "cublas_pairs"), (4.9, 5.0, "cublas_pairs"), (4.0, 5.0, "interleaved")],
)
def test_an_underfilled_wave_races_the_kernel_against_the_pairs(
    kernel_us, pairs_us, chosen, device, racing, monkeypatch
):
    """Where the kernel's tiles would make one wave under PAIRS_MAX_FILL full (forced here; on a GPU
    ``tuned.underfilled_on``), an output width that is a multiple of 16 races too, with the pairs as the static
    route, kept unless the kernel is more than UNDERFILLED_KEEP_PAIRS faster (2% faster: the pairs kept); both
    routes match the oracle. Where no race runs, the pairs."""
    for name, value in SMALL_LIMITS.items():
        monkeypatch.setattr(tuned, name, value)
    times = (kernel_us, pairs_us)  # timed interleaved first, then cublas_pairs
    race = routes.RouteRace("swiglu test", timer=timer_of(*times), keep_default_within=tuned.UNDERFILLED_KEEP_PAIRS)
    monkeypatch.setattr(tuned, "_underfilled", race)
    monkeypatch.setattr(tuned, "underfilled_on", lambda x2d, n: True)
    inputs = FAM.make_inputs((66, 40, 32), "bf16", device, seed=torch.seed() % 2**31)
    out = FAM.providers["triton_tuned_prepared"].fn(**inputs)
    (d,) = tuned._underfilled.decisions()
    assert (d.chosen, d.default) == (chosen, "cublas_pairs")
    ref = FAM.oracle(**inputs)
    assert float((out.double() - ref).norm() / ref.norm()) <= FAM.tolerances["bf16"]
    monkeypatch.setattr(routes, "can_race", lambda on: False)
    x2d, wi = inputs["x"], tuned.interleaved_weights(inputs["w_gate"], inputs["w_up"])
    y = torch.empty(66, 32, dtype=x2d.dtype, device=device)
    assert tuned.interleaved_route(x2d[:64], wi, y[:64]) == "cublas_pairs"  # a new class, no race: the pairs


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1000, 1000, 3000), (1000, 2048, 768)])
def test_a_real_race_of_the_interleaved_weights_at_a_ragged_width(shape):
    """1000x1000x3000, the default sweep's untiled shape, and 1000x2048x768, whose tiles make a wave 55% full on 132
    SMs: the prepared object races the TMA kernel against cuBLAS's product and the pairs pass, times both and keeps
    one; its output matches the oracle."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 0
    if shape[2] % 16 == 0 and not tuned.underfilled_wave(*shape, sms):
        pytest.skip(f"the tiles fill a wave of {sms} SMs at {shape}: no race")
    inputs = FAM.make_inputs(shape, "bf16", "cuda", seed=7)
    previous = ops.use_triton(True)
    try:
        out = ops.PreparedSwiGLU(inputs["w_gate"], inputs["w_up"])(inputs["x"])
    finally:
        ops.use_triton(previous)
    decided = tuned._interleaved_ragged.decisions() + tuned._underfilled.decisions()
    (d,) = [x for x in decided if x.key[:3] == shape]
    assert d.chosen in ("interleaved", "cublas_pairs") and all(t > 0 for _, t in d.times_us)
    assert {n for n, _ in d.times_us} == {"interleaved", "cublas_pairs"}
    ref = FAM.oracle(**inputs)
    assert float((out.double() - ref).norm() / ref.norm()) <= FAM.tolerances["bf16"]
