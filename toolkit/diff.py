"""``kprof diff``: did a change make each case faster, slower or neither, beyond the noise? Is it still correct?

Decision rule (per case, on the stored per-call samples of the two runs, "gpu" by default; A = before,
B = after):

* ``ratio`` = median(B) / median(A); its 95% confidence interval by bootstrap (``scipy.stats.bootstrap``,
  percentile method, resampling each run's samples independently);
* ``p`` = two-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu``) of A's samples against B's;
* **SLOWER** when ratio > 1 + threshold, the whole interval lies above 1 and p < alpha;
  **FASTER** when ratio < 1 - threshold, the whole interval lies below 1 and p < alpha;
  **SAME** when the whole interval lies within [1 - threshold, 1 + threshold]: any change is smaller than
  the threshold, with 95% confidence;
  **UNCERTAIN** otherwise, with the reason.

Which variance the interval and p carry depends on how the two runs were made (:func:`comparison_kind`):

* **interleaved** arms of one ``kprof profile --rev A --rev B`` invocation share a process and alternate
  timing rounds, so drift of the machine hits both alike: the rule above on the samples alone (the most
  sensitive comparison; it catches a 5% regression). Only the ``gpu`` samples alternate; the other kinds
  (``--samples host``, ``graph``, ...) are taken once per arm, so they are compared as separate runs are;
* **separate** runs differ also by run-to-run variance that per-call samples do not show (clocks, memory
  placement, allocator, L2 history). The device's run-to-run floor (:mod:`kprof.variance`: calibrated with
  ``kprof noise``, else a documented default) is added in log space: interval ``exp(log ratio +- z se)``
  with ``se^2 = se_within^2 + 2 sigma_run^2`` and a z-test p; calls must then survive Benjamini-Hochberg
  over the cases of the diff.

A case counts as one measurement only where both runs took its ``gpu`` samples alike (:func:`timed_unlike`): the
same declared timing mode, both from CUPTI records or both from the CUDA-event fallback, or both made before kprof
declared modes. Otherwise the ratio measures the two timings (warm against cold read 30% faster with the code
unchanged), so the row is UNCERTAIN, "not compared", with both timings named.

Every timing row says which variance it accounted for (column ``variance``). Defaults: threshold 3%, alpha
0.01, at least 5 samples per side. A floor holds for the samples it was learnt from: ``--samples host`` (or
``graph``) of separate runs takes a calibration of those samples, else every verdict is UNCERTAIN and says why
(:func:`kprof.variance.unmeasured_floor`: host times of unchanged code moved 0.47-2.4x between separate runs).

Correctness is compared for every case in both runs (:mod:`kprof.correctness_diff`): BROKEN (correct in A,
not in B) is a regression like SLOWER; two CPU interpreter runs, which have no timings, get these verdicts
only. Next to the timing verdict, :func:`kernel_changes` compares the two launch tables of each case:
kernels added or removed, launches per call, and the dominant kernel's grid, block, registers, shared
memory, theoretical occupancy and waves (``registers 62->96, occupancy 50%->25%`` beside a SLOWER verdict explains
it). Plain functions, DataFrames in and out; rendering is separate (:func:`to_markdown`, :func:`to_json`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from kprof import correctness_diff, launch_table
from kprof.envinfo import short_commit
from kprof.errors import KprofError
from kprof.fmt import fmt_num, markdown_table
from kprof.store import plain
from kprof.timing import CLOCK_FULL_FRACTION, counted_spread, with_writeback
from kprof.variance import WITHIN_RUN, Floor, floor_lookup, one_invocation

VERDICTS = ("SLOWER", "UNCERTAIN", "SAME", "FASTER")
MATCH_KEYS = ("family", "provider", "shape", "dtype")
NOT_COMPARED = "not compared: "  # how the why of a timing row that timed_unlike() left without a test begins


@dataclass(frozen=True)
class DiffRule:
    threshold: float = 0.03  # smallest relative change worth calling
    alpha: float = 0.01  # significance level of the Mann-Whitney U test
    confidence: float = 0.95  # of the bootstrap interval on the ratio
    n_resamples: int = 2000
    min_samples: int = 5
    seed: int = 0

    def describe(self) -> str:
        return (
            f"SLOWER/FASTER: median ratio beyond ±{100 * self.threshold:g}%, its {100 * self.confidence:g}% "
            f"bootstrap interval excluding 1 and Mann-Whitney p < {self.alpha:g}; SAME: the interval within "
            f"±{100 * self.threshold:g}%; UNCERTAIN: neither"
        )


def compare_samples(
    a: Sequence[float],
    b: Sequence[float],
    rule: DiffRule = DiffRule(),
    floor: Floor = WITHIN_RUN,
    paired: bool = False,
) -> dict[str, Any]:
    """Median of each side, ratio B/A with its interval, p, the verdict, and which variance it accounts for.

    ``floor`` is the between-run part (:mod:`kprof.variance`): :data:`WITHIN_RUN` for samples that share a
    process and alternate in time (interleaved ``--rev`` arms), else the run-to-run floor of the device.
    ``paired``: sample i of A and of B belong together (the i-th launch of one kernel configuration in two
    traces of the same program); the bootstrap then resamples pairs."""
    xa = np.asarray(a, dtype=float)
    xb = np.asarray(b, dtype=float)
    xa, xb = xa[np.isfinite(xa)], xb[np.isfinite(xb)]
    out: dict[str, Any] = {
        "n_a": int(xa.size),
        "n_b": int(xb.size),
        "median_a": math.nan,
        "median_b": math.nan,
        "ratio": math.nan,
        "ci_lo": math.nan,
        "ci_hi": math.nan,
        "p_value": math.nan,
        "variance": floor.describe(rule.confidence),
        "floor_pct": 100 * floor.half_width(rule.confidence) if floor.sigma_run > 0 else 0.0,
    }
    if xa.size == 0 or xb.size == 0:
        return {**out, "verdict": "UNCERTAIN", "why": "no samples on one side"}
    ma, mb = float(np.median(xa)), float(np.median(xb))
    out.update(median_a=ma, median_b=mb, ratio=mb / ma if ma > 0 else math.nan)
    paired = paired and xa.size == xb.size
    if paired and np.array_equal(xa, xb) and floor.sigma_run == 0:
        # every matched sample is the same number: the difference is exactly zero, whatever n is
        return {
            **out,
            "ci_lo": 1.0,
            "ci_hi": 1.0,
            "p_value": 1.0,
            "verdict": "SAME",
            "why": f"all {xa.size} matched samples identical",
        }
    if not (ma > 0 and mb > 0):  # a call in which no kernel was recorded: B/A = 0 would read as -100% FASTER
        side, m = ("A", ma) if not ma > 0 else ("B", mb)
        return {**out, "verdict": "UNCERTAIN", "why": f"median of {side} is {m:g} µs: no time measured"}
    if not floor.sigma_run >= 0:  # NaN would compare as no floor at all (NaN > 0 is false): within-run only
        return {
            **out,
            "floor_pct": math.nan,
            "verdict": "UNCERTAIN",
            "why": f"run-to-run floor is NaN ({floor.detail})",
        }
    if floor.source == "none":  # nothing measured says how far these samples move between runs
        return {**out, "floor_pct": math.nan, "verdict": "UNCERTAIN", "why": f"no run-to-run floor: {floor.detail}"}
    if min(xa.size, xb.size) < rule.min_samples:
        return {**out, "verdict": "UNCERTAIN", "why": f"fewer than {rule.min_samples} samples"}
    lo, hi, p = _within_run(xa, xb, ma, mb, out["ratio"], rule, paired)
    if floor.sigma_run > 0:
        lo, hi, p = _with_floor(out["ratio"], lo, hi, floor, rule)
    out.update(ci_lo=lo, ci_hi=hi, p_value=p)
    verdict, why = decide(out["ratio"], lo, hi, p, rule)
    if verdict == "UNCERTAIN" and floor.sigma_run > 0:
        why = _floor_reason(out["ratio"], floor, rule) or why
    return {**out, "verdict": verdict, "why": why}


def _within_run(
    xa: np.ndarray, xb: np.ndarray, ma: float, mb: float, ratio: float, rule: DiffRule, paired: bool
) -> tuple[float, float, float]:
    """Bootstrap interval of the ratio of medians and Mann-Whitney (Wilcoxon when paired) p."""
    if np.ptp(xa) == 0 and np.ptp(xb) == 0:  # no spread at all: the interval is the point
        return ratio, ratio, 1.0 if ma == mb else 0.0
    return _interval(
        xa.astype(float).tobytes(), xb.astype(float).tobytes(), rule.n_resamples, rule.confidence, rule.seed, paired
    )


@functools.lru_cache(maxsize=1024)
def _interval(
    a: bytes, b: bytes, n_resamples: int, confidence: float, seed: int, paired: bool
) -> tuple[float, float, float]:
    """:func:`_within_run`'s interval and p, remembered per (samples, resampling settings): they do not depend
    on the threshold or alpha, and the seeded bootstrap gives the same answer each time, so a dashboard that
    re-decides one pair at another threshold reuses them (they are most of a diff's time)."""
    xa, xb = np.frombuffer(a), np.frombuffer(b)
    res = stats.bootstrap(
        (xa, xb),
        lambda x, y, axis=-1: np.median(y, axis=axis) / np.median(x, axis=axis),
        paired=paired,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if paired:
        d = xb - xa
        p = 1.0 if not np.any(d) else float(stats.wilcoxon(xa, xb, zero_method="zsplit").pvalue)
    else:
        p = float(stats.mannwhitneyu(xa, xb, alternative="two-sided").pvalue)
    return lo, hi, p


def _with_floor(ratio: float, lo: float, hi: float, floor: Floor, rule: DiffRule) -> tuple[float, float, float]:
    """Interval and p of the ratio of two separate runs: within-run and between-run variance added in log
    space (the within-run standard error read off the bootstrap interval)."""
    z = float(stats.norm.ppf(0.5 + rule.confidence / 2))
    if not (ratio > 0 and lo > 0 and hi > 0):
        return math.nan, math.nan, math.nan
    se_within = (math.log(hi) - math.log(lo)) / (2 * z)
    se = math.sqrt(se_within**2 + floor.pair_sd() ** 2)
    lr = math.log(ratio)
    p = float(2 * stats.norm.sf(abs(lr) / se))
    return math.exp(lr - z * se), math.exp(lr + z * se), p


def _floor_reason(ratio: float, floor: Floor, rule: DiffRule) -> str | None:
    return _inside_floor(ratio, floor.half_width(rule.confidence))


def _inside_floor(ratio: float, h: float) -> str | None:
    if abs(ratio - 1) <= h:
        return (
            f"change {100 * (ratio - 1):+.1f}% is inside the run-to-run floor {100 * h:.1f}% "
            "(interleave with --rev for a finer test)"
        )
    return None


def decide(ratio: float, lo: float, hi: float, p: float, rule: DiffRule) -> tuple[str, str]:
    t = rule.threshold
    if any(math.isnan(v) for v in (ratio, lo, hi, p)):
        return "UNCERTAIN", "no interval"
    if ratio > 1 + t and lo > 1 and p < rule.alpha:
        return "SLOWER", f"+{100 * (ratio - 1):.1f}%, interval above 1, p={p:.2g}"
    if ratio < 1 - t and hi < 1 and p < rule.alpha:
        return "FASTER", f"{100 * (ratio - 1):.1f}%, interval below 1, p={p:.2g}"
    if lo >= 1 - t and hi <= 1 + t:
        return "SAME", f"interval within ±{100 * t:g}%"
    if abs(ratio - 1) > t:
        return "UNCERTAIN", f"{100 * (ratio - 1):+.1f}% but not significant (p={p:.2g}, interval {lo:.3f}-{hi:.3f})"
    return "UNCERTAIN", f"interval {lo:.3f}-{hi:.3f} reaches beyond ±{100 * t:g}%"


# ---------------------------------------------------------------------------------------- run vs run
FloorFor = Callable[[str, float], Floor]


def diff_cases(
    metrics_a: pd.DataFrame,
    samples_a: pd.DataFrame,
    metrics_b: pd.DataFrame,
    samples_b: pd.DataFrame,
    rule: DiffRule = DiffRule(),
    floor_for: FloorFor | None = None,
    kind: str = "gpu",
    other_model: Callable[[str], str] | None = None,
) -> pd.DataFrame:
    """One row per case correct in both runs with ``kind`` samples on both sides (matched on family,
    provider, shape, dtype). ``floor_for(case key, median us)`` gives the between-run part of each
    comparison (None: within-run only, for interleaved arms of one invocation). A case whose ``gpu`` samples
    the two runs took as different times (:func:`timed_unlike`), or that ``other_model(case)`` says ran on
    different GPU models (:func:`models_unlike`), is UNCERTAIN, not compared."""
    ga = samples_us(samples_a, kind)
    gb = samples_us(samples_b, kind)
    rows = []
    for d in _correct_in_both(metrics_a, metrics_b):
        xa, xb = ga.get(d["case_a"]), gb.get(d["case_b"])
        if xa is None or xb is None or not xa.size or not xb.size:
            continue  # no timings on a side (an interpreter run): correctness is compared instead, see untimed()
        floor = WITHIN_RUN
        if floor_for is not None:
            finite = xa[np.isfinite(xa)]  # a NaN median would lose the size class and take the larger calls' floor
            floor = floor_for("/".join(str(d[k]) for k in MATCH_KEYS), float(np.median(finite)) if finite.size else 0)
        res = compare_samples(xa, xb, rule, floor)
        unlike = timed_unlike(d, kind) or (other_model(str(d["case_b"])) if other_model else "")
        if unlike:  # no test made: nothing to show as an interval, nothing for Benjamini-Hochberg to count
            res.update(ci_lo=math.nan, ci_hi=math.nan, p_value=math.nan, verdict="UNCERTAIN", why=unlike)
        rows.append({**{k: d[k] for k in MATCH_KEYS}, "case": d["case_b"], **res})
    cols = [
        *MATCH_KEYS,
        "case",
        "median_a",
        "median_b",
        "ratio",
        "ci_lo",
        "ci_hi",
        "p_value",
        "p_adjusted",
        "n_a",
        "n_b",
        "verdict",
        "why",
        "variance",
        "floor_pct",
    ]
    df = pd.DataFrame(rows, columns=cols)
    if floor_for is not None and not df.empty:
        df = _control_false_discoveries(df, rule)
    return sort_worst_first(df)


def _correct_in_both(metrics_a: pd.DataFrame, metrics_b: pd.DataFrame) -> list[dict[str, Any]]:
    """The cases correct (status ok) in both runs, one merged record each (columns suffixed ``_a`` / ``_b``)."""
    ok_a = metrics_a[metrics_a["status"] == "ok"]
    ok_b = metrics_b[metrics_b["status"] == "ok"]
    return ok_a.merge(ok_b, on=list(MATCH_KEYS), suffixes=("_a", "_b")).to_dict("records")


def timed_as(row: Mapping[str, Any], side: str = "") -> str | None:
    """What a case's ``gpu`` samples measure (``side``: the column suffix of a merged row): its declared timing mode
    (:mod:`kprof.timing`), ``MODE via CUDA events`` where cold or warm fell back to event pairs (no CUPTI records:
    nsys or ncu held it), or None for a run made before kprof declared modes (then CUDA-event pairs around calls)."""
    mode = row.get(f"timing_mode{side}")
    if not isinstance(mode, str) or not mode:
        return None
    if mode in ("cold", "warm") and row.get(f"timer{side}") == "events":
        return f"{mode} via CUDA events"
    return mode


def timed_unlike(row: Mapping[str, Any], kind: str = "gpu") -> str:
    """Why the two runs' ``gpu`` samples of a merged case row are not one measurement ("" where they are): another
    declared mode (warm reads inputs from L2, cold does not), or the event fallback (about 3 us of event overhead
    more per call), shift the time with the code unchanged. Other kinds of samples name what they measure."""
    ta, tb = timed_as(row, "_a"), timed_as(row, "_b")
    if kind != "gpu" or ta == tb:
        return ""

    def say(t: str | None, label: str) -> str:
        return (
            f"timed {t} in {label}" if t else f"run {label} recorded no timing mode (made before kprof declared them)"
        )

    return (
        f"{NOT_COMPARED}{say(ta, 'A')}, {say(tb, 'B')}; the ratio would measure the two timings, not the code "
        "(time both runs alike: same --mode, a profiler that leaves CUPTI to kprof)"
    )


def untimed(
    metrics_a: pd.DataFrame,
    samples_a: pd.DataFrame,
    metrics_b: pd.DataFrame,
    samples_b: pd.DataFrame,
    kind: str = "gpu",
) -> list[str]:
    """Cases correct in both runs with ``kind`` samples on one side only (a GPU case whose timing recorded nothing, an
    interpreter run against a GPU run): :func:`diff_cases` has no row for them, so the diff must say so."""
    ga, gb = samples_us(samples_a, kind), samples_us(samples_b, kind)

    def has(g: dict[str, np.ndarray], case: str) -> bool:
        return case in g and bool(g[case].size)

    return sorted(
        d["case_b"] for d in _correct_in_both(metrics_a, metrics_b) if has(ga, d["case_a"]) != has(gb, d["case_b"])
    )


_OTHER_MODEL = NOT_COMPARED + "measured on "  # how the why of a row models_unlike() left without a verdict begins


def gpu_models(run: Mapping[str, Any], devices: pd.DataFrame) -> tuple[str, dict[str, str]]:
    """The GPU model a run's cases were timed on: the run's device, and per case where a fan-out run recorded each
    case's GPU (``RunStore.case_devices``; empty for a one-process run)."""
    default = str((run.get("device") or {}).get("name") or run.get("device_name") or "")
    if devices.empty or "gpu_name" not in devices:
        return default, {}
    named = devices.dropna(subset=["gpu_name"])
    return default, dict(zip(named["case_id"].astype(str), named["gpu_name"].astype(str)))


def models_unlike(
    run_a: Mapping[str, Any], run_b: Mapping[str, Any], devices_a: pd.DataFrame, devices_b: pd.DataFrame
) -> Callable[[str], str]:
    """Why a case's timings of A and B are not one measurement because they ran on different GPU models ("" where
    they did not): the ratio is then mostly the hardware (an H200 moves bytes about 1.4x as fast as an H100), so
    FASTER or SLOWER would credit the code with it. The same model on another physical GPU is what the run-to-run
    floor of separate runs is for."""
    (da, per_a), (db, per_b) = gpu_models(run_a, devices_a), gpu_models(run_b, devices_b)

    def why(case: str) -> str:
        ga, gb = per_a.get(case, da), per_b.get(case, db)
        if ga and gb and ga != gb:
            return f"{_OTHER_MODEL}{ga} in A, {gb} in B: the ratio includes the difference between them"
        return ""

    return why


def not_compared_warnings(cases: pd.DataFrame) -> list[str]:
    """One warning per reason timed rows were left without a verdict (:func:`timed_unlike`, :func:`models_unlike`),
    each naming its count and first case: every such row's why begins with :data:`NOT_COMPARED`."""
    why = cases["why"].astype(str) if not cases.empty else pd.Series(dtype=str)
    other_model = why.str.startswith(_OTHER_MODEL)
    groups = (
        (
            why.str.startswith(NOT_COMPARED) & ~other_model,
            "timed differently in the two runs, so their timings are not compared",
            "",
        ),
        (
            other_model,
            "timed on different GPU models in the two runs get no timing verdict",
            "; profile both revisions on one model, e.g. `kprof profile FAMILY --rev A --rev B`",
        ),
    )
    out = []
    for rows, what, advice in groups:
        if rows.any():
            first = cases[rows].iloc[0]
            out.append(
                f"{int(rows.sum())} case(s) {what} (UNCERTAIN; e.g. {first['case']}: "
                f"{first['why'].removeprefix(NOT_COMPARED)}){advice}"
            )
    return out


def benjamini_hochberg(p: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (NaN stays NaN)."""
    x = np.asarray(p, dtype=float)
    out = np.full_like(x, np.nan)
    ok = np.flatnonzero(np.isfinite(x))
    if ok.size:
        order = ok[np.argsort(x[ok])]
        ranked = x[order] * ok.size / np.arange(1, ok.size + 1)
        out[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return out


def _control_false_discoveries(df: pd.DataFrame, rule: DiffRule) -> pd.DataFrame:
    """Separate runs: a call must survive Benjamini-Hochberg over all cases of the diff. Run-to-run errors
    are several times the threshold there, so with dozens of cases the threshold alone does not keep
    unchanged code from being called; under "nothing changed" this caps the chance of any false call per
    diff at alpha (test statistics of one run pair are positively dependent, where BH holds)."""
    df = df.copy()
    df["p_adjusted"] = benjamini_hochberg(df["p_value"])
    for i, r in df.iterrows():
        if r["verdict"] in ("SLOWER", "FASTER") and not r["p_adjusted"] < rule.alpha:
            why = _inside_floor(r["ratio"], r["floor_pct"] / 100) or (
                f"{100 * (r['ratio'] - 1):+.1f}% not significant over the {len(df)} cases of this diff "
                f"(p={r['p_value']:.2g}, Benjamini-Hochberg adjusted {r['p_adjusted']:.2g})"
            )
            df.loc[i, ["verdict", "why"]] = ["UNCERTAIN", why]
    return df


def sort_worst_first(df: pd.DataFrame) -> pd.DataFrame:
    order = {v: i for i, v in enumerate(VERDICTS)}
    return (
        df.assign(_o=df["verdict"].map(order), _r=-df["ratio"].fillna(0))
        .sort_values(["_o", "_r"], kind="stable")
        .drop(columns=["_o", "_r"])
        .reset_index(drop=True)
    )


_UNIT_US = {"ms": 1e3, "us": 1.0, "ns": 1e-3, "s": 1e6}


def samples_us(samples: pd.DataFrame, kind: str = "gpu") -> dict[str, np.ndarray]:
    """Per case, the stored samples of ``kind`` (today "gpu": per-call device times) in microseconds."""
    g = samples[samples["kind"] == kind]
    other = sorted(set(g["unit"].dropna()) - set(_UNIT_US))
    if other:  # cold_clock and sm_clock_max are clocks (MHz): read as a time, a faster clock would be SLOWER
        raise KprofError(
            f"the {kind!r} samples are in {', '.join(map(str, other))}, not a time; compare times "
            "(--samples gpu, host, cold, warm, graph, events)"
        )
    scale = g["unit"].map(_UNIT_US).fillna(1e3)  # no unit: the earliest stores' gpu samples, in ms
    values = g["value"].astype(float) * scale
    return {case: v.to_numpy() for case, v in values.groupby(g["case"])}


_gpu_samples_us = samples_us


def comparison_kind(run_a: Mapping[str, Any], run_b: Mapping[str, Any]) -> str:
    """``same run``, ``interleaved`` (arms of one ``--rev A --rev B`` invocation: one process, timing rounds
    alternated, so run-to-run variance hits both alike) or ``separate`` (anything else)."""
    if run_a["id"] == run_b["id"]:
        return "same run"
    if one_invocation(run_a, run_b):  # not a pid alone: a reused one would judge separate runs without their floor
        return "interleaved"
    return "separate"


def unmatched(metrics_a: pd.DataFrame, metrics_b: pd.DataFrame) -> dict[str, list[str]]:
    ka = set(map(tuple, metrics_a[list(MATCH_KEYS)].astype(str).to_numpy()))
    kb = set(map(tuple, metrics_b[list(MATCH_KEYS)].astype(str).to_numpy()))
    return {"only_in_a": sorted("/".join(k) for k in ka - kb), "only_in_b": sorted("/".join(k) for k in kb - ka)}


def kernel_changes(
    launches_a: pd.DataFrame,
    launches_b: pd.DataFrame,
    metrics_a: pd.DataFrame,
    metrics_b: pd.DataFrame,
    calls_a: int,
    calls_b: int,
    compare_names: bool = True,
) -> pd.DataFrame:
    """Per case: kernels added/removed, launches per call, and changed launch configuration or resources.

    ``compare_names=False`` (runs from different profilers, which spell kernel names differently) compares
    counts and the dominant kernel's configuration only."""
    cols = ["case", "kernels_added", "kernels_removed", "kernels_per_call_a", "kernels_per_call_b", "changes"]
    ka, kb = _by_case(launches_a), _by_case(launches_b)
    main_a, main_b = _mains(launches_a), _mains(launches_b)
    ma = metrics_a.set_index("case") if "case" in metrics_a else pd.DataFrame()
    mb = metrics_b.set_index("case") if "case" in metrics_b else pd.DataFrame()
    rows = []
    for case in sorted(set(ka) | set(kb)):
        ga, gb = ka.get(case), kb.get(case)
        if ga is None or gb is None:
            continue
        names_a, names_b = set(ga["kernel"]), set(gb["kernel"])
        added, removed = (sorted(names_b - names_a), sorted(names_a - names_b)) if compare_names else ([], [])
        per_a = float(launch_table.launches(ga).sum()) / calls_a
        per_b = float(launch_table.launches(gb).sum()) / calls_b
        changes = []
        if added or removed:
            changes.append(
                f"kernels {', '.join('-' + n[:40] for n in removed)}{' ' if removed and added else ''}"
                f"{', '.join('+' + n[:40] for n in added)}"
            )
        if abs(per_a - per_b) > 1e-9:
            changes.append(f"kernels/call {per_a:g}->{per_b:g}")
        changes += _config_changes(main_a[case], main_b[case], compare_names)
        if case in ma.index and case in mb.index:
            oa, ob = ma.at[case, "occupancy_theoretical_pct"], mb.at[case, "occupancy_theoretical_pct"]
            if pd.notna(oa) and pd.notna(ob) and abs(float(oa) - float(ob)) >= 0.5:
                changes.append(f"occupancy {float(oa):.0f}%->{float(ob):.0f}%")
            wa, wb = (m.at[case, "waves"] if "waves" in m else math.nan for m in (ma, mb))
            if pd.notna(wa) and pd.notna(wb) and abs(float(wa) - float(wb)) >= 0.005:
                changes.append(f"waves {float(wa):.2f}->{float(wb):.2f}")
        rows.append(
            {
                "case": case,
                "kernels_added": added,
                "kernels_removed": removed,
                "kernels_per_call_a": per_a,
                "kernels_per_call_b": per_b,
                "changes": "; ".join(changes),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def _by_case(launches: pd.DataFrame) -> dict[str, pd.DataFrame]:
    if launches is None or launches.empty:
        return {}
    k = launch_table.kernels(launches)
    k = k[k["case"].notna()]
    return {c: g for c, g in k.groupby("case")}


def _mains(launches: pd.DataFrame) -> dict[str, pd.Series]:
    """Each case's main launch: the first launch of the kernel with the most time in the case (one groupby
    for all cases: one per case was most of a diff's time with dozens of cases)."""
    if launches is None or launches.empty:
        return {}
    k = launch_table.kernels(launches)
    k = k[k["case"].notna()]
    total = (k["duration_ns"].astype(float) * launch_table.launches(k)).groupby([k["case"], k["kernel"]]).sum()
    top = set(total.groupby(level=0).idxmax())
    first = k.drop_duplicates(["case", "kernel"])
    first = first[[ck in top for ck in zip(first["case"], first["kernel"])]]
    return {c: r for c, (_, r) in zip(first["case"], first.iterrows())}


_CONFIG = (
    ("grid", ("grid_x", "grid_y", "grid_z")),
    ("block", ("block_x", "block_y", "block_z")),
    ("registers", ("registers_per_thread",)),
    ("shared memory", ("shared_mem_bytes",)),
)


def _config_changes(a: pd.Series, b: pd.Series, compare_names: bool = True) -> list[str]:
    out = []
    if compare_names and a["kernel"] != b["kernel"]:
        out.append(f"main kernel {str(a['kernel'])[:40]}->{str(b['kernel'])[:40]}")
    for label, names in _CONFIG:
        va = tuple(a[n] for n in names)
        vb = tuple(b[n] for n in names)
        if any(pd.isna(v) for v in va + vb) or va == vb:
            continue
        fmt = (lambda v: "x".join(str(int(x)) for x in v)) if len(names) > 1 else (lambda v: str(int(v[0])))
        out.append(f"{label} {fmt(va)}->{fmt(vb)}")
    return out


# --------------------------------------------------------------------------------------------- context
_ENV_FIELDS = (
    ("device", "name"),
    ("device", "driver_version"),
    ("versions", "torch"),
    ("versions", "triton"),
    ("versions", "python"),
)


def environment_warnings(run_a: Mapping[str, Any], run_b: Mapping[str, Any]) -> list[str]:
    """What differs between the two runs besides the code, and what makes either less trustworthy."""
    warn = []
    for section, key in _ENV_FIELDS:
        va = (run_a.get(section) or {}).get(key)
        vb = (run_b.get(section) or {}).get(key)
        if va != vb:
            warn.append(f"{section} {key} differs: {va} vs {vb}")
    warn += _env_var_warnings(run_a, run_b)
    for label, run in (("A", run_a), ("B", run_b)):
        if run.get("git_dirty"):
            warn.append(f"run {label} ({run['id']}) was made from a dirty checkout: its commit does not say what ran")
        if run.get("status") != "complete":
            warn.append(f"run {label} ({run['id']}) is {run.get('status')}")
        if run.get("mode") != "gpu":
            warn.append(f"run {label} ({run['id']}) is an {run.get('mode')} run: no GPU timings, correctness compared")
    if run_a.get("profiler") != run_b.get("profiler"):
        warn.append(
            f"profiler differs: {run_a.get('profiler')} vs {run_b.get('profiler')} (kernel names are spelled "
            "differently between tools, so kernel-name changes are not reported)"
        )
    sa = (run_a.get("config") or {}).get("settings") or {}
    sb = (run_b.get("config") or {}).get("settings") or {}
    before = {"placements": 1}  # runs made before the setting existed timed each case where its inputs lay
    for k in ("rep_ms", "warmup_ms", "placements"):
        va, vb = sa.get(k, before.get(k)), sb.get(k, before.get(k))
        if va != vb:
            warn.append(f"timing setting {k} differs: {va} vs {vb}")
    return warn


def _env_var_warnings(run_a: Mapping[str, Any], run_b: Mapping[str, Any]) -> list[str]:
    """The recorded environment variables (``kprof.runtime.recorded_env``) that differ between the runs; where one run
    was made before kprof recorded them, the variables the other set, which that run cannot be compared on."""
    ea, eb = ((run.get("versions") or {}).get("env") for run in (run_a, run_b))
    why = "it can change what a kernel compiles to, which library kernel runs or how calls are timed"
    if ea is None or eb is None:
        known, label, run = (eb, "A", run_a) if ea is None else (ea, "B", run_b)
        if not known:
            return []
        names = ", ".join(f"{k}={v}" for k, v in sorted(known.items()))
        return [f"the other run set {names}; run {label} ({run.get('id')}) recorded no environment variables (made "
                f"before kprof recorded them), so whether it ran with them is not known ({why})"]  # fmt: skip
    out = []
    for k in sorted(set(ea) | set(eb)):
        if ea.get(k) != eb.get(k):
            out.append(f"environment variable {k} differs: {ea.get(k, 'unset')} vs {eb.get(k, 'unset')} ({why})")
    return out


@dataclass
class DiffResult:
    a: dict
    b: dict
    rule: DiffRule
    cases: pd.DataFrame
    kernels: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    comparison: str = "separate"  # see comparison_kind
    correctness: pd.DataFrame = field(default_factory=pd.DataFrame)
    samples_kind: str = "gpu"
    untimed: list[str] = field(default_factory=list)  # correct in both, samples on one side only (see untimed())
    new_failures: list[str] = field(default_factory=list)  # wrong in B, never wrong in A (correctness_diff)

    @property
    def counts(self) -> dict[str, int]:
        vc = self.cases["verdict"].value_counts()
        return {v: int(vc.get(v, 0)) for v in VERDICTS}

    @property
    def correctness_counts(self) -> dict[str, int]:
        return correctness_diff.counts(self.correctness)

    @property
    def broken(self) -> list[str]:
        """Cases correct in A and not in B: correctness regressions."""
        if self.correctness.empty:
            return []
        return list(self.correctness.loc[self.correctness["verdict"] == "BROKEN", "case"])

    @property
    def unchecked_in_b(self) -> list[str]:
        """kprof's own versions correct in A that B skipped (a peer B skipped is no code under test), each with B's
        reason: ``--fail-on-regression`` cannot pass them."""
        return correctness_diff.unchecked_in_b(self.correctness)

    @property
    def not_compared(self) -> str:
        """How many cases one run measured and the other did not, and how many correct in both were timed in one
        only, with the first few ("" where none): no timing verdict above says anything of them."""

        def first(cases: list[str]) -> str:
            return f"e.g. {', '.join(cases[:3])}{', ...' if len(cases) > 3 else ''}"

        parts = []
        if self.only_in_a or self.only_in_b:
            parts.append(
                f"{len(self.only_in_a)} case(s) only in A, {len(self.only_in_b)} only in B "
                f"({first(self.only_in_a or self.only_in_b)})"
            )
        if self.untimed:
            parts.append(
                f"{len(self.untimed)} case(s) correct in both but timed in one only ({self.samples_kind} samples; "
                f"{first(self.untimed)})"
            )
        return "not compared: " + "; ".join(parts) if parts else ""

    @property
    def unmeasured(self) -> str:
        """Empty unless run B did not finish (cut at a budget, killed, a profiler that failed) and lacks cases A
        measured: then what to say, a reason ``--fail-on-regression`` fails (B cannot clear them). A finished B that
        measured fewer cases was asked to (``--shape``, ``--provider``)."""
        if not self.only_in_a or self.b.get("status") == "complete":
            return ""
        return (
            f"run B ({self.b['id']}) is {self.b.get('status')} and never measured {len(self.only_in_a)} case(s) of A "
            f"(first: {self.only_in_a[0]}); profile B again to a finish"
        )

    def table(self) -> pd.DataFrame:
        """Cases with their kernel changes, worst regressions first."""
        if self.kernels.empty:
            return self.cases.assign(changes="")
        return self.cases.merge(self.kernels[["case", "changes"]], on="case", how="left").fillna({"changes": ""})


def clock_warnings(metrics_a: pd.DataFrame, metrics_b: pd.DataFrame) -> list[str]:
    """What the SM clock of the two runs' cold calls leaves open (:func:`kprof.timing.settle_clock`): a run made
    before kprof read the clock kept calls the power cap slowed, which a later run sets aside, so a large call
    may read faster for that alone (3-18% on H100s, benchmarks/results/power-cap/); and the cases of either run
    whose cold time still pools slowed calls (``cold_clock_pct`` under 95)."""

    def clocked(m: pd.DataFrame) -> bool:
        return "cold_clock_pct" in m and bool(m["cold_clock_pct"].notna().any())

    def cold(m: pd.DataFrame) -> bool:
        return "timing_mode" in m and bool((m["timing_mode"] == "cold").any())

    warn = []
    if cold(metrics_a) and cold(metrics_b) and clocked(metrics_a) != clocked(metrics_b):
        old, new = ("A", "B") if clocked(metrics_b) else ("B", "A")
        warn.append(
            f"run {old} kept cold calls at any SM clock (made before kprof read the clock, or where nvidia-smi did not "
            f"give the GPU's highest); run {new} sets aside the calls the power or thermal limit slowed, so a large "
            f"call may read faster in run {new} for that alone"
        )
    for label, m in (("A", metrics_a), ("B", metrics_b)):
        if clocked(m):
            slowed = m.loc[m["cold_clock_pct"] < 100 * CLOCK_FULL_FRACTION, "case"].tolist()
            if slowed:
                warn.append(
                    f"run {label}: {len(slowed)} case(s) kept cold calls slowed by the power or thermal limit "
                    f"(too few at full clock), their times may be high: {', '.join(slowed[:5])}"
                    + (" ..." if len(slowed) > 5 else "")
                )
    return warn


def writeback_warnings(
    cases: pd.DataFrame, metrics_a: pd.DataFrame, metrics_b: pd.DataFrame, rule: DiffRule
) -> list[str]:
    """Cases SLOWER or FASTER by cold times whose change reverses, past the rule's threshold, with the write-back
    each cold call left dirty in L2 counted on both sides (``cold_with_writeback_us``, measured beside the cold time:
    :func:`kprof.timing.measure_left_behind`). A revision can trade one for the other (a store that streams its lines
    out writes them back inside the call), and which a model pays depends on what runs after the kernel; the verdict
    stands on the cold samples, and this says where counting the write-back would read the other way. Runs without
    it (from before it was measured, or not cold-ranked) give none."""
    if cases.empty or "cold_with_writeback_us" not in metrics_a or "cold_with_writeback_us" not in metrics_b:
        return []
    with_wb = {}
    for d in _correct_in_both(metrics_a, metrics_b):
        side_a, side_b = ({k[:-2]: v for k, v in d.items() if k.endswith(end)} for end in ("_a", "_b"))
        # past the threshold, or the counted times' own spread where larger (12 write-back repetitions a case)
        with_wb[d["case_b"]] = (with_writeback(side_b, side_a), counted_spread(rule.threshold, side_a, side_b))
    turned = []
    for r in cases.itertuples():
        ratio, past = with_wb.get(r.case, (math.nan, rule.threshold))
        if math.isnan(ratio):
            continue
        if (r.verdict == "SLOWER" and ratio < 1 - past) or (r.verdict == "FASTER" and ratio > 1 + past):
            turned.append(f"{r.case} ({r.verdict} at {r.ratio:.3f}, {ratio:.3f} with it)")
    if not turned:
        return []
    return [
        f"{len(turned)} case(s) read the other way with the write-back each cold call left in L2 counted (B/A of cold "
        f"plus write-back past ±{100 * rule.threshold:g}% and past those times' own spread; the verdict is on the "
        f"cold samples alone, `--samples writeback` compares the write-back itself): {', '.join(turned[:5])}"
        + (" ..." if len(turned) > 5 else "")
    ]


def floor_kind(kind: str, metrics_a: pd.DataFrame, metrics_b: pd.DataFrame) -> str:
    """The samples whose run-to-run floor applies to ``kind``: ``gpu`` where ``kind`` is the timing mode both runs
    declared (their ``gpu`` samples are that mode's), else ``kind`` itself."""
    declared = set()
    for m in (metrics_a, metrics_b):
        declared |= set(m["timing_mode"].dropna()) if "timing_mode" in m else {None}
    return "gpu" if kind == "gpu" or declared == {kind} else kind


def diff_runs(store: Any, ref_a: str, ref_b: str, rule: DiffRule = DiffRule(), kind: str = "gpu") -> DiffResult:
    """Timings (``kind`` samples) and correctness of every case of two stored runs.

    Interleaved arms of one invocation are compared on their samples alone; separate runs add the
    device's run-to-run floor (:mod:`kprof.variance`) to every comparison."""
    a, b = store.run(ref_a), store.run(ref_b)
    ma, mb = store.metrics(a["id"]), store.metrics(b["id"])
    comparison = comparison_kind(a, b)
    if comparison == "interleaved" and kind != "gpu":
        # only the gpu samples alternate round by round (kprof.runner.measure_cases); every other kind was taken
        # in round 0, one window per arm: in the committed --rev A/A arms (benchmarks/results/diff-noise/planted/)
        # host times read 11 of 39 unchanged cases SLOWER or FASTER judged as alternated, graph replays 1
        comparison = "one window per arm"
    floor_for = (
        floor_lookup(store, a, b, floor_kind(kind, ma, mb)) if comparison not in ("interleaved", "same run") else None
    )
    sa, sb = store.samples(a["id"]), store.samples(b["id"])
    devices_a, devices_b = store.case_devices(a["id"]), store.case_devices(b["id"])
    other_model = models_unlike(a, b, devices_a, devices_b)
    cases = diff_cases(ma, sa, mb, sb, rule, floor_for, kind, other_model)
    correctness = correctness_diff.diff_correctness(ma, mb)
    if cases.empty and correctness.empty:
        raise KprofError(
            f"runs {a['id']} ({a.get('family')}) and {b['id']} ({b.get('family')}) have no case in "
            "common (same family, provider, shape and dtype); nothing to compare"
        )
    calls_a = int((a.get("config") or {}).get("profile_repeats") or 5)
    calls_b = int((b.get("config") or {}).get("profile_repeats") or 5)
    kernels = kernel_changes(
        store.launches(a["id"]),
        store.launches(b["id"]),
        ma,
        mb,
        calls_a,
        calls_b,
        compare_names=a.get("profiler") == b.get("profiler"),
    )
    from kprof.fanout import device_mismatch  # cases measured on different GPUs of fan-out runs

    warnings = (
        environment_warnings(a, b)
        + device_mismatch(a, b, devices_a, devices_b)
        + clock_warnings(ma, mb)
        + (writeback_warnings(cases, ma, mb, rule) if kind == "gpu" else [])
        + not_compared_warnings(cases)
    )
    if cases.empty and (a.get("mode") == "gpu" and b.get("mode") == "gpu"):
        warnings.append(f"no case correct in both runs has {kind!r} samples on both sides: correctness only")
    return DiffResult(
        a=a,
        b=b,
        rule=rule,
        cases=cases,
        kernels=kernels,
        warnings=warnings,
        comparison=comparison,
        correctness=correctness,
        samples_kind=kind,
        untimed=untimed(ma, sa, mb, sb, kind),
        new_failures=correctness_diff.new_failures(ma, mb),
        **unmatched(ma, mb),
    )


def diff_traces(launches_a: pd.DataFrame, launches_b: pd.DataFrame, rule: DiffRule = DiffRule()) -> pd.DataFrame:
    """Two raw traces, per (case, kernel, launch configuration); see :mod:`kprof.trace_diff`."""
    from kprof.trace_diff import diff_traces as _diff

    return _diff(launches_a, launches_b, rule).table


# ------------------------------------------------------------------------------------------- rendering
_STAT_HEADERS = ["A µs", "B µs", "B/A", "95% interval", "p", "verdict"]


def _stat_cells(r: Any) -> list[str]:
    """The numbers and verdict of one compared row, as the markdown tables print them."""
    return [
        fmt_num(r.median_a, "{:.2f}"),
        fmt_num(r.median_b, "{:.2f}"),
        fmt_num(r.ratio, "{:.3f}"),
        f"{fmt_num(r.ci_lo, '{:.3f}')}-{fmt_num(r.ci_hi, '{:.3f}')}",
        fmt_num(r.p_value, "{:.2g}"),
        f"**{r.verdict}**",
    ]


_COMPARISON_NOTE = {
    "interleaved": "interleaved arms of one invocation (one process, timing rounds alternated): within-run "
    "variance only, the most sensitive comparison",
    "separate": "separate runs: each verdict adds the device's run-to-run floor to the within-run variance, "
    "and a call must survive Benjamini-Hochberg over the cases of the diff",
    "same run": "a run against itself",
    "one window per arm": "interleaved arms, but these samples were taken in one window per arm (only the gpu "
    "samples alternate round by round): each verdict adds the run-to-run floor of these samples, as for separate runs",
}


def to_markdown(res: DiffResult) -> str:
    a, b = res.a, res.b
    c = res.counts
    cc = res.correctness_counts
    lines = [
        f"# kprof diff: {a.get('family')} `{a['id']}` -> `{b['id']}`",
        "",
        f"- **A**: {_rev_label(a)} · {a.get('device_name') or '?'} · profiler {a.get('profiler')}",
        f"- **B**: {_rev_label(b)} · {b.get('device_name') or '?'} · profiler {b.get('profiler')}",
        f"- **comparison**: {_COMPARISON_NOTE.get(res.comparison, res.comparison)}",
        f"- **timing verdicts** ({res.samples_kind} samples): {c['SLOWER']} slower, {c['FASTER']} faster, "
        f"{c['SAME']} same, {c['UNCERTAIN']} uncertain ({len(res.cases)} cases timed in both)",
        "- **correctness**: "
        + ", ".join(f"{n} {v.lower()}" for v, n in cc.items() if n)
        + f" ({len(res.correctness)} cases in both)",
        f"- **rule**: {res.rule.describe()}",
    ]
    if res.broken:
        lines.append(f"- **correctness regressions** (correct in A, not in B): {', '.join(res.broken)}")
    if res.new_failures:
        lines.append(f"- **wrong in B, never wrong in A** (new in B or skipped in A): {', '.join(res.new_failures)}")
    if res.unchecked_in_b:
        lines.append(f"- **correct in A, not checked in B** (skipped there): {', '.join(res.unchecked_in_b)}")
    if res.not_compared:
        lines.append(f"- **not compared**: {res.not_compared.removeprefix('not compared: ')}")
    for w in res.warnings:
        lines.append(f"- **warning**: {w}")
    if not res.cases.empty:
        rows = [
            [r.case, *_stat_cells(r), r.variance, r.why if r.verdict == "UNCERTAIN" else "", r.changes]
            for r in res.table().itertuples()
        ]
        lines += [
            "",
            "## Timings",
            "",
            markdown_table(
                ["case", *_STAT_HEADERS, "variance accounted for", "why", "kernel changes"], rows, "lrrrlrllll"
            ),
        ]
    if not res.correctness.empty:
        lines += [
            "",
            "## Correctness",
            "",
            markdown_table(
                correctness_diff.MARKDOWN_HEADERS, correctness_diff.markdown_rows(res.correctness), "llrrrll"
            ),
        ]
    return "\n".join(lines) + "\n"


def traces_markdown(table: pd.DataFrame, a: str, b: str, rule: DiffRule) -> str:
    """Kept for callers holding only a table; :func:`kprof.trace_diff.to_markdown` renders the whole diff."""
    keys = ["case", "kernel"] if "kernel" in table and (table["case"] != table["kernel"]).any() else ["kernel"]
    rows = [[*(str(getattr(r, k))[:80] for k in keys), *_stat_cells(r)] for r in table.itertuples()]
    head = f"# kprof diff of traces\n\n- **A**: `{a}`\n- **B**: `{b}`\n- **rule**: {rule.describe()} (per launch)\n\n"
    return head + markdown_table([*keys, *_STAT_HEADERS], rows, "l" * len(keys) + "rrrlrl") + "\n"


def _rev_label(run: Mapping[str, Any]) -> str:
    cfg = run.get("config") or {}
    rev = cfg.get("revision")
    commit = short_commit(run.get("git_commit"))
    return f"rev `{rev}` ({commit})" if rev else f"git {commit}{' (dirty)' if run.get('git_dirty') else ''}"


def to_json(res: DiffResult) -> dict:
    return {
        "a": {
            "id": res.a["id"],
            "git_commit": res.a.get("git_commit"),
            "revision": (res.a.get("config") or {}).get("revision"),
        },
        "b": {
            "id": res.b["id"],
            "git_commit": res.b.get("git_commit"),
            "revision": (res.b.get("config") or {}).get("revision"),
        },
        "rule": asdict(res.rule),
        "comparison": res.comparison,
        "samples_kind": res.samples_kind,
        "counts": res.counts,
        "correctness_counts": res.correctness_counts,
        "correctness_regressions": res.broken,
        "new_failures": res.new_failures,
        "unchecked_in_b": res.unchecked_in_b,
        "warnings": res.warnings,
        "only_in_a": res.only_in_a,
        "only_in_b": res.only_in_b,
        "untimed": res.untimed,
        "cases": [{k: plain(v) for k, v in row.items()} for row in res.table().to_dict("records")],
        "correctness": [{k: plain(v) for k, v in row.items()} for row in res.correctness.to_dict("records")],
    }
