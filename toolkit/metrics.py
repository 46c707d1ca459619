"""From measurements to the metrics table (one row per case). Plain functions: data in, DataFrame out.

* :func:`summarize_samples` - median / p20 / p80 / noise of a sample list.
* :func:`case_row` - one case's correctness, timing, bandwidth and FLOP rate.
* :func:`launch_metrics` - per case, from the canonical launch table: kernels per call, launch latency,
  API time, the dominant kernel's registers, shared memory, block, and theoretical occupancy.
* :func:`metrics_table` - the two joined, in the column order of :data:`METRIC_COLUMNS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from kprof import launch_table
from kprof.fmt import config_label
from kprof.occupancy import DeviceLimits, theoretical_occupancy, waves_per_sm
from kprof.shapes import shape_str

if TYPE_CHECKING:  # the store, report and dashboard read metrics without importing torch
    from kprof.harness import CaseResult


def headline_source(mode: str, timer: str) -> str:
    """What timed a case's headline samples: for ``cold`` and ``warm`` the timer (``cupti``, or ``events``
    where CUPTI gave nothing), for ``graph`` and ``host`` the mode itself (neither goes through CUPTI); for a
    store made before modes were declared (mode ""), the timer it recorded, if any."""
    return timer if mode in ("cold", "warm", "") else mode


METRIC_COLUMNS: tuple[str, ...] = (
    "case",
    "family",
    "provider",
    "kind",
    "shape",
    "dtype",
    "status",
    "ok",
    "note",
    "max_rel_err",  # ||out - ref|| / ||ref|| against the float64 oracle, worst output
    "max_abs_err",
    "gpu_time_us",
    "p20_us",
    "p80_us",
    "noise",
    "n_samples",  # noise = IQR / median
    "graph_time_us",
    "graph_host_us",
    "host_time_us",
    "launch_latency_us",
    "api_time_us",
    "queue_us",
    "kernels_per_call",
    "gbps",
    "pct_peak_bw",
    "tflops",
    "occupancy_theoretical_pct",
    "occupancy_est_pct",
    "occupancy_achieved_pct",
    "occupancy_limiter",
    # the main kernel's blocks over those the GPU holds at once (theoretical blocks an SM x SMs), as ncu's "Waves
    # Per SM": a fraction past a whole number is a last wave that leaves SMs idle; a persistent kernel (one that
    # launches so many programs an SM and hands out work by ticket) over 1 launched more programs than fit at once
    "waves",
    # from the profiler pass: the main kernel's own duration as the profiler saw it, its spread, all
    # kernel time per call summed and as GPU time covered (kernels that overlap counted once), and
    # what the hardware counters measured (ncu) against the family's bytes model
    "prof_kernel_us",
    "prof_kernel_noise",
    "prof_call_us",
    "prof_busy_us",
    "dram_bytes_per_call",
    "dram_vs_model",
    "transfers_per_call",
    "syncs_per_call",
    "registers_per_thread",
    "shared_mem_bytes",
    "threads_per_block",
    "main_kernel",
    "peak_mem_mb",
    "bytes",
    "flops",
    # which Triton specialisation ran (kprof.specialization): the main kernel's constexprs and launch
    # options ("BLOCK_N=4096 num_warps=8 num_stages=3", "(autotuned)" for the autotuner's pick), every
    # Triton kernel of the call as JSON, a sweep's pinned meta-parameters as JSON, and the compiler's
    # local memory (spills) per thread with where the resources came from
    "config",
    "triton_kernels",
    "params",
    "local_bytes",
    "spill_bytes",
    "resources_from",
    # roofline: FLOP/byte from the family's models, memory- or compute-bound against this device's two
    # measured ceilings, and the achieved rate as % of the roof at that intensity
    "intensity",
    "bound",
    "pct_roof",
    # declared timing modes (kprof.timing): gpu_time_us above is the median of ``timing_mode``'s samples;
    # ``timer`` says whether cold/warm came from CUPTI records or the CUDA-event fallback; per mode the
    # median busy time (union of kernel intervals, shown), span (first start -> last end) and kernel sum
    "timing_mode",
    "timer",
    "cold_us",
    "cold_span_us",
    "cold_sum_us",
    "warm_us",
    "warm_span_us",
    "warm_sum_us",
    "events_us",
    # (largest - smallest) / median of the cold medians at each place in memory the case's tensors were
    # timed at (kprof.harness.PLACEMENT_MAX_BYTES); NaN for a case timed at one
    "cold_placement_spread",
    # each kernel of a cold call alone, in launch order, as JSON [[name, median us], ...]: what a call's time
    # is made of, and (kprof.grid) how far one kernel shared by two cases moved between them
    "cold_kernels",
    # the median SM clock (MHz) the cold calls behind cold_us started at, and that as % of the GPU's highest
    # SM clock: under 95% the power or thermal limit slowed them (kprof.timing.settle_clock); NaN where unknown
    "cold_clock_mhz",
    "cold_clock_pct",
    # the median write-back (us) a cold call left dirty in L2, which cold_us does not include (the next kernel
    # pays it; kprof.timing.measure_left_behind), and cold_us with it: GB/s from cold_us counts bytes a call
    # wrote as moved although up to ~30 MB of them were still in L2 when it ended. NaN where not measured
    "cold_writeback_us",
    "cold_with_writeback_us",
    # the spread of cold_with_writeback_us as ``noise`` is of gpu_time_us (IQR/median): the two sessions' IQRs added
    # in quadrature over the sum. 12 write-back repetitions a case spread by 1.5-3.6 us each on an H200, so a verdict
    # or target that counting the write-back would turn is judged against this, not against the cold spread alone
    "cold_with_writeback_noise",
)


TEXT_METRICS = (
    "case",
    "family",
    "provider",
    "kind",
    "shape",
    "dtype",
    "status",
    "note",
    "main_kernel",
    "occupancy_limiter",
    "config",
    "triton_kernels",
    "params",
    "resources_from",
    "bound",
    "timing_mode",
    "timer",
    "cold_kernels",
)


def summarize_samples(samples_ms: Sequence[float]) -> dict[str, float]:
    """Median, 20th and 80th percentiles (us), and noise = interquartile range / median."""
    if len(samples_ms) == 0:
        return {"gpu_time_us": math.nan, "p20_us": math.nan, "p80_us": math.nan, "noise": math.nan, "n_samples": 0}
    us = np.asarray(samples_ms, dtype=float) * 1e3
    p20, p25, med, p75, p80 = np.percentile(us, [20, 25, 50, 75, 80])
    return {
        "gpu_time_us": float(med),
        "p20_us": float(p20),
        "p80_us": float(p80),
        "noise": float((p75 - p25) / med) if med > 0 else math.nan,
        "n_samples": int(us.size),
    }


def achieved(bytes_moved: int, flops: int, time_us: float, ceiling_gbps: float | None) -> dict[str, float]:
    """GB/s, % of the measured copy ceiling, and TFLOP/s for a time in microseconds."""
    if not (time_us > 0) or math.isnan(time_us):
        return {"gbps": math.nan, "pct_peak_bw": math.nan, "tflops": math.nan}
    seconds = time_us * 1e-6
    gbps = bytes_moved / seconds / 1e9
    return {
        "gbps": gbps,
        "pct_peak_bw": 100.0 * gbps / ceiling_gbps if ceiling_gbps else math.nan,
        "tflops": flops / seconds / 1e12,
    }


def roofline_point(
    flops: float, bytes_moved: float, tflops: float, ceiling_gbps: float | None, peak_tflops: float | None
) -> dict[str, object]:
    """Arithmetic intensity, the bound it implies on this device, and the achieved rate as % of the roof.

    The ridge point is ``peak_tflops / ceiling_gbps`` FLOP/byte: below it the memory roof
    (``intensity x bandwidth``) is the lower of the two, above it the compute roof is."""
    intensity = flops / bytes_moved if bytes_moved and flops else math.nan
    out: dict[str, object] = {"intensity": intensity, "bound": None, "pct_roof": math.nan}
    if math.isnan(intensity) or not ceiling_gbps:
        return out
    memory_roof = intensity * ceiling_gbps / 1e3  # TFLOP/s
    if peak_tflops:
        out["bound"] = "memory" if memory_roof < peak_tflops else "compute"
        roof = min(memory_roof, peak_tflops)
    else:
        out["bound"] = "memory"
        roof = memory_roof
    if tflops and not math.isnan(tflops):
        out["pct_roof"] = 100.0 * tflops / roof
    return out


def with_roofline(
    metrics: pd.DataFrame, ceiling_gbps: float | None, peak_tflops: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """``metrics`` with intensity / bound / % of roof filled where a run stored none (runs made before
    the roofline columns existed), from the run's ceilings: the copy bandwidth, and the matrix-product
    rate per dtype when it was measured (else the memory roof alone)."""
    out = metrics.copy()
    for c in ("intensity", "bound", "pct_roof"):
        if c not in out:
            out[c] = pd.NA if c == "bound" else math.nan
    missing = out["bound"].isna()
    for i in out.index[missing]:
        r = out.loc[i]
        point = roofline_point(
            float(r["flops"] or 0),
            float(r["bytes"] or 0),
            r.get("tflops"),
            ceiling_gbps,
            (peak_tflops or {}).get(r["dtype"]),
        )
        for k, v in point.items():
            out.at[i, k] = v
    return out


def specialization_fields(
    specs: Sequence[Mapping], limits: DeviceLimits | None = None, params: Mapping[str, int] | None = None
) -> dict[str, object]:
    """Metric columns from the Triton launches a call made (``Specialization.to_dict()`` rows, in launch
    order): the config label, resources and theoretical occupancy of the main kernel (the last launched;
    the profiler pass replaces it by the one with the most GPU time)."""
    import json

    out: dict[str, object] = {"params": json.dumps(dict(params)) if params else None}
    if not specs:
        return out
    last = {s["kernel"]: s for s in specs}  # a kernel launched twice in a call: one specialisation
    kernels = list(last.values())
    # without kernel durations, the last kernel launched: versions that launch several run their prologue
    # (row statistics, a normalisation) before the main work; the profiler pass, which has durations,
    # replaces it by the kernel with the most GPU time
    main = specs[-1]
    out.update(
        {
            "config": _label(main),
            "triton_kernels": json.dumps([{**s, "label": _label(s)} for s in kernels], default=str),
            "main_kernel": main["kernel"],
            "local_bytes": _num(main.get("local_bytes")),
            "spill_bytes": _num(main.get("spill_bytes")),
            "resources_from": main.get("resources_from"),
        }
    )
    regs, smem, warps = main.get("registers"), main.get("shared_mem_bytes"), main.get("num_warps")
    if regs is not None:
        out["registers_per_thread"] = float(regs)
    if smem is not None:
        out["shared_mem_bytes"] = float(smem)
    if warps:
        out["threads_per_block"] = float(warps) * 32
    if limits is not None and regs is not None and smem is not None and warps:
        occ = theoretical_occupancy(int(warps) * 32, int(regs), int(smem), limits)
        out["occupancy_theoretical_pct"], out["occupancy_limiter"] = occ.occupancy_pct, occ.limiter
    return out


def _label(s: Mapping) -> str:
    config = {
        **dict(s.get("constexprs") or {}),
        **{k: s[k] for k in ("num_warps", "num_stages") if s.get(k) is not None},
    }
    return config_label(config, bool(s.get("autotuned")))


def _num(value: object) -> float:
    return float(value) if value is not None else math.nan


def mode_fields(result: CaseResult) -> dict:
    """Median of every mode's samples, the declared mode and where cold/warm times came from."""
    from kprof.timing import DEFAULT_MODE, WRITEBACK, cold_kernels

    ms = result.mode_samples_us or {}
    out: dict = {
        f"{k}_us": float(np.median(ms[k])) if ms.get(k) else math.nan
        for k in ("cold", "cold_span", "cold_sum", "warm", "warm_span", "warm_sum", "events")
    }
    at = ms.get("cold_placements") or ()
    out["cold_placement_spread"] = (max(at) - min(at)) / float(np.median(at)) if len(at) > 1 else math.nan
    out["timing_mode"] = result.timing_mode or DEFAULT_MODE
    out["timer"] = result.timer or None
    clocks, top = ms.get("cold_clock") or (), ms.get("sm_clock_max") or ()
    out["cold_clock_mhz"] = float(np.median(clocks)) if len(clocks) else math.nan
    out["cold_clock_pct"] = 100.0 * out["cold_clock_mhz"] / top[0] if len(clocks) and len(top) else math.nan
    left = ms.get(WRITEBACK) or ()
    out["cold_writeback_us"] = float(np.median(left)) if len(left) else math.nan
    out["cold_with_writeback_us"] = out["cold_us"] + out["cold_writeback_us"]
    out["cold_with_writeback_noise"] = sum_noise(ms.get("cold") or (), left)
    kernels = cold_kernels(ms)
    out["cold_kernels"] = json.dumps([[name, round(us, 4)] for name, us in kernels]) if kernels else None
    return out


