"""The grid table: at every point of a family's shape grid, the best kprof version against the best peer.

``kprof profile FAMILY --grid PART`` races every provider at every point of one part of the family's grid
(``grid:`` in its ``sweep.yaml``), interleaved, in the declared timing mode; ``kprof grid RUN...`` reads one
or more such runs (the parts of one grid, the same device) and prints, per (shape, dtype):

* the fastest Triton version and its time, the fastest peer (eager, ``F.*``, torch.compile, libraries such
  as Liger) and its time, their ratio and a verdict: ``win`` at <= 0.98, ``tie`` up to 1.02, ``loss`` above,
  and ``uncertain`` where a win or a loss is within the two cases' own spread (kprof does not call it). A
  point measured in several of the runs given (the same part raced again) is ``uncertain`` where those runs
  alone would call different verdicts, and its spread counts the ratio's spread between them: on an H100
  torch.compile (the same code in both) took 5.95 us at 512x8192 bf16 in one run of rmsnorm's bf16 part and
  5.34 in another, each run's cases within 2-3% of their own median. Only runs whose two sides were timed as the
  point's best two count (another timing is another measurement; the why column names each run left out). A point
  whose slower side takes under 10 us also counts the ratio's run-to-run floor (:func:`run_to_run_floor`), since a
  single run cannot show how far the next will move: 11.3% for one run and 7.8% for two by default, or from each
  side's own spread where the store holds a calibration of the device (``kprof noise``);
* for memory-bound points, the best version's bandwidth as a fraction of the device's copy ceiling;
* the ratio to the family's ``roofline`` yardstick where it has one (one cuBLAS product of a matrix family's
  shape, a bare copy of x for kasmina, a bare copy of the bytes a memory-bound call moves);
* given the family's dispatch (the provider ``kprof.kernels.ops`` runs), its time over the best kprof
  version's: where it is above 1.02 the dispatch misses a faster version a model would not get; the same for
  the ops API's prepared object where the family has one and the runs timed it (``triton_prepared_op``), whose own
  choice among the versions on prepared weights and the plain op is compared with the best of them all;
* given the family's targets (``grid_targets:`` in its ``sweep.yaml``), whether the point meets the one that
  applies to it (a ratio to the family's yardstick per class of shape or size: memory-bound points of 64 MiB or
  more against a copy of their own bytes, or a share of the copy ceiling where the run has no such copy), and for
  each loss or missed target what Nsight Compute measured there (DRAM bytes
  against the bytes model, achieved occupancy, the limiter), or that nothing was measured: no guessed cause;
* where a family has a ``floor`` provider (less work than any of its versions does: a copy of kasmina's x through
  the layer's chain of dependent loads), whether a missed yardstick target is out of reach: the floor alone takes
  more than the target's ratio of the yardstick's time, both measured in the same run and timed alike.

Reads the store's metrics only (the data flow's last step before a report); :mod:`kprof.grid_render` writes the
table as markdown.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from kprof.store import RunPlan
from kprof.timing import CLOCK_FULL_FRACTION, counted_spread, with_writeback

PEER_KINDS = ("eager", "library", "compile", "peer")
WIN, TIE = 0.98, 1.02
# Under this many us a call's median moves between separate runs by more than one run's spread shows: on an
# H100, 14 runs of unchanged rmsnorm code moved torch.compile by up to 10.6% and the best-kprof / best-peer
# ratio at 64x4096 from 0.965 to 1.088 (kprof.variance.DEFAULT_SIGMA_RUN_BY_CLASS). A point whose slower side
# is this fast counts the ratio's run-to-run half-width in its spread, narrower with each run given.
SMALL_CALL_US = 10.0


MIB = 2**20


@dataclass(frozen=True)
class CopyTarget:
    """Memory-bound points that move at least ``min_bytes``: the best kprof version at ``fraction`` or more of
    the copy ceiling measured in the run."""

    fraction: float
    min_bytes: float

    def label(self) -> str:
        return f">= {100 * self.fraction:.0f}% of the copy ceiling at >= {self.min_bytes / MIB:.0f} MiB"


@dataclass(frozen=True)
class RooflineTarget:
    """Points of one class: the best kprof version within ``ratio`` x the family's roofline yardstick (what
    ``yardstick`` names: one cuBLAS product of a matrix family's shape, a bare copy of kasmina's x, a bare copy of
    the bytes a memory-bound call moves). The class: at most ``max_rows`` rows, at least ``min_rows``, no dimension
    a multiple of ``untiled`` (shapes no tile divides), or moving at least ``min_mib`` MiB (the bytes model); unset
    bounds do not restrict."""

    ratio: float
    max_rows: int | None = None
    min_rows: int | None = None
    untiled: int | None = None
    yardstick: str = "cuBLAS"
    min_mib: int | None = None

    def applies(self, dims: Sequence[int], nbytes: float = math.nan) -> bool:
        rows = dims[0]
        if self.max_rows is not None and rows > self.max_rows:
            return False
        if self.min_rows is not None and rows < self.min_rows:
            return False
        if self.min_mib is not None and not nbytes >= self.min_mib * MIB:  # unknown bytes: not in the class
            return False
        return self.untiled is None or not any(d % self.untiled == 0 for d in dims)

    def label(self) -> str:
        where = [
            *([f"<= {self.max_rows} rows"] if self.max_rows is not None else []),
            *([f">= {self.min_rows} rows"] if self.min_rows is not None else []),
            *([f"no dimension a multiple of {self.untiled}"] if self.untiled is not None else []),
            *([f">= {self.min_mib} MiB"] if self.min_mib is not None else []),
        ]
        return f"<= {self.ratio:.2f}x {self.yardstick} at {', '.join(where) or 'every shape'}"


@dataclass(frozen=True)
class GridTargets:
    """What a family's grid points must reach besides the peer verdict. ``roofline``: the first class that
    applies to a point is its target; where its yardstick did not run at the point and ``copy`` applies there, the
    copy ceiling's share is (runs from before a memory-bound family had its ``copy_bytes`` yardstick)."""

    copy: CopyTarget | None = None
    roofline: tuple[RooflineTarget, ...] = ()

    def for_point(
        self, shape: str, bound: str, nbytes: float, has_yardstick: bool = True
    ) -> CopyTarget | RooflineTarget | None:
        dims = _dims(shape)
        copy = (
            self.copy
            if self.copy is not None and bound == "memory" and not math.isnan(nbytes) and nbytes >= self.copy.min_bytes
            else None
        )
        hit = next((t for t in self.roofline if t.applies(dims, nbytes)), None) if dims else None
        if hit is not None and (has_yardstick or copy is None):
            return hit
        return copy


def _dims(shape: str) -> tuple[int, ...]:
    parts = str(shape).lower().replace("×", "x").split("x")
    return tuple(int(p) for p in parts) if all(p.strip().isdigit() for p in parts) else ()


# What Nsight Compute measured, as the grid's "why" names it (metrics columns a `--profiler ncu` run fills), then what
# kprof reads beside it from the same launches (the compiled kernel's limiter, its waves): quoted only after a counter.
NCU_EVIDENCE = (
    ("dram_vs_model", "DRAM {:.2f}x the bytes model"),
    ("occupancy_achieved_pct", "achieved occupancy {:.0f}%"),
    ("occupancy_limiter", "limiter {}"),
    ("waves", "{:.2f} waves"),
)
_BESIDE_COUNTERS = ("occupancy_limiter", "waves")  # not counters: never an ncu reading alone


