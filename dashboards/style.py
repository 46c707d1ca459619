"""How the dashboard shows things, in one place: provider and kernel colours, readable column names, number
formats, shape order. No Streamlit here (the figures and the pages both use it, and it tests alone).

Colours are a function of the name alone (a fixed table for the PyTorch yardsticks, a hash of the name into a
palette for the rest), so a provider keeps its colour on every page, in every run, and when runs are added."""

from __future__ import annotations

import functools
import math
import re
import zlib

import numpy as np
import pandas as pd
from plotly.colors import qualitative

# The yardsticks every family has: fixed, muted colours so the versions under test stand out.
FIXED = {
    "torch_eager": "#7f7f7f",
    "torch_F": "#17becf",
    "torch_compile": "#8c564b",
    "liger": "#bcbd22",
    "cublas": "#393b79",
    "torch_matmul": "#393b79",
    "copy": "#c7c7c7",
}


def _rgb(c: str) -> tuple[int, int, int]:
    c = c.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


def _far_from_fixed(c: str, min_dist: int = 90) -> bool:
    """Hashed colours stay visibly apart from the yardsticks' (a cyan next to torch_F's teal reads as one)."""
    r = _rgb(c)
    return all(sum((a - b) ** 2 for a, b in zip(r, _rgb(f))) ** 0.5 >= min_dist for f in FIXED.values())


PALETTE = list(
    dict.fromkeys(c.upper() for c in qualitative.Plotly + qualitative.D3 + qualitative.Dark24 if _far_from_fixed(c))
)


@functools.lru_cache(maxsize=1)
def _registry() -> dict[str, int]:
    """Every provider kprof defines, family by family, numbered: neighbours in a family get neighbouring,
    so distinct, palette entries (a hash alone gave two rmsnorm versions one colour). Imports the kernel
    families once (seconds; the dashboard's server does it at start-up)."""
    try:
        from kprof.kernels import discover

        names = [p for _, f in sorted(discover().items()) for p in f.providers if p not in FIXED]
    except Exception:  # noqa: BLE001 - kernels that do not import here: hashed colours still hold
        names = []
    return {n: i for i, n in enumerate(dict.fromkeys(names))}


def colour(name: str) -> str:
    """The colour of a provider (or kernel) name; ``provider @ run`` keeps the provider's colour."""
    base = str(name).split(" @ ")[0]
    if base in FIXED:
        return FIXED[base]
    known = _registry().get(base)
    if known is not None:
        return PALETTE[known % len(PALETTE)]
    return PALETTE[zlib.crc32(base.encode()) % len(PALETTE)]


# Which column holds the time a page plots: the first of these a run has. gpu_time_us is the run's declared
# timing mode (cold / warm / graph / host); per-mode columns such as warm_us come after it.
TIME_PREFERENCE = ("gpu_time_us", "warm_us")


def time_column(metrics: pd.DataFrame) -> str:
    for col in TIME_PREFERENCE:
        if col in metrics and metrics[col].notna().any():
            return col
    return "gpu_time_us"


# column -> (header, format); the format is a Streamlit NumberColumn printf format or None for text
COLUMNS: dict[str, tuple[str, str | None]] = {
    "shape": ("shape", None),
    "provider": ("version", None),
    "dtype": ("dtype", None),
    "status": ("status", None),
    "best": ("best", None),
    "case": ("case", None),
    "note": ("note", None),
    "why": ("why", None),
    "gpu_time_us": ("GPU time (µs)", "%.2f"),
    "gpu_time_warm_us": ("GPU time (µs)", "%.2f"),
    "noise": ("noise (IQR/median)", "%.1%"),
    "cold_placement_spread": ("cold spread over placements", "%.1%"),
    "gbps": ("bandwidth (GB/s)", "%.0f"),
    "pct_peak_bw": ("% of copy ceiling", "%.1f"),
    "cold_writeback_us": ("write-back left in L2 (µs)", "%.1f"),
    "speedup": ("speedup", "%.2f×"),
    "host_time_us": ("host time/call (µs)", "%.1f"),
    "launch_latency_us": ("launch latency (µs)", "%.1f"),
    "kernels_per_call": ("kernels/call", "%.0f"),
    "occupancy_theoretical_pct": ("occupancy theor. (%)", "%.0f"),
    "occupancy_achieved_pct": ("occupancy achieved (%)", "%.0f"),
    "waves": ("waves (blocks / held at once)", "%.2f"),
    "occupancy_limiter": ("limited by", None),
    "dram_bytes_per_call": ("DRAM bytes/call", "%.3s"),
    "dram_vs_model": ("DRAM / bytes model", "%.2f×"),
    "registers_per_thread": ("registers/thread", "%.0f"),
    "local_bytes": ("spills: local bytes", "%.0f"),
    "spill_bytes": ("spill bytes", "%.0f"),
    "shared_mem_bytes": ("shared mem (B)", "%.0f"),
    "max_rel_err": ("max rel. error", "%.2e"),
    "max_abs_err": ("max abs. error", "%.2e"),
    "tolerance": ("tolerance", "%.0e"),
    "err_vs_tol": ("error / tolerance", "%.3f"),
    "median_a": ("median A (µs)", "%.2f"),
    "median_b": ("median B (µs)", "%.2f"),
    "ratio": ("B / A", "%.3f"),
    "ci_lo": ("95% CI low", "%.3f"),
    "ci_hi": ("95% CI high", "%.3f"),
    "p_value": ("p-value", None),
    "verdict": ("verdict", None),
    "changes": ("kernel changes", None),
    "intensity": ("FLOP/byte", "%.2f"),
    "bound": ("bound", None),
    "tflops": ("TFLOP/s", "%.3g"),
    "pct_roof": ("% of roof", "%.1f"),
    "launches": ("launches", "%d"),
    "baseline": ("baseline", None),
    "warm_us": ("warm time (µs)", "%.2f"),
    "graph_time_us": ("CUDA-graph time (µs)", "%.2f"),
    "timer": ("timer", None),
}