def _iqr(values: Sequence[float]) -> float:
    p25, p75 = np.percentile(np.asarray(values, dtype=float), [25, 75])
    return float(p75 - p25)


def sum_noise(a: Sequence[float], b: Sequence[float]) -> float:
    """IQR/median of one sample of ``a`` plus one of ``b``, taken in separate sessions (so independent): the IQRs
    added in quadrature over the sum of the medians, the ``noise`` convention for a sum of two timings. NaN unless
    both have samples."""
    if not len(a) or not len(b):
        return math.nan
    total = float(np.median(a)) + float(np.median(b))
    return math.hypot(_iqr(a), _iqr(b)) / total if total > 0 else math.nan


def case_row(
    result: CaseResult,
    kind: str,
    ceiling_gbps: float | None,
    *,
    peak_tflops: float | None = None,
    limits: DeviceLimits | None = None,
) -> dict:
    c = result.case
    corr = result.correctness
    row: dict = {
        "case": c.id,
        "family": c.family,
        "provider": c.provider,
        "kind": kind,
        "shape": shape_str(c.shape),
        "dtype": c.dtype,
        "status": result.status,
        "ok": result.status == "ok",
        "note": result.note,
        "max_rel_err": corr.rel_err if corr else math.nan,
        "max_abs_err": corr.max_abs_err if corr else math.nan,
        "bytes": result.bytes,
        "flops": result.flops,
    }
    if result.timed:
        row.update(summarize_samples(result.gpu_samples_ms))
        row["graph_time_us"] = result.graph_time_ms * 1e3 if result.graph_time_ms is not None else math.nan
        row["graph_host_us"] = result.graph_host_us if result.graph_host_us is not None else math.nan
        row["host_time_us"] = float(np.median(result.host_samples_us)) if result.host_samples_us else math.nan
        row["peak_mem_mb"] = result.peak_mem_bytes / 2**20 if result.peak_mem_bytes is not None else math.nan
        row.update(mode_fields(result))
        row.update(achieved(result.bytes, result.flops, row["gpu_time_us"], ceiling_gbps))
        row.update(roofline_point(result.flops, result.bytes, row["tflops"], ceiling_gbps, peak_tflops))
    else:
        row["intensity"] = result.flops / result.bytes if result.bytes and result.flops else math.nan
    row.update(specialization_fields(result.extra.get("specializations", ()), limits, result.extra.get("params")))
    return row