KERNEL_NAME_CHARS = 48  # a kernel's name in the why column, cut here (cuBLAS's run to 60 and more)


def kernel_times(launches: pd.DataFrame) -> pd.DataFrame:
    """Where a profiled run's calls spend their time: per case and per kernel it launched, the median
    duration in us, kernels in the order of their first launch, and where an ncu run measured them, the median
    share of the elapsed cycles the tensor pipes were busy and the SMs had work (``counters``: see
    ``kprof.profilers.ncu.COUNTERS``; NaN where not measured). Columns ``provider, shape, dtype, kernel, us,
    tensor_pipe_pct, sm_busy_pct``, from a launch table (``kprof.store.RunStore.launches``); memcpy, memset and
    sync records are left out."""
    cols = ["provider", "shape", "dtype", "kernel", "us", "tensor_pipe_pct", "sm_busy_pct"]
    if launches.empty or "case" not in launches or "duration_ns" not in launches:
        return pd.DataFrame(columns=cols)
    ks = launches[launches["kind"].isna() | (launches["kind"] == "kernel")]
    ks = ks[ks["case"].notna() & ks["duration_ns"].notna()]
    name = ks["kernel_norm"].fillna(ks["kernel"]) if "kernel_norm" in ks else ks["kernel"]
    ks = ks.assign(name=name.astype(str), order=range(len(ks)))
    counters = ks["counters"] if "counters" in ks else pd.Series(pd.NA, index=ks.index)
    ks = ks.assign(**_busy_shares(counters))
    rows = []
    for (case, kernel), g in ks.groupby(["case", "name"], sort=False):
        parts = str(case).split("/")
        if len(parts) != 4:  # family/provider/shape/dtype
            continue
        us = float(g["duration_ns"].median()) / 1e3
        rows.append(
            [*parts[1:], kernel, us, g["tensor_pipe_pct"].median(), g["sm_busy_pct"].median(), g["order"].min()]
        )
    out = pd.DataFrame(rows, columns=[*cols, "order"]).sort_values("order", kind="stable")
    return out.drop(columns="order").reset_index(drop=True)


def _busy_shares(counters: pd.Series) -> dict[str, list[float]]:
    """``tensor_pipe_pct`` and ``sm_busy_pct`` (SM cycles with work / elapsed, %) per launch from its counters'
    JSON; NaN where a launch has none."""
    tensor, busy = [], []
    for text in counters:
        c = json.loads(text) if isinstance(text, str) and text else {}
        tensor.append(float(c.get("tensor_pipe_pct", math.nan)))
        elapsed = c.get("sm_elapsed_cycles")
        busy.append(100.0 * c["sm_active_cycles"] / elapsed if elapsed and "sm_active_cycles" in c else math.nan)
    return {"tensor_pipe_pct": tensor, "sm_busy_pct": busy}


def _kernels_note(kernels: pd.DataFrame | None, shape: str, dtype: str, provider: str) -> str:
    """``a 6.1 us + b 69.6 us`` for a case of two or more kernels in ``kernels`` (:func:`kernel_times`), each with
    what ncu measured of its tensor pipes and SMs where it did (``b 69.6 us (tensor pipes busy 74% of its cycles,
    SMs 86%)``, for one kernel too); "" else."""
    if kernels is None or kernels.empty:
        return ""
    here = kernels[(kernels["provider"] == provider) & (kernels["shape"] == shape) & (kernels["dtype"] == dtype)]
    shares = [_busy_note(row) for _, row in here.iterrows()]
    if len(here) < 2 and not any(shares):
        return ""
    return " + ".join(f"{_short(k)} {us:.1f} us{s}" for k, us, s in zip(here["kernel"], here["us"], shares))


def _busy_note(row: pd.Series) -> str:
    tensor, busy = row.get("tensor_pipe_pct", math.nan), row.get("sm_busy_pct", math.nan)
    facts = ([f"tensor pipes busy {tensor:.0f}% of its cycles"] if not pd.isna(tensor) else []) + (
        [f"SMs {busy:.0f}%"] if not pd.isna(busy) else []
    )
    return f" ({', '.join(facts)})" if facts else ""


def _short(kernel: str) -> str:
    return kernel if len(kernel) <= KERNEL_NAME_CHARS else kernel[: KERNEL_NAME_CHARS - 3] + "..."


def _is_time(value: object) -> bool:
    """Whether a stored time can be compared: positive and finite. A zero, a negative or an infinite median is a
    broken measurement (a timer that read nothing, a subtraction gone wrong), and as a side's fastest it would make
    the verdict (a negative version time wins every race, an infinite peer time makes the ratio 0)."""
    t = _number(value)
    return 0.0 < t < math.inf  # NaN compares False


def _timed(rows: pd.DataFrame) -> pd.Series:
    """Per row: the case passed and gave a time that can be compared (:func:`_is_time`)."""
    t = pd.to_numeric(rows["gpu_time_us"], errors="coerce")
    return rows["ok"].astype(bool) & (t > 0) & (t < math.inf)


def _best(rows: pd.DataFrame) -> pd.Series | None:
    """The fastest case of ``rows`` that passed with a positive finite time; None where none did."""
    ok = rows[_timed(rows)]
    return None if ok.empty else ok.loc[pd.to_numeric(ok["gpu_time_us"]).idxmin()]


def _highest_floor(g: pd.DataFrame, roof: pd.Series | None = None) -> pd.Series | None:
    """The slowest of the point's floors (providers of kind ``floor``), each at its fastest case with a positive
    finite time: the strongest lower bound measured here (an infinite time would put every target out of reach).
    Where some floor was timed like the yardstick ``roof`` (:func:`timed_unlike`), the slowest of those: a slower
    floor timed otherwise could only leave the reach unjudged, which the one timed alike can judge."""
    ok = g[(g["kind"] == "floor") & _timed(g)]
    if ok.empty:
        return None
    if roof is not None:
        alike = ok[[not timed_unlike(case, roof) for _, case in ok.iterrows()]]
        ok = alike if len(alike) else ok
    times = pd.to_numeric(ok["gpu_time_us"])
    fastest = ok.loc[times.groupby(ok["provider"]).idxmin()]
    return fastest.loc[pd.to_numeric(fastest["gpu_time_us"]).idxmax()]


def _no_time_passed(rows: pd.DataFrame) -> pd.Series:
    """Per row: the case passed but its time is no time (zero, negative, infinite: :func:`_is_time`); a missing time
    (NaN) is not one of these."""
    return rows["ok"].astype(bool) & pd.to_numeric(rows["gpu_time_us"], errors="coerce").notna() & ~_timed(rows)


def _no_valid_time(g: pd.DataFrame) -> str:
    """The why column's words for the cases of a point that passed with a time that is none (zero, negative,
    infinite; :func:`_is_time`), each with it: they are left out of every best, and a reader must know a faster
    version, peer or yardstick may hide behind them; "" where there is none. A missing time (NaN) is not named
    here: a failed case has none, and the words for it (its note) are said where it matters."""
    bad = g[_no_time_passed(g)]
    if bad.empty:
        return ""
    said = ", ".join(f"{p} ({float(us):g} µs)" for p, us in zip(bad["provider"], bad["gpu_time_us"]))
    return (
        f"no valid time from {said}: a time must be positive and finite, so these cases are left out of the bests; "
        "time the point again"
    )


REACH = ("out of reach", "within reach", "reach not judged")


