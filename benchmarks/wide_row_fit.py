"""Do the wide-row kernels' programs an SM fit at the registers they compile to, at every width the dispatch sends them?

    python benchmarks/wide_row_fit.py [--widths 65536,81920,...] [--rows 1024,8192] [--h100] [--csv OUT.csv]
    python benchmarks/wide_row_fit.py --layouts 2048x2,4096x4,8192x8 --widths 70001 --dtypes bf16

rmsnorm's and add_rmsnorm's pipelined and slotted kernels are persistent: the dispatch launches ``programs_per_sm``
programs an SM, chosen where the layout was raced (mostly at 65536 and 131072 columns). The kernel is specialised on
the number of chunks a row (``SPLITS``), so one layout compiles to different register counts at other widths; where
the programs asked for do not all fit an SM at once, the last of them wait for the first to end. On an H200,
add_rmsnorm bf16's 8192-element, 16-warp layout compiled to 40 registers a thread at 131072 columns (3 programs an SM
fit) and to 52-54 at 81920-114688 (2 fit), and ran at 86% of a copy there against 96-98.5% for a layout that fit
(benchmarks/results/rmsnorm-cooperative/h200-bf16-between-6e1d166/). The H200 dispatch now checks this itself for its
16-bit layouts (``fitted`` in both families' ``tuned.py``: a raced layout that fits fewer programs an SM than where it
was raced gives way to one of its fallbacks), so this table shows the layout it launches after that check.

Per family, dtype, width and row count: the kernel and layout the GPU dispatch picks (an H200's unless ``--h100``),
the registers a thread ``ptxas`` reports for sm_90 (compiled on the CPU with the Triton installed here: the GPU
machine's Triton may compile other counts), the programs an SM asked for and how many fit
(:func:`kprof.occupancy.theoretical_occupancy`) and the elements of rows those hold in flight an SM (programs that
run at once x chunk). ``--layouts``: the slotted kernel in the given layouts instead, the most in flight first.
Nothing runs on a GPU; it prints a table and the rows where fewer fit than are asked for.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import torch
import triton

from kprof.dtypes import torch_dtype
from kprof.kernels.add_rmsnorm import cooperative as add_cooperative
from kprof.kernels.add_rmsnorm import tuned as add_tuned
from kprof.kernels.rmsnorm import cooperative as rms_cooperative
from kprof.kernels.rmsnorm import tuned as rms_tuned
from kprof.occupancy import theoretical_occupancy
from kprof.specialization import compile_resources

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import write_csv  # noqa: E402

FAMILIES = {"rmsnorm": rms_tuned, "add_rmsnorm": add_tuned}  # the dispatch
KERNELS = {"rmsnorm": rms_cooperative, "add_rmsnorm": add_cooperative}  # the wide-row kernels
# 65536 to 131072 columns in steps of 8192 elements (whole chunks of every layout), and two ragged widths
WIDTHS = [65536 + 8192 * k for k in range(9)] + [70001, 100003]


def fit_rows(widths: list[int], rows: list[int], dtypes: list[str], fast_memory: bool) -> list[dict]:
    """One row a (family, dtype, width, rows) the dispatch sends to a persistent kernel; compiled once a layout and
    width (a kernel is specialised on the width itself too: a ragged one compiles to more registers)."""
    out, seen = [], {}
    for family, tuned in FAMILIES.items():
        for dtype in dtypes:
            for n in widths:
                for n_rows in rows:
                    found = tuned.offline_wide_row_call(n_rows, n, torch_dtype(dtype), fast_memory=fast_memory)
                    if found is None or found[0].programs_per_sm == 0:
                        continue  # not a persistent kernel (the cooperative one launches a program a chunk)
                    cfg, call = found
                    key = (family, dtype, cfg.kernel, cfg.block_n, cfg.num_warps, n)
                    if key not in seen:
                        seen[key] = compile_resources(*call)
                    layout = (cfg.kernel, cfg.block_n, cfg.num_warps, cfg.programs_per_sm)
                    out.append(_row(family, dtype, n_rows, n, layout, seen[key]))
    return out


def layout_rows(widths: list[int], dtypes: list[str], layouts: list[tuple[int, int]]) -> list[dict]:
    """``--layouts``: the slotted kernel of each family in each (chunk, warps) layout at each width, whatever the
    dispatch picks there; the programs an SM it would launch left blank (0)."""
    out = []
    for family, kernels in KERNELS.items():
        for dtype in dtypes:
            for n in widths:
                for chunk, warps in layouts:
                    call = kernels.offline_call("slotted", 1024, n, torch_dtype(dtype), chunk, 1, warps)
                    out.append(_row(family, dtype, 1024, n, ("slotted", chunk, warps, 0), compile_resources(*call)))
    return out


def _row(family: str, dtype: str, n_rows: int, n: int, layout: tuple[str, int, int, int], res: dict) -> dict:
    """A table row: the launch's layout (kernel, chunk, warps, programs an SM asked for), its compiled resources
    ``res``, the programs an SM that fit and the elements of rows they hold in flight an SM."""
    kernel, chunk, warps, asked = layout
    occ = theoretical_occupancy(32 * warps, res["registers"], res["shared_mem_bytes"])
    return {
        "family": family,
        "dtype": dtype,
        "shape": f"{n_rows}x{n}",
        "kernel": kernel,
        "chunk": chunk,
        "warps": warps,
        "chunks_a_row": triton.cdiv(n, chunk),
        "registers": res["registers"],
        "spill_bytes": res.get("spill_bytes", 0),
        "asked_per_sm": asked,
        "fit_per_sm": occ.blocks_per_sm,
        "in_flight_per_sm": min(asked or occ.blocks_per_sm, occ.blocks_per_sm) * chunk,
        "limiter": occ.limiter,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    ap.add_argument("--rows", default="1024,8192")
    ap.add_argument("--dtypes", default="bf16,fp16,fp32")
    ap.add_argument("--h100", action="store_true", help="the H100's dispatch (default: an H200's)")
    ap.add_argument(
        "--layouts", help="CHUNKxWARPS,...: the slotted kernel in these layouts instead of the dispatch's launches"
    )
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args(argv)
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    widths, dtypes = [int(w) for w in split(args.widths)], split(args.dtypes)
    if args.layouts:
        layouts = [tuple(int(v) for v in lay.split("x")) for lay in split(args.layouts)]
        rows = layout_rows(widths, dtypes, layouts)  # type: ignore[arg-type]
        rows.sort(key=lambda r: (r["family"], r["dtype"], r["shape"], -r["in_flight_per_sm"]))
        what = "the slotted kernel in the given layouts"
    else:
        rows = fit_rows(widths, [int(r) for r in split(args.rows)], dtypes, not args.h100)
        what = f"the {'H100' if args.h100 else 'H200'} dispatch's launches"
    print(f"# triton {triton.__version__}, torch {torch.__version__}, sm_90 offline; {what}")
    print(pd.DataFrame(rows).to_string(index=False))
    short = [r for r in rows if r["fit_per_sm"] < r["asked_per_sm"]]
    if not args.layouts:
        print(f"\n{len(short)} of {len(rows)} launches ask for more programs an SM than fit:")
    for r in short:
        print(
            f"  {r['family']} {r['dtype']} {r['shape']}: {r['kernel']} c{r['chunk']} w{r['warps']}, "
            f"{r['registers']} registers, {r['fit_per_sm']} of {r['asked_per_sm']} fit"
        )
    if args.csv:
        write_csv(args.csv, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