def launch_metrics(
    launches: pd.DataFrame,
    calls_per_case: int,
    limits: DeviceLimits,
    bytes_model: Mapping[str, float] | None = None,
    sm_count: int | None = None,
) -> pd.DataFrame:
    """Per case (rows of the launch table with a ``case``): launch overhead, the dominant kernel, counters.

    The dominant kernel is the one with the largest total GPU time in the case; its registers, shared
    memory and block size give the theoretical occupancy (kprof's calculator; the profiler's own figure
    where the calculator lacks inputs, e.g. AMD rows), and with ``sm_count`` (the GPU's SMs) its ``waves``: its
    grid's blocks over the blocks that occupancy lets the GPU hold at once (NaN where either is unknown).
    ``launch_latency_us`` is the median time from the host launch call's start to the kernel's start, over
    launches that found their stream idle (a launch issued while earlier kernels still run measures queueing,
    not launch cost); ``api_time_us``
    is the median launch call duration and ``queue_us`` the median API end -> kernel start.
    ``prof_kernel_us`` / ``prof_kernel_noise`` are the median and IQR/median of the dominant kernel's
    durations as the profiler measured them; ``prof_call_us`` all kernel time per call, and
    ``prof_busy_us`` the GPU time per call during which at least one of them ran (:func:`busy_ns`: less
    than ``prof_call_us`` where kernels overlap, e.g. a dependent launched with PDL).
    ``dram_bytes_per_call`` (hardware counters, read + written) is compared with ``bytes_model`` (the
    family's minimum bytes per call) as ``dram_vs_model``. ``transfers_per_call`` counts host<->device
    copies; ``syncs_per_call`` synchronisation calls, not counting the one the replay makes after the
    measured calls of each case.
    """
    cols = [
        "case",
        "kernels_per_call",
        "launch_latency_us",
        "api_time_us",
        "queue_us",
        "main_kernel",
        "registers_per_thread",
        "shared_mem_bytes",
        "threads_per_block",
        "occupancy_theoretical_pct",
        "occupancy_est_pct",
        "occupancy_achieved_pct",
        "occupancy_limiter",
        "waves",
        "prof_kernel_us",
        "prof_kernel_noise",
        "prof_call_us",
        "prof_busy_us",
        "dram_bytes_per_call",
        "dram_vs_model",
        "transfers_per_call",
        "syncs_per_call",
        "config",
    ]
    df = launches[launches["case"].notna()]
    if df.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for case, everything in df.groupby("case", sort=False):
        g = launch_table.kernels(everything)
        if g.empty:
            continue
        n = launch_table.launches(g)
        totals = (g["duration_ns"].astype("float64") * n).groupby(g["kernel"]).sum().sort_values(ascending=False)
        main = g[g["kernel"] == totals.index[0]]
        first = main.iloc[0]
        threads = _product(first, ("block_x", "block_y", "block_z"))
        regs, smem = first["registers_per_thread"], first["shared_mem_bytes"]
        occ_pct, limiter, waves = math.nan, None, math.nan
        if threads is not None and not pd.isna(regs) and not pd.isna(smem) and not _is_amd(first):
            occ = theoretical_occupancy(threads, int(regs), int(smem), limits)
            occ_pct, limiter = occ.occupancy_pct, occ.limiter
            blocks = _product(first, ("grid_x", "grid_y", "grid_z"))
            waves = waves_per_sm(blocks, occ, sm_count or 0) if blocks else math.nan
        prof_theo = main["occupancy_theoretical_pct"].dropna()
        if math.isnan(occ_pct) and len(prof_theo):
            occ_pct = float(prof_theo.median())
        prof_lim = main["occupancy_limiter"].dropna()
        if len(prof_lim):
            limiter = str(prof_lim.mode().iloc[0])
        est = main["occupancy_est_pct"].dropna()
        ach = main["occupancy_achieved_pct"].dropna()
        traced = main[launch_table.launches(main) == 1]["duration_ns"].dropna().astype("float64")
        q25, q50, q75 = (
            np.percentile(traced, [25, 50, 75])
            if len(traced)
            else (math.nan, float(main["duration_ns"].astype("float64").mean()), math.nan)
        )
        dram = g["dram_read_bytes"].astype("Float64") + g["dram_write_bytes"].astype("Float64")
        dram_per_call = float(dram.sum()) / calls_per_case if dram.notna().any() else math.nan
        model = (bytes_model or {}).get(case)
        other = everything[everything["kind"].isin(["memcpy", "memset", "sync"])]
        copies = other[(other["kind"] == "memcpy") & other["copy_kind"].isin(["HtoD", "DtoH"])]
        syncs = other[other["kind"] == "sync"]
        out.append(
            {
                "case": case,
                "kernels_per_call": float(n.sum()) / calls_per_case,
                "launch_latency_us": _median_us(idle_launch_latency(g)),
                "api_time_us": _median_us(g["api_end_ns"] - g["api_start_ns"]),
                "queue_us": _median_us(g["queue_ns"]),
                "main_kernel": first["kernel"],
                "registers_per_thread": regs,
                "shared_mem_bytes": smem,
                "threads_per_block": threads if threads is not None else pd.NA,
                "occupancy_theoretical_pct": occ_pct,
                "occupancy_est_pct": float(est.median()) if len(est) else math.nan,
                "occupancy_achieved_pct": float(ach.median()) if len(ach) else math.nan,
                "occupancy_limiter": limiter,
                "waves": waves,
                "prof_kernel_us": q50 / 1e3,
                "prof_kernel_noise": (q75 - q25) / q50 if len(traced) and q50 > 0 else math.nan,
                "prof_call_us": float(totals.sum()) / calls_per_case / 1e3,
                "prof_busy_us": busy_ns(g) / calls_per_case / 1e3,
                "dram_bytes_per_call": dram_per_call,
                "dram_vs_model": dram_per_call / model if model and not math.isnan(dram_per_call) else math.nan,
                "transfers_per_call": float(launch_table.launches(copies).sum()) / calls_per_case,
                "syncs_per_call": (max(len(syncs) - 1, 0) / calls_per_case) if len(syncs) else math.nan,
                "config": first["config"] if "config" in first.index and not pd.isna(first["config"]) else pd.NA,
            }
        )
    return pd.DataFrame(out, columns=cols)