def floor_reach(floor: pd.Series, roof: pd.Series, target: RooflineTarget, runs: int = 1) -> tuple[str, str]:
    """Whether a floor measured beside the yardstick puts the target out of reach: (one of ``REACH``, the why
    column's words, which give the floor's time over the yardstick's). Out of reach where the floor alone takes
    more than the target's ratio by more than the two cases' spread (their own, a clock's slowing, and under
    :data:`SMALL_CALL_US` the run-to-run floor); within reach where it is under by more; else not judged, and not
    judged either where the two were timed unlike (:func:`timed_unlike`): their ratio would measure the timings."""
    unlike = timed_unlike(floor, roof)
    if unlike:
        return REACH[2], "reach not judged: " + _why_timed_unlike(unlike, "whether the target is in reach is not")
    ratio = float(floor["gpu_time_us"]) / float(roof["gpu_time_us"])
    spread = _nanmax(
        pair_spread(floor, roof),
        slowed_by_clock(floor, roof)[0],
        run_to_run_floor(float(floor["gpu_time_us"]), float(roof["gpu_time_us"]), runs),
    )
    spread = 0.0 if math.isnan(spread) else spread
    said = f"the floor {floor['provider']} takes {ratio:.3f}x {roof['provider']} here"
    moved = f"the {100 * spread:.1f}% the cases may move"
    if ratio > target.ratio * (1 + spread):
        words = f"out of reach: {said}, over the target's {target.ratio:.2f}x by more than {moved}; no version meets it"
        return REACH[0], words
    if ratio < target.ratio * (1 - spread):
        return REACH[1], f"within reach by the floor: {said}"
    small = max(float(floor["gpu_time_us"]), float(roof["gpu_time_us"])) < SMALL_CALL_US
    again = "; each run given narrows the run-to-run floor: race the part again and give every run" if small else ""
    return REACH[2], f"{said}, within {moved} of the target's {target.ratio:.2f}x: reach not judged{again}"


def verdict(ratio: float, spread: float) -> str:
    """``win`` / ``tie`` / ``loss`` for best-kprof over best-peer time; ``uncertain`` for a win or a loss
    whose margin past the tie band the cases' own spread (IQR/median, the larger of the two) could make:
    the same rule both ways, so a win is claimed no more easily than a loss."""
    if math.isnan(ratio):
        return "no peer"
    s = spread if not math.isnan(spread) else 0.0
    if ratio <= WIN:
        return "uncertain" if WIN - ratio < s else "win"
    if ratio <= TIE:
        return "tie"
    return "uncertain" if ratio - TIE <= s else "loss"


def counted_verdict(cold: str, ratio: float, spread: float) -> str:
    """The verdict ``ratio`` (best kprof over best peer with each side's write-back counted) decidedly calls where it
    is another than ``cold`` (the verdict by cold times), else "": a win or a loss past the tie band by more than
    ``spread`` (:func:`verdict`), or a tie past the edge of the cold verdict's band by more than ``spread``."""
    if cold not in ("win", "tie", "loss"):
        return ""
    counted = verdict(ratio, spread)
    if counted not in {"win", "tie", "loss"} - {cold}:
        return ""
    s = spread if not math.isnan(spread) else 0.0
    if counted == "tie" and (ratio - WIN if cold == "win" else TIE - ratio) <= s:
        return ""
    return counted


def _largest_move(machine: Sequence[tuple[float, str]]) -> tuple[float, str]:
    """The largest of ``machine``'s (fraction, what moved) spreads, NaN ones last; (NaN, "") where there are none."""
    return max(machine, key=lambda m: m[0] if not math.isnan(m[0]) else -1.0, default=(math.nan, ""))


def _why_uncertain(ratio: float, own: float, floor: float, runs: int, machine: Sequence[tuple[float, str]] = ()) -> str:
    """Why a point with a verdict past the tie band is ``uncertain``: the cases' own spread (``own``: IQR/median,
    placements and runs counted), else how far the same code moved between two cases of the run (``machine``:
    (fraction, what moved) from :func:`shared_kernel_drift` and :func:`same_code_spread`, the largest quoted),
    else the run-to-run floor of calls under :data:`SMALL_CALL_US`."""
    side, margin = ("a win", WIN - ratio) if ratio <= WIN else ("a loss", ratio - TIE)
    moved, how = _largest_move(machine)
    if verdict(ratio, own) != "uncertain" and verdict(ratio, moved) == "uncertain":
        return f"{side} by {100 * margin:.1f}% past the tie band, within the {100 * moved:.1f}% that {how}"
    if verdict(ratio, own) == "uncertain":
        return (
            f"{side} by {100 * margin:.1f}% past the tie band, within the cases' own spread of {100 * own:.1f}% "
            "(their calls' IQR/median, or their medians' spread over places in memory or runs: timing more calls "
            "measures it, it does not narrow it)"
        )
    return (
        f"under {SMALL_CALL_US:.0f} us the ratio moves by up to {100 * floor:.1f}% between separate runs "
        f"({runs} run{'s' if runs > 1 else ''} here); race the part again and give every run"
    )


def _why_on_the_line(vs_roof: float, line: float, own: float, machine: Sequence[tuple[float, str]]) -> str:
    """Why a version's ratio to its target's yardstick is not judged: the spread that reaches the target's ``line``,
    named. The two cases' own (``own``: IQR/median, placements) first, which racing again measures but does not
    narrow, so only a version faster by more than it decides the point; else how far the same code moved between
    two cases of the run or a case's clock (``machine``: (fraction, what moved) from :func:`same_code_spread`,
    :func:`shared_kernel_drift`, :func:`slowed_by_clock`), the largest quoted with its own advice."""
    head = f"target not judged: {vs_roof:.3f}x the yardstick against {line:.2f}x"
    off = abs(vs_roof - line) / line
    if off <= own:
        return (
            f"{head}, within the cases' own spread of {100 * own:.1f}% (the version's and the yardstick's calls' "
            "IQR/median, or their medians' spread over places in memory: racing again measures it, it does not "
            "narrow it; a version faster by more than that decides the point)"
        )
    moved, how = _largest_move(machine)
    return f"{head}, within the {100 * moved:.1f}% that {how}"


# A kernel both sides of a point launch (cuBLAS's product after two different norms) is the same code on the same
# shapes: its time should not differ between the two cases. On H100s it did: cuBLAS's bias kernel at rmsnorm_linear
# 128x8192x5504 bf16 took 34.8 us after kprof's norm and 39.6 after Inductor's, two cases of one run
# (benchmarks/results/grid/rmsnorm_linear-decode-967864e/); up to 6.1% across the points of a prefill run; 15%
# between rounds of one race (benchmarks/results/rmsnorm-linear-bias/). Such a move is the machine's, and a
# point's verdict must clear it. Only a kernel that is most of both calls counts: a small one moves for its own
# reasons.
SHARED_KERNEL_MIN_SHARE = 0.5
_MACHINE = (
    ": the same code on the same shapes, so the machine moved between cases; race the part again and give every run"
)
# Two cases of the same code are compared over every run given (:func:`same_code_spread`), so another run can widen
# that spread but never narrow it: no advice to race again there.
_TWINS = (
    ": the same code on the same shapes, so the machine moved between cases; over several runs the largest such move "
    "counts, so racing again does not narrow it: a margin past it decides the point"
)