def column_config(df: pd.DataFrame) -> dict:
    """Streamlit column_config for the columns of ``df`` this module knows: readable headers, units in the
    header, sensible decimals. Imported lazily so this module stays free of Streamlit."""
    import streamlit as st

    out = {}
    for col in df.columns:
        header, fmt = COLUMNS.get(col, (col.replace("_", " "), None))
        if fmt and pd.api.types.is_numeric_dtype(df[col]):
            out[col] = st.column_config.NumberColumn(header, format=fmt)
        else:
            out[col] = st.column_config.Column(header)
    return out


def p_value(p: object) -> str:
    """p-values as a reader wants them: '< 0.001' rather than 0.000000."""
    if p is None or (isinstance(p, float) and math.isnan(p)) or p is pd.NA:
        return "—"
    p = float(p)
    return "< 0.001" if p < 1e-3 else f"{p:.3f}"


def shape_key(shape: object) -> tuple:
    """Sort key for shapes such as '4096x1024': numerically, dimension by dimension (text sorting puts
    '16384x4096' before '2048x4096')."""
    parts = re.split(r"[x×,]", str(shape))
    return tuple((0, int(p)) if p.strip().isdigit() else (1, p) for p in parts)


def sorted_shapes(shapes) -> list[str]:
    return sorted({str(s) for s in shapes if s is not None and not pd.isna(s)}, key=shape_key)


def us(value_us: float) -> str:
    """A duration with a readable unit."""
    if value_us is None or (isinstance(value_us, float) and math.isnan(value_us)):
        return "—"
    if value_us >= 1e6:
        return f"{value_us / 1e6:.3g} s"
    if value_us >= 1e3:
        return f"{value_us / 1e3:.3g} ms"
    return f"{value_us:.3g} µs"


_PRINTF = re.compile(r"%(?:\.(\d+))?([dfegs%])(.*)")
_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def formatted(value: object, fmt: str | None) -> str:
    """``value`` as a :data:`COLUMNS` format prints it (``%.2f``, ``%.1%``, ``%.3s`` for SI prefixes,
    ``%.2f×``...), the way the interactive tables show it; missing values as ``—``, text as it is."""
    if fmt_missing(value):
        return "—"
    m = _PRINTF.fullmatch(fmt or "")
    if isinstance(value, bool | np.bool_):
        return "✓" if value else ""
    if m is None and isinstance(value, float | np.floating):
        return f"{value:.4g}"  # a number without a declared format: four significant digits, not 1.2544000000000002
    if m is None or isinstance(value, str):
        return str(value)
    digits, kind, suffix = m.group(1), m.group(2), m.group(3)
    v = float(value)
    if kind == "d":
        return f"{round(v)}{suffix}"
    if kind == "%":
        return f"{100 * v:.{digits or 0}f}%{suffix}"
    if kind == "s":  # SI prefix: 3.36G rather than 3355443200
        scale, prefix = next(((s, p) for s, p in _SI if abs(v) >= s), (1.0, ""))
        return f"{v / scale:.{digits or 3}g}{prefix}{suffix}"
    return f"{v:.{digits or 6}{kind}}{suffix}"


def fmt_missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def html_table(df: pd.DataFrame, shade: pd.Series | None = None, max_height_px: int = 480) -> str:
    """``df`` as a read-only HTML table: :data:`COLUMNS`' headers and number formats, numbers right-aligned,
    rows coloured by ``shade`` (a CSS colour per row, '' for none), scrolling inside ``max_height_px``.

    Why not ``st.dataframe``: its grid and Arrow code (about 1.2 MB of JavaScript) cost a fresh browser about
    0.9 s before the page's last element shows; a small table that is only read needs none of it (sorting
    and scrolling a large one do: the Runs page keeps the grid)."""
    from html import escape

    heads, cells = [], []
    for col in df.columns:
        header, fmt = COLUMNS.get(col, (col.replace("_", " "), None))
        numeric = pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_bool_dtype(df[col])
        heads.append(f'<th data-col="{escape(str(col))}" class="{"n" if numeric else ""}">{escape(header)}</th>')
        cells.append(
            [
                (
                    f'<td class="n">{escape(formatted(v, fmt))}</td>'
                    if numeric
                    else f'<td title="{escape(formatted(v, None))}">{escape(formatted(v, None))}</td>'
                )
                for v in df[col].tolist()
            ]
        )
    colours = list(shade) if shade is not None else [""] * len(df)
    rows = [f'<tr style="background-color:{c}">' if c else "<tr>" for c in colours]
    body = "".join(r + "".join(col[i] for col in cells) + "</tr>" for i, r in enumerate(rows))
    return (
        "<style>.kprof-table th, .kprof-table td {padding: 2px 10px; border-bottom: 1px solid #eee; "
        "vertical-align: top; max-width: 460px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap}"
        ".kprof-table th {white-space: nowrap; text-align: left}"
        ".kprof-table .n {white-space: nowrap; text-align: right}"
        ".kprof-table th {font-weight: 600}</style>"
        f'<div class="kprof-table" style="max-height:{max_height_px}px;overflow:auto;font-size:0.85rem">'
        '<table style="border-collapse:collapse;width:max-content;min-width:100%">'
        '<thead style="position:sticky;top:0;background:#f6f6f9">'
        f"<tr>{''.join(heads)}</tr></thead><tbody>{body}</tbody></table></div>"
    )
