"""Routes timed against each other on a shape's first call, where no static rule held on the machines raced.

Why: between the decode sizes and the TMA kernels' rows (129-999 rows), cuBLAS's products were faster than
kprof's autotuned Triton products at most shapes raced on an H100 and far slower at a few, with nothing in the
shape to tell them apart. swiglu bf16, cuBLAS's two products then silu_mul against the tiled kernel: 0.55-0.91x
at 256x4104x11000, 256x4096x11008, 320x8192x28672 and 160x4096x11008, but 1.78x at 320x2048x11008 and 1.20x at
448x4096x14336, where cuBLAS ran at about half its rate of the neighbouring row counts
(``benchmarks/results/mid-rows/``). torch.compile calls the same cuBLAS products and was as slow there. So
the op does what Triton's autotuner does for tile shapes: it times the candidate routes on the call's own
inputs, once per shape class, and keeps the fastest. (swiglu races from 65 rows, where its pinned tiles took up
to 1.39x cuBLAS's route at some widths on an H200, and on the weights as given at every count from there: its tiled
kernel's lead over cuBLAS's route at 1000+ rows differs between H100s.)

How: each route is run once (compiling and autotuning it), then timed cold in ROUNDS interleaved rounds of
CALLS calls (``cold_us``: kprof's L2 flush before each call, behind a spin that covers the host's time, CUDA
events, no profiler session); a route's time is the median of its rounds. Not ``triton.testing.do_bench``:
its calls start behind a memset that need not cover the host's time, so a route launched through Python (an
autotuner's wrapper; cuBLAS's route is three launches) is timed partly on the host. On an H100 it read these
routes at 0.97-17.8x their cold times, and a race timed by it took the route slower in a cold race at 6 of 26
swiglu points (by 1.06-1.32x), this one at none by more than 1.034x (``benchmarks/results/mid-rows/``).
The rule's own route (``default``) is kept unless another is faster by more than KEEP_DEFAULT_WITHIN, so a
tie does not flip between processes. Nothing is timed under Triton's interpreter, on the CPU, while a CUDA
graph is being captured, or with ``KPROF_ROUTE_RACE=0``: the static rule's route runs there (nothing is
remembered, so a later call outside the capture can still race; a route decided before a capture is kept in it).

What a race ranks: calls back to back at whatever SM clock the power cap leaves, as a model's sustained calls run.
kprof's harness judges at full clock instead (cold calls the cap slowed set aside), and at large products the two
can rank routes the other way round: on an H200, swiglu bf16 at 8192x8192x11008, six races put the tiled kernel
1.8-5.1% ahead of cuBLAS's route, in either timing order, while at full clock cuBLAS's route was 1.8% ahead
(``benchmarks/results/grid/h200-prefill-bf16-8e778f5/``). The race's choice stands: reading the clock here would
take a CUPTI session in the user's process, to rank routes by a regime their sustained calls do not run in.

Every decision is kept with its times (:func:`decisions`), so what the op chose, and why, can be read back.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import torch

from kprof.runtime import interpreting, note_route_choice, route_race, route_races_allowed

ROUNDS = 3  # interleaved rounds per race
CALLS = 10  # cold calls per route and round
KEEP_DEFAULT_WITHIN = 0.02  # the static rule's route stays unless another is more than 2% faster
MAX_DECISIONS = 4096  # per race; the oldest is forgotten first

Timer = Callable[[Callable[[], object]], float]


@dataclass(frozen=True)
class Decision:
    """One shape class's race: each route's median time in µs (in the order timed) and the route kept."""

    race: str
    key: tuple
    times_us: tuple[tuple[str, float], ...]
    default: str
    chosen: str
    failed: tuple[tuple[str, str], ...] = ()  # routes that raised on their first call, and what they raised

    def describe(self) -> str:
        """One line: ``route race (RACE): a 58.3 us, b 105.6 us -> a (the rule's: b)``."""
        times = ", ".join(
            [f"{name} {t:.1f} us" for name, t in self.times_us]
            + [f"{name} failed ({why})" for name, why in self.failed]
        )
        rule = "" if self.chosen == self.default else f" (the rule's: {self.default})"
        return f"route race ({self.race}): {times} -> {self.chosen}{rule}"


def cold_us(fn: Callable[[], object]) -> float:
    """``fn``'s median cold time in µs over CALLS calls (``kprof.timing.cold_event_times_us``: L2 flushed, a
    spin covering the host's time so the call's kernels run back to back; no profiler session)."""
    from kprof.timing import cold_event_times_us

    return statistics.median(cold_event_times_us(fn, CALLS))


def can_time(on: torch.Tensor) -> bool:
    """Whether calls on ``on``'s device can be timed at all: a GPU, no interpreter, no graph capture."""
    return on.is_cuda and not interpreting() and not torch.cuda.is_current_stream_capturing()


def can_race(on: torch.Tensor) -> bool:
    """Whether routes may be timed for a call on ``on``'s device: :func:`can_time`, and ``KPROF_ROUTE_RACE``
    not 0."""
    return can_time(on) and route_races_allowed()


class RouteRace:
    """The remembered choices of one race (one family's routes for one shape class). ``keep_default_within``:
    how much slower than the fastest the default route may be and still be kept (0: the fastest always)."""

    def __init__(self, race: str, timer: Timer = cold_us, keep_default_within: float = KEEP_DEFAULT_WITHIN) -> None:
        self.race = race
        self._timer = timer
        self._keep = keep_default_within
        self._decisions: dict[Hashable, Decision] = {}
        _RACES.append(self)

    def choose(
        self,
        key: tuple,
        routes: Mapping[str, Callable[[], object]],
        default: str | Callable[[], str],
        on: torch.Tensor,
    ) -> str | None:
        """The route for ``key``: remembered, else timed now, else (where :func:`can_race` says no) None, for
        the caller's static rule. ``routes`` maps each route's name to a call of it on the real inputs (its
        result is discarded); ``default`` is the static rule's route, or how to find it (asked only for a
        race)."""
        known = self._decisions.get(key)
        if known is not None:
            return known.chosen
        if not can_race(on):
            return None
        return self.decide(key, routes, default if isinstance(default, str) else default())

    def decide(self, key: tuple, routes: Mapping[str, Callable[[], object]], default: str) -> str:
        """The route for ``key``: remembered, else timed now whatever ``KPROF_ROUTE_RACE`` says (for a caller
        that must measure, such as a floor at its fastest tile; it checks the device and a capture itself)."""
        known = self._decisions.get(key)
        if known is not None:
            return known.chosen
        decision = self.race_now(key, routes, default)
        if len(self._decisions) >= MAX_DECISIONS:
            self._decisions.pop(next(iter(self._decisions)))
        self._decisions[key] = decision
        note_route_choice(decision.describe())  # a profiled case's note says what its route race chose
        return decision.chosen

    def race_now(self, key: tuple, routes: Mapping[str, Callable[[], object]], default: str) -> Decision:
        """Time every route (after one call each to compile and autotune it) in interleaved rounds. A route
        that raises on that first call (out of memory for its intermediates, a kernel that does not fit) is
        left out, with what it raised; if every route raises, the first error is raised."""
        failed: dict[str, str] = {}
        with route_race():  # launch recordings leave these calls out
            for name, run in routes.items():
                try:
                    run()
                except Exception as exc:  # noqa: BLE001 - a route that cannot run here loses the race, says why
                    failed[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
                    if len(failed) == len(routes):
                        raise
            running = {name: run for name, run in routes.items() if name not in failed}
            rounds: dict[str, list[float]] = {name: [] for name in running}
            for _ in range(ROUNDS):
                for name, run in running.items():
                    rounds[name].append(self._timer(run))
        times = {name: statistics.median(ts) for name, ts in rounds.items()}
        fastest = min(times, key=times.__getitem__)
        keep = default in times and times[default] <= (1 + self._keep) * times[fastest]
        chosen = default if keep else fastest
        timed = tuple((n, round(t, 3)) for n, t in times.items())
        return Decision(self.race, key, timed, default, chosen, tuple(failed.items()))

    def decisions(self) -> list[Decision]:
        return list(self._decisions.values())


_RACES: list[RouteRace] = []


def decisions() -> list[Decision]:
    """Every race decided in this process, race by race, oldest first."""
    return [d for race in _RACES for d in race.decisions()]