def shared_kernel_drift(kp: pd.Series | None, peer: pd.Series | None) -> tuple[float, str]:
    """(|t_kprof / t_peer - 1| of the longest kernel both cases launch, each time that kernel's median in its
    own case's cold calls, and a note naming it); (NaN, "") where no such kernel is at least
    :data:`SHARED_KERNEL_MIN_SHARE` of both cases' times, or a case has no per-kernel cold times."""
    if kp is None or peer is None:
        return math.nan, ""
    a, b = _kernels_of(kp), _kernels_of(peer)
    t_a, t_b = float(kp["gpu_time_us"]), float(peer["gpu_time_us"])
    shared = [
        (name, us, b[name])
        for name, us in a.items()
        if name in b and us >= SHARED_KERNEL_MIN_SHARE * t_a and b[name] >= SHARED_KERNEL_MIN_SHARE * t_b
    ]
    if not shared:
        return math.nan, ""
    name, us_a, us_b = max(shared, key=lambda k: k[1])
    how = (
        f"the kernel both launch ({_short(name)}) moved: {us_a:.1f} us in {kp['provider']}'s case, {us_b:.1f} in "
        f"{peer['provider']}'s{_MACHINE}"
    )
    return abs(us_a / us_b - 1), how


def same_code_spread(g: pd.DataFrame) -> tuple[float, str]:
    """At one point: the largest (max - min) / min of the times of cases that ran the same code, and a note
    naming them; (NaN, "") where no two did. The same code: the same kernels in the same order in their cold
    calls and the same Triton specialisations (constexprs, warps, stages, grid). A version and the dispatch that
    picks it are such a pair: on an H100, rmsnorm_linear's ``triton_tuned`` and ``triton_norm_cublas`` (the same
    norm and cuBLAS kernels from 512 rows) took 0.84-1.09x each other's time as two cases of one grid run."""
    groups: dict[tuple, list[pd.Series]] = {}
    for _, case in g.iterrows():
        code = _code_of(case)
        if code is not None:
            groups.setdefault(code, []).append(case)
    best = (math.nan, "")
    for cases in groups.values():
        times = [(float(c["gpu_time_us"]), str(c["provider"])) for c in cases]
        if len({p for _, p in times}) < 2:
            continue
        (lo, p_lo), (hi, p_hi) = min(times), max(times)
        moved = hi / lo - 1
        if math.isnan(best[0]) or moved > best[0]:
            best = (
                moved,
                f"{p_lo} and {p_hi}, the same kernels, took apart as two cases ({lo:.1f} and {hi:.1f} us){_TWINS}",
            )
    return best


def slowed_by_clock(*cases: pd.Series | None) -> tuple[float, str]:
    """(how much slower than at full clock the most slowed of ``cases`` may be, a note naming it); (NaN, "")
    where none is. A case is slowed where its cold time pools calls that started under
    :data:`kprof.timing.CLOCK_FULL_FRACTION` of the GPU's highest SM clock (``cold_clock_pct``: kprof could not
    get enough calls at full clock, :func:`kprof.timing.settle_clock`). A call bound by its arithmetic takes
    longer in proportion to the clock, so its time may be up to 100 / pct - 1 over the kernel's at full clock."""
    worst = (math.nan, "")
    for case in cases:
        pct = _number(case.get("cold_clock_pct")) if case is not None else math.nan
        if not pct < 100 * CLOCK_FULL_FRACTION:
            continue
        over = 100 / pct - 1
        if math.isnan(worst[0]) or over > worst[0]:
            worst = (
                over,
                f"{case['provider']}'s cold calls ran at {pct:.0f}% of the GPU's highest SM clock (its power or "
                "thermal limit: too few calls ran at full clock), so its time may be that much over its kernels' "
                "at full clock; race the part again and give every run",
            )
    return worst


def _code_of(case: pd.Series) -> tuple | None:
    """What identifies a case's code: its cold call's kernel names and its Triton specialisations; None for a
    case not timed cold, or without per-kernel times, or that failed."""
    names = tuple(name for name, _ in _cold_kernels(case))
    if not names or not bool(case.get("ok", True)) or not _is_time(case.get("gpu_time_us")):
        return None
    raw = case.get("triton_kernels")
    specs = json.loads(raw) if isinstance(raw, str) and raw else []
    keys = ("kernel", "constexprs", "num_warps", "num_stages", "grid")
    return names, json.dumps([{k: s.get(k) for k in keys} for s in specs], sort_keys=True)


def _dispatch_vs_best(disp: pd.Series | None, best: pd.Series | None, same_code: float) -> tuple[float, float]:
    """(the dispatch's time over the best plain version's, how far that ratio may be off as two cases of the run).
    Where the two ran the same code (the dispatch picked that version) the ratio is 1.0 and the spread 0: what sets
    their times apart is the machine between two cases (:func:`same_code_spread`). Otherwise the spread is the larger
    of the two cases' own spread, how far the same code moved at the point (``same_code``), a kernel both launch and
    a clock that slowed either. Where the two were timed unlike (:func:`timed_unlike`) the spread is infinite: the
    ratio measures the timings as much as the code, and the point is counted as not judged."""
    if disp is None or best is None:
        return math.nan, math.nan
    code = _code_of(disp)
    if code is not None and code == _code_of(best):
        return 1.0, 0.0
    if timed_unlike(disp, best):
        return float(disp["gpu_time_us"]) / float(best["gpu_time_us"]), math.inf
    spread = _nanmax(
        pair_spread(disp, best), same_code, shared_kernel_drift(disp, best)[0], slowed_by_clock(disp, best)[0]
    )
    return float(disp["gpu_time_us"]) / float(best["gpu_time_us"]), spread


def _kernels_of(case: pd.Series) -> dict[str, float]:
    """A cold-timed case's kernels: name -> median us (the first of a name)."""
    out: dict[str, float] = {}
    for name, us in _cold_kernels(case):
        out.setdefault(name, us)
    return out


def _cold_kernels(case: pd.Series) -> list[tuple[str, float]]:
    """A cold-timed case's ``cold_kernels``: (name, median us) of each kernel of its calls, in launch order; []
    for a case timed in another mode or stored before the column existed."""
    raw = case.get("cold_kernels")
    if case.get("timing_mode") != "cold" or not isinstance(raw, str) or not raw:
        return []
    return [(str(name), float(us)) for name, us in json.loads(raw)]


def _nanmax(*values: float) -> float:
    """The largest of ``values`` that is a number; NaN when none is (``max`` keeps a NaN that comes first)."""
    nums = [v for v in values if not math.isnan(v)]
    return max(nums) if nums else math.nan


def _case_spread(case: pd.Series) -> float:
    """A case's own spread: its samples' IQR/median or, ranked by cold time, the spread of its medians at
    the places in memory its tensors were timed at, whichever is larger."""
    placed = _number(case.get("cold_placement_spread")) if case.get("timing_mode") == "cold" else math.nan
    return _nanmax(_number(case.get("noise")), placed)


def _number(value: object) -> float:
    """A metric as a float: NaN for a missing one (a store made before the column existed holds None)."""
    return math.nan if value is None or pd.isna(value) else float(value)  # type: ignore[arg-type]


def run_to_run_floor(kprof_us: float, peer_us: float, runs: int, sigmas: tuple[float, float] | None = None) -> float:
    """The 95% half-width of the best-kprof / best-peer ratio from run-to-run variance alone, for a point
    whose slower side takes under :data:`SMALL_CALL_US`, over ``runs`` runs: each side drifts on its own, by
    its ``sigmas`` (per-run sd of the log median: a calibration's, from ``kprof noise``) or else the
    uncalibrated small-call default each. NaN for larger points, where separate runs agree within the cases'
    spread."""
    if not max(kprof_us, peer_us) < SMALL_CALL_US:
        return math.nan
    from kprof.variance import DEFAULT_SIGMA_RUN_BY_CLASS, ratio_half_width  # imports scipy

    sigma_k, sigma_p = sigmas or (DEFAULT_SIGMA_RUN_BY_CLASS["<10us"],) * 2
    return ratio_half_width(sigma_k, sigma_p, runs)


