"""The canonical launch table: one row per GPU activity, whatever profiler recorded it.

Every parser (torch.profiler/Kineto, nsys, ncu, rocprof, Proton) returns this table, and :func:`validate`
is called at each parser's boundary: columns named and typed as below, times in integer nanoseconds,
sizes in integers, missing values as ``<NA>`` (never 0 or -1 standing in for "unknown"). Analyses and
the store rely on nothing else.

Rows are of three kinds (column ``kind``; ``<NA>`` reads as ``kernel``):

* ``kernel`` - a kernel launch; ``count`` is 1 for a traced launch, more when the row summarises several
  launches (``nsys stats cuda_gpu_kern_sum``, Proton's hatchet tree, rocprof ``*stats.csv``): then
  ``duration_ns`` is the mean and ``start_ns``/``end_ns`` are ``<NA>``. ncu serialises kernels and
  reports no timestamps, so its rows have durations only.
* ``memcpy`` / ``memset`` - device memory operations (``copy_kind`` HtoD, DtoH, DtoD, ...; ``bytes``).
* ``sync`` - a host synchronisation call (``api_name``); its start/end are host times.

Rows that summarise several launches (``count`` > 1, or any row of a summary-only input such as
``nsys stats cuda_gpu_kern_sum`` or rocprof ``*stats.csv``) have no timestamps; such a table carries
``attrs["summary"] = True``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from kprof.errors import LaunchTableError


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # pandas dtype: "string", "Int64" (nullable integer), "Float64"
    unit: str
    doc: str
    required: bool = False  # a parser must fill it (non-null) for every row


COLUMNS: tuple[Column, ...] = (
    Column("kernel", "string", "", "kernel name as the profiler reports it (or the copy/sync name)", required=True),
    Column(
        "kernel_norm",
        "string",
        "",
        "the name as one key across profilers (demangled, clone/.kd suffixes, "
        "return type and parameter lists dropped: kprof.names.normalize); diff and matching use it",
    ),
    Column("kind", "string", "", "kernel | memcpy | memset | sync (<NA> = kernel)"),
    Column("count", "Int64", "", "launches this row stands for: 1 when traced, more in a summary row"),
    Column("start_ns", "Int64", "ns", "kernel start on the GPU (profiler clock)"),
    Column("end_ns", "Int64", "ns", "kernel end on the GPU"),
    Column(
        "duration_ns", "Int64", "ns", "end_ns - start_ns (the mean over count launches in a summary row)", required=True
    ),
    Column("device", "Int64", "", "GPU index"),
    Column("stream", "Int64", "", "stream (or HIP queue) the kernel ran on"),
    Column("correlation_id", "Int64", "", "links the kernel to the host API call that launched it"),
    Column("grid_x", "Int64", "blocks", "grid size, x"),
    Column("grid_y", "Int64", "blocks", "grid size, y"),
    Column("grid_z", "Int64", "blocks", "grid size, z"),
    Column("block_x", "Int64", "threads", "block size, x"),
    Column("block_y", "Int64", "threads", "block size, y"),
    Column("block_z", "Int64", "threads", "block size, z"),
    Column("registers_per_thread", "Int64", "registers", "registers per thread"),
    Column("shared_mem_bytes", "Int64", "bytes", "static + dynamic shared memory per block"),
    Column("occupancy_est_pct", "Float64", "%", "Kineto's estimate of achieved occupancy"),
    Column("occupancy_achieved_pct", "Float64", "%", "measured achieved occupancy (ncu sm__warps_active)"),
    Column(
        "occupancy_theoretical_pct",
        "Float64",
        "%",
        "the profiler's theoretical occupancy (ncu), or kprof's calculator for AMD from VGPRs/SGPRs/LDS",
    ),
    Column(
        "occupancy_limiter",
        "string",
        "",
        "resource that caps occupancy: warps, registers, shared_memory, "
        "blocks, barriers (AMD: vgprs, sgprs, lds, waves)",
    ),
    Column("sgprs", "Int64", "registers", "AMD scalar registers per wave"),
    Column("accum_vgprs", "Int64", "registers", "AMD accumulation VGPRs (AGPRs) per lane"),
    Column("scratch_bytes", "Int64", "bytes", "per-thread local/private (scratch) memory"),
    Column("dram_read_bytes", "Int64", "bytes", "DRAM bytes read, measured by hardware counters (ncu)"),
    Column("dram_write_bytes", "Int64", "bytes", "DRAM bytes written, measured (ncu)"),
    Column("dram_pct_peak", "Float64", "%", "DRAM throughput as % of peak sustained (ncu)"),
    Column("copy_kind", "string", "", "memcpy direction: HtoD, DtoH, DtoD, HtoH, PtoP"),
    Column("bytes", "Int64", "bytes", "bytes copied or set (memcpy/memset rows)"),
    Column("api_name", "string", "", "host call that launched it: cuLaunchKernelEx (Triton), cudaLaunchKernel..."),
    Column("api_start_ns", "Int64", "ns", "host launch call start"),
    Column("api_end_ns", "Int64", "ns", "host launch call end"),
    Column("launch_latency_ns", "Int64", "ns", "kernel start - launch call start"),
    Column(
        "queue_ns",
        "Int64",
        "ns",
        "kernel start - launch call end, 0 when the kernel started before the call "
        "returned (nsys's cuda_kern_exec_trace queue time)",
    ),
    Column("pid", "Int64", "", "host process of the launch call"),
    Column("tid", "Int64", "", "host thread of the launch call"),
    Column("case", "string", "", "kprof case id the launch belongs to (from its labelled range)"),
    Column(
        "scope",
        "string",
        "",
        "the profiler's scope path above the kernel (Proton scopes, outermost first, "
        "joined by ' / '): one kernel under different scopes stays apart",
    ),
    Column(
        "counters",
        "string",
        "",
        "hardware counters of the launch as JSON ({name: value}) where the profiler "
        "collected some outside the named columns (rocprofv3 --pmc)",
    ),
    Column(
        "config",
        "string",
        "",
        "Triton specialisation that ran: constexprs, num_warps, num_stages, "
        "'(autotuned)' for the autotuner's pick (kprof's launch recording, matched by case and kernel name)",
    ),
    Column("num_warps", "Int64", "warps", "Triton num_warps of the specialisation"),
    Column("num_stages", "Int64", "", "Triton num_stages of the specialisation"),
    Column("source", "string", "", "profiler that recorded it: torch, nsys, ncu, rocprof, proton", required=True),
)

KINDS = ("kernel", "memcpy", "memset", "sync")
# One GPU activity longer than a day is not a measurement but a misread number (a trace's unit or digits).
MAX_DURATION_NS = 86_400 * 10**9
COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
_BY_NAME = {c.name: c for c in COLUMNS}


def empty() -> pd.DataFrame:
    """A launch table with no rows and every column typed."""
    return pd.DataFrame({c.name: pd.Series([], dtype=c.dtype) for c in COLUMNS})


def validate(df: pd.DataFrame, *, source: str | None = None) -> pd.DataFrame:
    """Return ``df`` as a canonical launch table, or raise LaunchTableError saying what is off.

    Missing optional columns are added as all-``<NA>``; extra columns are dropped; each column is cast
    to its dtype (a value that cannot be cast is an error, not a silent NaN); required columns must be
    present and non-null; durations must be non-negative and agree with start/end.
    """
    who = f"{source} parser" if source else "launch table"
    missing = [c.name for c in COLUMNS if c.required and c.name not in df.columns]
    if missing:
        raise LaunchTableError(f"{who}: required columns missing: {missing}")
    out = pd.DataFrame(index=range(len(df)))
    for c in COLUMNS:
        if c.name in df.columns:
            try:
                col = df[c.name].reset_index(drop=True)
                if c.dtype == "Int64" and col.dtype.kind == "f":
                    col = col.round()
                out[c.name] = col.astype(c.dtype)
            except (TypeError, ValueError) as exc:
                raise LaunchTableError(f"{who}: column {c.name!r} cannot be read as {c.dtype}: {exc}") from None
        else:
            out[c.name] = pd.Series([pd.NA] * len(df), dtype=c.dtype)
    missing_norm = out["kernel_norm"].isna() & out["kernel"].notna()
    if missing_norm.any():
        from kprof.names import normalize

        out.loc[missing_norm, "kernel_norm"] = out.loc[missing_norm, "kernel"].map(normalize)
    # queue time is waiting after the launch call returned; a kernel that started before it returned
    # did not queue (nsys leaves it empty then). Parsers compute start - api_end; it is bounded here, once.
    out["queue_ns"] = out["queue_ns"].clip(lower=0)
    for c in COLUMNS:
        if c.required and out[c.name].isna().any():
            bad = int(out[c.name].isna().sum())
            raise LaunchTableError(f"{who}: required column {c.name!r} has {bad} empty values")
    if len(out):
        if (out["duration_ns"] < 0).any():
            raise LaunchTableError(f"{who}: negative kernel durations")
        if (out["duration_ns"] > MAX_DURATION_NS).any():
            worst = int(out["duration_ns"].max())
            raise LaunchTableError(
                f"{who}: a duration of {worst} ns ({worst / 3.6e12:.1f} h) is not a kernel time "
                "(a number or unit was misread; check the file)"
            )
        _check_latency(out, who)
        timed = out["start_ns"].notna() & out["end_ns"].notna()
        if (out.loc[timed, "end_ns"] - out.loc[timed, "start_ns"] != out.loc[timed, "duration_ns"]).any():
            raise LaunchTableError(f"{who}: duration_ns must equal end_ns - start_ns")
        if (out["count"].fillna(1) < 1).any():
            raise LaunchTableError(f"{who}: count must be at least 1")
        bad_kind = set(out["kind"].dropna().unique()) - set(KINDS)
        if bad_kind:
            raise LaunchTableError(f"{who}: unknown kind(s) {sorted(bad_kind)}; one of {KINDS}")
    return out


def _check_latency(out: pd.DataFrame, who: str) -> None:
    """A launch latency (kernel start - launch call start) that is negative or longer than the whole trace
    comes from a wrong join (another process's call, another file's ids), never from a measurement."""
    lat = out["launch_latency_ns"].dropna()
    if lat.empty:
        return
    times = pd.concat([out[c].dropna() for c in ("start_ns", "end_ns", "api_start_ns", "api_end_ns")])
    span = int(times.max() - times.min()) if len(times) else 0
    # clocks of host and GPU are aligned to within a few microseconds by every profiler
    bad = lat[(lat < -10_000) | (lat > span)]
    if len(bad):
        raise LaunchTableError(
            f"{who}: {len(bad)} launch latencies are negative or longer than the trace ({int(bad.iloc[0])} ns, trace "
            f"span {span} ns): kernels were joined to launch calls that did not launch them (mismatched files)"
        )


def kernels(df: pd.DataFrame) -> pd.DataFrame:
    """Only the kernel rows of a launch table."""
    return df[df["kind"].isna() | (df["kind"] == "kernel")]


def launches(df: pd.DataFrame) -> pd.Series:
    """How many launches each row stands for (``count``, 1 where missing)."""
    return df["count"].fillna(1).astype("int64")


def describe() -> pd.DataFrame:
    """The schema itself as a table (for docs and ``kprof parse --schema``)."""
    return pd.DataFrame(
        [(c.name, c.dtype, c.unit, c.required, c.doc) for c in COLUMNS],
        columns=["column", "dtype", "unit", "required", "meaning"],
    )


def column(name: str) -> Column:
    return _BY_NAME[name]