def busy_ns(kernels: pd.DataFrame) -> float:
    """How long at least one of these kernels ran: the length of the union of their [start_ns, end_ns)
    intervals, so kernels that overlap (a dependent started early by programmatic dependent launch,
    several streams) count once, and idle gaps between them not at all. NaN when any row has no times
    (a summary row of ncu or nsys stats)."""
    t = kernels[["start_ns", "end_ns"]]
    if t.empty or t.isna().any().any():
        return math.nan
    t = t.sort_values("start_ns")
    starts = t["start_ns"].to_numpy("int64")
    ends = np.maximum.accumulate(t["end_ns"].to_numpy("int64"))  # the covered stretch so far
    first = np.flatnonzero(np.r_[True, starts[1:] > ends[:-1]])  # kernels that start after a gap
    last = np.r_[first[1:] - 1, len(starts) - 1]
    return float((ends[last] - starts[first]).sum())


def attribute_launches(launches: pd.DataFrame, specs_by_case: Mapping[str, Sequence[Mapping]]) -> pd.DataFrame:
    """The launch table with ``config`` / ``num_warps`` / ``num_stages`` filled for Triton kernels, from
    the specialisations recorded for each case (matched by case and kernel name)."""
    rows = [
        {
            "case": case,
            "kernel": s["kernel"],
            "config": _label(s),
            "num_warps": s.get("num_warps"),
            "num_stages": s.get("num_stages"),
        }
        for case, specs in specs_by_case.items()
        for s in specs
    ]
    if launches.empty or not rows:
        return launches
    known = pd.DataFrame(rows).drop_duplicates(["case", "kernel"], keep="last")
    out = launches.drop(columns=[c for c in ("config", "num_warps", "num_stages") if c in launches.columns])
    out = out.merge(known, on=["case", "kernel"], how="left")
    return launch_table.validate(out)