def _key(case: pd.Series) -> str:
    return f"{case.get('family')}/{case.get('provider')}/{case.get('shape')}/{case.get('dtype')}"


def pair_spread(kp: pd.Series | None, peer: pd.Series | None) -> float:
    """A point's own spread: the larger spread of its best kprof case and best peer case that is known."""
    return _nanmax(*(_case_spread(c) for c in (kp, peer) if c is not None))


def timed_unlike(a: pd.Series | None, b: pd.Series | None) -> str:
    """Why two cases' times are not one measurement, naming how each was timed ("" where they are, or a case is
    missing): ``kprof diff``'s rule (:func:`kprof.diff.timed_as`), since another declared mode (warm reads inputs
    from L2, cold does not: 30% faster with the code unchanged) or the CUDA-event fallback against CUPTI records
    (about 3 us more per call) shifts a time with the code unchanged, and their ratio then measures the timings."""
    if a is None or b is None:
        return ""
    from kprof.diff import timed_as  # imports scipy: only where a point has two cases to compare

    ta, tb = timed_as(a), timed_as(b)
    if ta == tb:
        return ""

    return f"{a['provider']} {_timed_words(ta)}, {b['provider']} {_timed_words(tb)}"


def unlike_ceiling(case: pd.Series) -> str:
    """Why a case's % of the copy ceiling is no measurement ("" where it is): the ceiling is timed cold
    (:func:`kprof.device.measure_copy_ceiling`), so a case timed warm (inputs from L2: it can read over 100%) or in a
    run that declared no mode is set against another timing. A ceiling timed by CUDA events against a case by CUPTI
    is not seen here: the metrics do not say how the run's ceiling was timed (its run record's ``ceiling`` does)."""
    mode = case.get("timing_mode")
    if mode == "cold":
        return ""
    how = _timed_words(mode if isinstance(mode, str) and mode else None)
    return f"{case['provider']} {how}, the copy ceiling it is a % of timed cold"


def _why_timed_unlike(unlike: str, what: str = "no verdict and no target is") -> str:
    """The why column's words for cases timed unlike (:func:`timed_unlike`): ``what`` is not judged on them."""
    return (
        f"not compared: {unlike}; the ratio would measure the two timings, not the code, so {what} judged here (race "
        "the point again with every case timed alike: the same --mode, a profiler that leaves CUPTI to kprof)"
    )


# how a point's best two were timed, where it is not one timing: a side missing (any run whose own two sides were timed
# alike is pooled), or the two timed unlike (no run is timed as they are: the verdict is not called anyway)
_ANY_TIMING, _UNLIKE = object(), object()


def _between_runs(
    g: pd.DataFrame, kp: pd.Series | None = None, peer: pd.Series | None = None, prepared_op: str | None = None
) -> tuple[float, dict[str, tuple[float, str]], list[str]]:
    """At one point: each run (the ``run`` column) that measured both sides, with its best-kprof / best-peer
    ratio and the verdict that run alone gives (its own cases' spread), the ratios' spread between runs,
    (max - min) / median (NaN with fewer than two such runs), and the why column's words for each run left out.
    Only runs whose two sides were timed alike (:func:`timed_unlike`), and timed as the point's own best two (``kp``,
    ``peer``) where it has both, are pooled: another timing shifts a time with the code unchanged (warm reads its
    inputs from L2, the event fallback adds about 3 us a call), so their ratios beside each other would spread by
    the timings, not the runs, and a run whose sides are unlike has no ratio at all. The ``prepared_op`` provider (the
    ops API's prepared object) is no version here, as it is none of the point's best version."""
    if "run" not in g:
        return math.nan, {}, []
    point = _pair_timing(kp, peer)
    per_run, left = {}, []
    for run, r in g.groupby("run", sort=False):
        kp_r = _best(r[(r["kind"] == "triton") & (r["provider"] != prepared_op)])
        peer_r = _best(r[r["kind"].isin(PEER_KINDS)])
        if kp_r is None or peer_r is None:
            continue
        timing = _pair_timing(kp_r, peer_r)
        if timing is _UNLIKE:
            unlike = timed_unlike(kp_r, peer_r)
            left.append(f"run {run} left out of the runs' ratios: {unlike}, so it has none (time its sides alike)")
            continue
        if point is not _ANY_TIMING and timing != point:
            if point is not _UNLIKE:  # where the point's own two are unlike, its why says so already
                left.append(
                    f"run {run} left out of the runs' ratios: its cases were {_timed_words(timing)}, the point's best "
                    f"two {_timed_words(point)}, another measurement (give runs of one timing; kprof diff compares "
                    "the others)"
                )
            continue
        ratio = float(kp_r["gpu_time_us"]) / float(peer_r["gpu_time_us"])
        per_run[str(run)] = (ratio, verdict(ratio, pair_spread(kp_r, peer_r)))
    if len(per_run) < 2:
        return math.nan, per_run, left
    vals = [v for v, _ in per_run.values()]
    return (max(vals) - min(vals)) / statistics.median(vals), per_run, left


def _pair_timing(kp: pd.Series | None, peer: pd.Series | None) -> object:
    """How two cases were timed, as :func:`kprof.diff.timed_as` names it (None: a run from before modes were
    declared); ``_ANY_TIMING`` where a case is missing, ``_UNLIKE`` where the two were timed unlike."""
    if kp is None or peer is None:
        return _ANY_TIMING
    from kprof.diff import timed_as  # imports scipy: only where a point has two cases to compare

    timing = timed_as(kp)
    return timing if timing == timed_as(peer) else _UNLIKE


def _timed_words(timing: object) -> str:
    """How a case was timed, in the why column's words (``timing``: :func:`kprof.diff.timed_as`'s name, or None)."""
    return f"timed {timing}" if timing is not None else "from a run that recorded no timing mode"


def _left_words(case: pd.Series) -> str:
    return f"{case['provider']} left {_number(case.get('cold_writeback_us')):.1f} µs"


def repeats_of_other_code(metrics: pd.DataFrame, identity: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """The points (shape, dtype, runs) that several runs measured with different kernel code (``identity``:
    run -> its source identity): such runs are revisions to diff, not repeats whose disagreement is noise."""
    if "run" not in metrics:
        return []
    out = []
    for (shape, dtype), g in metrics.groupby(["shape", "dtype"], sort=False):
        runs = list(dict.fromkeys(g["run"]))
        if len({identity.get(r, r) for r in runs}) > 1:
            out.append((str(shape), str(dtype), runs))
    return out


def grid_table(
    metrics: pd.DataFrame,
    dispatch: str | None = None,
    prepared: Sequence[str] = (),
    targets: GridTargets | None = None,
    evidence: pd.DataFrame | None = None,
    sigma_run: Callable[[str, float], float] | None = None,
    kernels: pd.DataFrame | None = None,
    prepared_op: str | None = None,
    plans: Mapping[str, RunPlan] | None = None,
) -> pd.DataFrame:
    """One row per (shape, dtype) of ``metrics`` (one or more runs' rows, concatenated, each run's named in a
    ``run`` column where a point may be measured by several: each side's fastest case over all of them, and
    the spread of the ratio between runs counted in the point's spread); ``dispatch``: the
    provider the ops API runs for this family, compared with the best kprof version at each point other than
    the ``prepared`` ones (versions on weights derived before the call, which the plain op cannot use: the
    ops API runs them only through its prepared objects). ``targets``: the family's, checked per point;
    ``evidence``: metrics of Nsight Compute runs of the same points (``metrics`` itself is read too);
    ``sigma_run``: (case key, median us) -> that case's run-to-run sd of log median from a calibration of the
    device (:func:`kprof.variance.floor_lookup`), for the floor of points under :data:`SMALL_CALL_US`;
    ``kernels``: per-kernel durations of the Nsight Compute runs (:func:`kernel_times`), quoted where a case of
    two or more kernels loses or misses its target: where its time goes. ``prepared_op``: the provider that runs the
    ops API's prepared object (its own choice among the prepared versions and the plain op), left out of both bests
    (it is no version of its own) and compared with the best kprof version at each point, as the dispatch is.
    ``plans``: run id (``metrics``' ``run`` column) -> what it set out to measure; where a run was cut before a point's
    planned cases ran, a verdict those cases could change is not called (``not measured``, the why naming them), and
    a planned point with no case at all is listed so."""
    ncu = metrics if evidence is None else pd.concat([metrics, evidence], ignore_index=True)
    kinds = dict(zip(metrics["provider"], metrics["kind"])) if len(metrics) else {}
    ran = set(kinds)  # an op these runs never timed is not silent at each point: the runs predate it
    rows = []
    for (shape, dtype), g in metrics.groupby(["shape", "dtype"], sort=False):
        versions = g[(g["kind"] == "triton") & (g["provider"] != prepared_op)]
        kp = _best(versions)
        plain = _best(versions[~versions["provider"].isin(list(prepared))])
        disp = _best(g[g["provider"] == dispatch]) if dispatch else None
        held = _best(g[g["provider"] == prepared_op]) if prepared_op else None
        peer = _best(g[g["kind"].isin(PEER_KINDS)])
        roof = _best(g[g["kind"] == "roofline"])
        low = _highest_floor(g, roof)
        t_k = float(kp["gpu_time_us"]) if kp is not None else math.nan
        t_p = float(peer["gpu_time_us"]) if peer is not None else math.nan
        ratio = t_k / t_p if kp is not None and peer is not None else math.nan
        within = pair_spread(kp, peer)
        drift = shared_kernel_drift(kp, peer)
        twins = same_code_spread(g)
        slowed = slowed_by_clock(kp, peer)
        between, per_run, left_runs = _between_runs(g, kp, peer, prepared_op)
        sides = None
        if sigma_run is not None and kp is not None and peer is not None:
            sides = (sigma_run(_key(kp), t_k), sigma_run(_key(peer), t_p))
        floor = run_to_run_floor(t_k, t_p, len(per_run), sides)
        spread = _nanmax(within, between, floor, drift[0], twins[0], slowed[0])
        bound = str(kp.get("bound", "")) if kp is not None else ""
        pct_copy = float(kp["pct_peak_bw"]) if kp is not None and bound == "memory" else math.nan
        nbytes = float(kp["bytes"]) if kp is not None and pd.notna(kp.get("bytes")) else math.nan
        vs_roof = t_k / float(roof["gpu_time_us"]) if kp is not None and roof is not None else math.nan
        target = None
        if targets is not None and kp is not None:
            target = targets.for_point(shape, bound, nbytes, has_yardstick=roof is not None)
        met = _met(target, pct_copy, vs_roof)
        # times of unlike timings (kprof diff's rule) make no ratio: the point's two sides, or a version and its
        # yardstick, so neither the verdict nor the target is judged on them
        unlike, unlike_target = timed_unlike(kp, peer), ""
        if met is not None:
            unlike_target = unlike or timed_unlike(kp, roof if isinstance(target, RooflineTarget) else None)
            if isinstance(target, CopyTarget):
                unlike_target = unlike_target or unlike_ceiling(kp)
            met = None if unlike_target else met
        # a ratio to the yardstick compares two cases as the peer verdict does: within their spread (the same
        # code's, a shared kernel's move) it is neither met nor missed
        roof_spread, roof_parts = math.nan, None
        if isinstance(target, RooflineTarget) and met is not None:
            roof_parts = (pair_spread(kp, roof), [twins, shared_kernel_drift(kp, roof), slowed_by_clock(kp, roof)])
            roof_spread = _nanmax(roof_parts[0], *(moved for moved, _ in roof_parts[1]))
            if abs(vs_roof - target.ratio) <= roof_spread * target.ratio:
                met = None
        wb_target = ""
        if met is not None:
            if isinstance(target, RooflineTarget):
                vs_wb = with_writeback(kp, roof)
                # decisively on the other side: past the tolerance the cold ratio is judged with, or the counted
                # times' own spread where that is larger
                decisive = abs(vs_wb - target.ratio) > counted_spread(roof_spread, kp, roof) * target.ratio
                if decisive and (vs_wb <= target.ratio) != met:
                    wb_target = (
                        f"target not judged: {vs_roof:.3f}x the yardstick by cold times, {vs_wb:.3f}x with the "
                        f"write-back each call left in L2 counted ({_left_words(kp)}, {_left_words(roof)}), against "
                        f"{target.ratio:.2f}x"
                    )
            elif isinstance(target, CopyTarget) and str(kp.get("timing_mode") or "cold") == "cold":
                # the ceiling is a 1 GiB copy's rate, whose own write-back is a small part of it
                pct_wb = pct_copy * _number(kp.get("cold_us")) / _number(kp.get("cold_with_writeback_us"))
                decisive = abs(pct_wb / 100 - target.fraction) > counted_spread(0.0, kp) * target.fraction
                if not math.isnan(pct_wb) and decisive and (pct_wb >= 100 * target.fraction) != met:
                    wb_target = (
                        f"target not judged: {pct_copy:.1f}% of the copy ceiling by its cold time, {pct_wb:.1f}% with "
                        f"the write-back it left in L2 counted ({_left_words(kp)})"
                    )
            met = None if wb_target else met
        reach = ""
        floor_ratio = (
            float(low["gpu_time_us"]) / float(roof["gpu_time_us"]) if low is not None and roof is not None else math.nan
        )
        v = verdict(ratio, spread) if kp is not None else "not measured"
        disagree = len({pv for _, pv in per_run.values()}) > 1
        if disagree:  # runs that alone call different verdicts: none is called
            v = "uncertain"
        if unlike and v in ("win", "tie", "loss"):
            v = "uncertain"
        # the cold time leaves out the write-back a call left in L2 (the next kernel pays it): where counting it
        # changes the verdict, which one holds depends on what runs next, so none is called
        ratio_wb, wb_verdict = with_writeback(kp, peer), ""
        v_wb = counted_verdict(v, ratio_wb, counted_spread(spread, kp, peer))
        if v_wb:
            wb_verdict = (
                f"{v} at {ratio:.3f} by cold times, {v_wb} at {ratio_wb:.3f} with the write-back "
                f"each call left in L2 counted ({_left_words(kp)}, {_left_words(peer)}): which holds depends on what "
                "the next kernel pays"
            )
            v = "uncertain"
        cut_versions, cut_peers = _cut_short(g, plans, kinds)
        cut_versions = [p for p in cut_versions if p != prepared_op]  # the prepared object is no version of its own
        # what the cases not run could change: a faster version undoes a loss or a tie, a faster peer a win or a tie
        undecided = (bool(cut_versions) and v in ("loss", "tie", "uncertain", "not measured")) or (
            bool(cut_peers) and v in ("win", "tie", "uncertain", "no peer")
        )
        target_cut = bool(cut_versions) and met is False  # a version not run might meet it
        if target_cut:
            met = None
        if undecided:
            v = "not measured"
            why = _why_cut(cut_versions, cut_peers, kp, peer)
        elif target_cut:
            why = "target not judged: " + _why_cut(cut_versions, [], kp, peer)
        elif kp is None:
            why = _why_unmeasured(g)
        elif unlike_target:  # the verdict's words below say it where the two sides are unlike
            why = "" if unlike else "target not judged: " + _why_timed_unlike(unlike_target, "the target is not")
        elif v == "loss" or met is False:
            others = [peer] if v == "loss" else []
            others += [roof] if isinstance(target, RooflineTarget) and met is False else []
            why = _why_measured(ncu, shape, dtype, [kp, *[o for o in others if o is not None]], kernels)
            if met is False and isinstance(target, RooflineTarget) and low is not None and roof is not None:
                reach, said = floor_reach(low, roof, target, max(len(per_run), 1))
                why = f"{said}; {why}"
        elif wb_target:
            why = wb_target
        elif target is not None and met is None and roof_parts is not None and not math.isnan(roof_spread):
            why = _why_on_the_line(vs_roof, target.ratio, *roof_parts)
        elif target is not None and met is None:
            why = "target not judged: " + (
                f"its yardstick ({target.yardstick}, a `roofline` provider) did not run at this point"
                if isinstance(target, RooflineTarget)
                else "no % of the copy ceiling (the run measured no ceiling)"
            )
        else:
            why = ""
        if wb_target and v == "loss":
            why = _joined(why, wb_target)
        if unlike and v != "not measured":
            why = _joined(_why_timed_unlike(unlike), why)
        elif wb_verdict:
            why = _joined(wb_verdict, why)
        elif v == "uncertain" and not disagree:
            machine = (drift, twins, slowed)
            why = _joined(_why_uncertain(ratio, _nanmax(within, between), floor, max(len(per_run), 1), machine), why)
        if disagree:
            runs = "the runs disagree: " + ", ".join(f"{r:.3f} ({pv}) in {run}" for run, (r, pv) in per_run.items())
            why = _joined(runs, why)
        why = _joined(why, *left_runs)  # runs whose ratio is none, or of another timing than the point's: said
        # a caller pays the host time of what it launches: the ops API's version where the run has it
        launched = disp if disp is not None and not math.isnan(_number(disp.get("host_time_us"))) else kp
        host, graph_host = (
            _number(launched.get(c)) if launched is not None else math.nan for c in ("host_time_us", "graph_host_us")
        )
        launched_us = float(launched["gpu_time_us"]) if launched is not None else math.nan
        host_bound = host > launched_us
        if host_bound:
            why = _joined(why, host_bound_note(host, launched_us, graph_host, str(launched["provider"])))
        if v in ("win", "tie", "uncertain", "no peer"):  # a win is over the peers that gave a time: say which did not
            why = _joined(why, _silent_peers(g))
        why = _joined(why, _no_valid_time(g))
        dispatch_silent = bool(dispatch) and dispatch in ran and disp is None
        prepared_silent = bool(prepared_op) and prepared_op in ran and held is None
        for gap, provider, role in (
            (dispatch_silent, dispatch, "the dispatch"),
            (prepared_silent, prepared_op, "the prepared object"),
        ):
            if gap:
                why = _joined(why, _silent_op(g, str(provider), role))
        dispatch_ratio, dispatch_spread = _dispatch_vs_best(disp, plain, twins[0])
        prepared_ratio, prepared_spread = _dispatch_vs_best(held, kp, twins[0])
        for op_spread, (op, best), role in (
            (dispatch_spread, (disp, plain), "the dispatch"),
            (prepared_spread, (held, kp), "the prepared object"),
        ):
            if op_spread == math.inf:
                why = _joined(
                    why, _why_timed_unlike(timed_unlike(op, best), f"{role}'s ratio to the best version is not")
                )
        if cut_versions:  # the best version may be one that did not run: neither is judged against it
            dispatch_ratio = dispatch_spread = prepared_ratio = prepared_spread = math.nan
        held_host, held_gpu = (
            _number(held.get(c)) if held is not None else math.nan for c in ("host_time_us", "gpu_time_us")
        )
        rows.append(
            {
                "shape": shape,
                "dtype": dtype,
                "best_kprof": kp["provider"] if kp is not None else None,
                "kprof_us": t_k,
                "best_peer": peer["provider"] if peer is not None else None,
                "peer_us": t_p,
                "ratio": ratio,
                "spread": spread,
                "runs_spread": between,
                "kernel_drift": drift[0],
                "same_code_spread": twins[0],
                "slowed_by_clock": slowed[0],
                "run_floor": floor,
                "verdict": v,
                "why": why,
                "bound": bound,
                "pct_copy": pct_copy,
                "bytes": nbytes,
                "vs_roofline": vs_roof,
                "target": target.label() if target is not None else "",
                "target_met": met,
                "target_reach": reach,
                "floor_vs_roofline": floor_ratio,
                "timing_mode": kp.get("timing_mode") if kp is not None else None,
                "dispatch_vs_best": dispatch_ratio,
                "dispatch_spread": dispatch_spread,
                "prepared_op_vs_best": prepared_ratio,
                "prepared_op_spread": prepared_spread,
                "prepared_op_host_us": held_host,
                "prepared_op_gpu_us": held_gpu,
                "kprof_host_us": host,
                "kprof_graph_host_us": graph_host,
                "host_provider": launched["provider"] if launched is not None else None,
                "host_provider_us": launched_us,
                "host_bound": host_bound,
                "dispatch_silent": dispatch_silent,
                "prepared_op_silent": prepared_silent,
            }
        )
    measured = {(r["shape"], r["dtype"]) for r in rows}
    for run, plan in (plans or {}).items():
        for shape, dtype in plan.unreached(measured):
            measured.add((shape, dtype))
            why = f"the run ({run}) ended before this point ran (it was cut, or stopped): race the point again"
            rows.append(
                {"shape": shape, "dtype": dtype, "best_kprof": None, "best_peer": None, "verdict": "not measured",
                 "why": why, "target": "", "target_met": None,
                 "dispatch_silent": bool(dispatch) and dispatch in ran,
                 "prepared_op_silent": bool(prepared_op) and prepared_op in ran}
            )  # fmt: skip
    table = pd.DataFrame(rows)
    if "target_met" in table:  # True / False / None (not judged): never a bool column that turns None into False
        table["target_met"] = table["target_met"].astype(object)
    return table


def host_bound_note(host_us: float, gpu_us: float, graph_host_us: float = math.nan, provider: str = "") -> str:
    """The why column's words for a version whose host time per call exceeds its GPU time (``provider``: the ops
    API's version, or the best kprof version where the run has no dispatch): the verdict compares GPU time, which a
    caller sees only where its host runs ahead of the GPU (a CUDA graph, or work queued before)."""
    graph = f"; {graph_host_us:.1f} µs replayed in a CUDA graph" if not math.isnan(graph_host_us) else ""
    who = f"{provider} takes " if provider else ""
    return (
        f"host-bound: {who}{host_us:.1f} µs of host time per call against {gpu_us:.1f} µs on the GPU{graph}; called "
        "back to back outside a graph the GPU waits for the host, and the GPU-time verdict does not hold"
    )


def _met(target: CopyTarget | RooflineTarget | None, pct_copy: float, vs_roofline: float) -> bool | None:
    """Whether the point meets its target; None without a target or without the figure to judge it by."""
    if isinstance(target, CopyTarget) and not math.isnan(pct_copy):
        return bool(pct_copy / 100 >= target.fraction)
    if isinstance(target, RooflineTarget) and not math.isnan(vs_roofline):
        return bool(vs_roofline <= target.ratio)
    return None


# an evidence row's column: its ncu run's id where that run's kernel code is not the timed runs'
OTHER_CODE = "ncu_other_code"


def _same_code_first(rows: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """An ncu reading's rows: those of the timed runs' kernel code where any measured it, else every row and the
    ids of their runs of other code (``OTHER_CODE``), which the why column names."""
    flags = rows[OTHER_CODE].fillna("").astype(str) if OTHER_CODE in rows else pd.Series("", index=rows.index)
    # the counters only ncu reads: a timed run of a Triton version records its occupancy limiter from the compiled
    # kernel, and counted as a reading it hid every reading of other code (its DRAM and occupancy left unquoted)
    measured = [c for c, _ in NCU_EVIDENCE if c in rows and c not in _BESIDE_COUNTERS]
    same = rows[flags == ""]
    if measured and same[measured].notna().any().any():
        return same, []
    return rows, sorted({f for f in flags if f})


def _why_measured(
    ncu: pd.DataFrame, shape: str, dtype: str, cases: Sequence[pd.Series], kernels: pd.DataFrame | None = None
) -> str:
    """What Nsight Compute measured for these providers at this point (its counters; for a case of several
    kernels, each kernel's duration), or that it measured nothing here and each case's kernels' cold times."""
    here = ncu[(ncu["shape"] == shape) & (ncu["dtype"] == dtype)]
    notes = []
    for case in cases:
        rows, other = _same_code_first(here[here["provider"] == case["provider"]])
        facts = []
        for col, fmt in NCU_EVIDENCE:
            vals = rows[col].dropna() if col in rows else pd.Series(dtype=object)
            if len(vals) and (col not in _BESIDE_COUNTERS or facts):  # a limiter alone is not an ncu measurement
                facts.append(fmt.format(vals.iloc[-1] if col == "occupancy_limiter" else vals.median()))
        split = _kernels_note(kernels, shape, dtype, str(case["provider"]))
        if split:
            facts.append(f"kernels, each alone under ncu, {split}")  # a call's kernels may overlap outside ncu
        if facts:
            of = f" (ncu run {', '.join(other)}, of other kernel code than the timed runs)" if other else ""
            notes.append(f"{case['provider']}{of}: {', '.join(facts)}")
    if notes:
        return "ncu: " + "; ".join(notes)
    # without ncu, the cold calls' own per-kernel times still say which kernel the time is in
    cold = [
        f"{case['provider']} {' + '.join(f'{_short(k)} {us:.1f} us' for k, us in parts)}" + _side_by_side(case, parts)
        for case in cases
        if (parts := _cold_kernels(case))
    ]
    where = f"; each kernel's median cold time (CUPTI; a call's kernels may overlap): {'; '.join(cold)}" if cold else ""
    return f"no ncu measurement here{where} (profile the point with --profiler ncu, pass that run as --ncu)"


def _side_by_side(case: pd.Series, parts: list[tuple[str, float]]) -> str:
    """For a cold-timed case of several kernels (``parts``, its ``_cold_kernels``): how long they ran side by side in
    a call (the median sum of their times less the median busy time), so that kernels meant to overlap (PDL) and run
    one after the other show."""
    busy, total = _number(case.get("cold_us")), _number(case.get("cold_sum_us"))
    if len(parts) < 2 or math.isnan(busy) or math.isnan(total):
        return ""
    return f" (side by side for {max(total - busy, 0.0):.1f} us of the call's {busy:.1f})"


def _cut_short(
    g: pd.DataFrame, plans: Mapping[str, RunPlan] | None, kinds: Mapping[str, str]
) -> tuple[list[str], list[str]]:
    """(kprof versions, peers) that the runs measuring this point planned and none of them stored here: the run was
    cut before their cases ran. A provider of unknown kind (it ran nowhere in these runs) counts as both."""
    if not plans or "run" not in g:
        return [], []
    stored = set(g["provider"])
    missing = sorted({p for run in g["run"].unique() if run in plans for p in plans[run].not_run(stored)})
    versions = [p for p in missing if kinds.get(p, "triton") == "triton"]
    peers = [p for p in missing if p not in kinds or kinds[p] in PEER_KINDS]
    return versions, peers


def _why_cut(versions: list[str], peers: list[str], kp: pd.Series | None, peer: pd.Series | None) -> str:
    """Why a point's verdict is not called: the planned cases its run did not reach, and what those that ran read."""
    missing = ", ".join(dict.fromkeys(versions + peers))
    ran = ""
    if kp is not None and peer is not None:
        ran = (
            f"; of the cases that ran, {kp['provider']} took {float(kp['gpu_time_us']):.2f} µs against "
            f"{peer['provider']} {float(peer['gpu_time_us']):.2f}"
        )
    return f"the run ended before these planned cases ran here: {missing}{ran}; race the point again for a verdict"


def _silent_peers(g: pd.DataFrame) -> str:
    """The peers whose cases at this point gave no time (an error, a refusal, out of memory), each with its note's
    start; "" where every peer that ran gave one. A peer whose time is no time is named by :func:`_no_valid_time`."""
    peers = g[g["kind"].isin(PEER_KINDS)]
    invalid = set(peers.loc[_no_time_passed(peers), "provider"])
    said = []
    for provider, rows in peers.groupby("provider", sort=True):
        if _best(rows) is None and provider not in invalid:
            note = _first_note(rows)
            said.append(f"{provider} ({note[:80]})" if note else str(provider))
    return f"no time from peer(s) here: {', '.join(said)}" if said else ""


def _joined(*said: str) -> str:
    """The why column's parts that say something, in order, joined by "; "."""
    return "; ".join(part for part in said if part)


def _first_note(rows: pd.DataFrame) -> str:
    """The first non-blank note of ``rows`` (a failed case's error, a refusal); "" where none has one."""
    notes = [str(n) for n in rows.get("note", pd.Series(dtype=object)).dropna() if str(n).strip()]
    return notes[0] if notes else ""


def _silent_op(g: pd.DataFrame, provider: str, role: str) -> str:
    """The why column's words for a point where ``provider`` (the dispatch, or the prepared object: ``role``) gave no
    time: with no ratio to the best kprof version there, the point is left out of that count in the summary, and
    without these words a failure of what a model runs would pass for a point not raced."""
    rows = g[g["provider"] == provider]
    if rows.empty:
        how = "it did not run here"
    else:
        note = _first_note(rows)
        how = f"it failed: {note[:80]}" if note else "its case gave no valid time"
    return f"no time from {role} ({provider}) here ({how}); left out of its count in the summary"


def _why_unmeasured(g: pd.DataFrame) -> str:
    """The first note of the point's Triton cases that did not give a time (an error, a skip, out of memory)."""
    tri = g[g["kind"] == "triton"]
    notes = [str(n) for n in tri.get("note", pd.Series(dtype=object)).dropna() if str(n).strip()]
    return notes[0][:160] if notes else ("no Triton version ran" if tri.empty else "no Triton case gave a time")