def _is_amd(row: pd.Series) -> bool:
    return row["source"] == "rocprof"


def idle_launch_latency(g: pd.DataFrame) -> pd.Series:
    """Launch latencies (ns) of the kernels whose stream had finished all earlier work by the launch call."""
    g = g.dropna(subset=["api_start_ns"]).sort_values("start_ns")
    prev_end = g.groupby(["device", "stream"], dropna=False)["end_ns"].shift(1)
    idle = prev_end.isna() | (prev_end <= g["api_start_ns"])
    return g.loc[idle, "launch_latency_ns"]


def _product(row: pd.Series, names: Sequence[str]) -> int | None:
    vals = [row[n] for n in names]
    if any(pd.isna(v) for v in vals):
        return None
    total = 1
    for v in vals:
        total *= int(v)
    return total


def _median_us(ns: pd.Series) -> float:
    ns = ns.dropna()
    return float(ns.astype("float64").median()) / 1e3 if len(ns) else math.nan


def metrics_table(rows: Sequence[dict], launch: pd.DataFrame | None = None) -> pd.DataFrame:
    """Case rows joined with their launch metrics, every column of METRIC_COLUMNS present."""
    df = pd.DataFrame(list(rows))
    if launch is not None and not launch.empty and not df.empty:
        df = df.drop(columns=[c for c in launch.columns if c != "case" and c in df.columns])
        df = df.merge(launch, on="case", how="left")
    for c in METRIC_COLUMNS:
        if c not in df.columns:
            df[c] = pd.NA if c in TEXT_METRICS else math.nan
    return df[list(METRIC_COLUMNS)]
