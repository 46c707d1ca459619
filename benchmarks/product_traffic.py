"""Experiment: what ncu measures of kprof's TMA product and cuBLAS's ``x @ W`` side by side, each kernel alone, at the
prefill points where rmsnorm_linear misses 1.03x cuBLAS (5504 columns) and at one where it meets it. The question is
why cuBLAS's kernel there (``nvjet_sm90_..._4x2_..._coopA``: its name reads as a 4x2 cluster of cooperative CTAs)
is faster: its CTAs can share each tile load between a cluster's CTAs (TMA multicast), so the bytes the SMs read
from L2 per output tile fall; kprof's Triton product loads every tile per CTA. ncu's memory sections say how many
bytes each kernel read from L2 and how busy L2 and the tensor pipes were.

    python benchmarks/product_traffic.py --out DIR [--points fp16:2048x2048x5504,...] [--ncu PATH]

The parent checks both products against the float64 product, then runs itself under ncu (``--child``: each product
launched once per point, in order, after a warm-up outside the profiled range), with ``--cache-control all
--clock-control none`` as kprof's ncu runs, the memory, compute, launch and occupancy sections, raw page. It writes
DIR/ncu_raw.csv (ncu's output) and DIR/product_traffic.csv (the chosen metrics, a row per kernel) and prints them.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

POINTS = "fp16:2048x2048x5504,fp16:2048x4096x5504,fp16:2048x8192x5504,bf16:2048x2048x5504,bf16:2048x4096x11008"
SECTIONS = (
    "SpeedOfLight",
    "LaunchStats",
    "Occupancy",
    "ComputeWorkloadAnalysis",
    "MemoryWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Tables",
)
KERNELS = "regex:_tma_product_kernel|nvjet|gemm|cutlass"
# the columns kept, by name or by what a name contains (ncu's names vary by version and GPU)
EXACT = (
    "Kernel Name",
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__m_xbar2l1tex_read_bytes.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
)
CONTAINS = ("cluster", "multicast", "dsmem")


def _points(spec: str) -> list[tuple[str, tuple[int, int, int]]]:
    out = []
    for item in spec.split(","):
        dtype, shape = item.split(":")
        m, k, n = (int(v) for v in shape.split("x"))
        out.append((dtype, (m, k, n)))
    return out


def _operands(dtype: str, m: int, k: int, n: int):
    import torch

    gen = torch.Generator(device="cuda").manual_seed(m * 7 + k * 3 + n)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    x = torch.randn(m, k, device="cuda", generator=gen).to(dt)
    wf = (torch.randn(k, n, device="cuda", generator=gen) / k**0.5).to(dt)
    ones = torch.ones(m, device="cuda", dtype=torch.float32)  # rstd 1: the product alone
    return x, wf, ones


def _launchers(dtype: str, m: int, k: int, n: int):
    """(name, call) of each product at the point, on the same operands."""
    import torch

    from kprof.kernels.rmsnorm_linear import rstd_epilogue

    x, wf, rstd = _operands(dtype, m, k, n)
    y = torch.empty(m, n, device="cuda", dtype=x.dtype)
    return [
        ("triton_tma", lambda: rstd_epilogue.tma_product(x, wf, None, y, rstd) or y),
        ("cublas_xw", lambda: x @ wf),
    ], (x, wf)


def check(points) -> None:
    """Both products against the float64 product at every point (rel. Frobenius error under 1e-2)."""
    for dtype, (m, k, n) in points:
        calls, (x, wf) = _launchers(dtype, m, k, n)
        ref = x.double() @ wf.double()
        for name, call in calls:
            err = float((call().double() - ref).norm() / ref.norm())
            if not err < 1e-2:
                raise SystemExit(f"{name} {dtype} {m}x{k}x{n}: rel err {err:.2e} against the float64 product")
            print(f"checked {name:<11} {dtype} {m}x{k}x{n}: rel err {err:.1e}", flush=True)


def clusters(dtype: str, m: int, k: int, n: int) -> None:
    """Whether the installed Triton builds kprof's TMA product as clusters of 2 CTAs (``num_ctas=2``, Hopper), the
    first step toward cuBLAS's multicast loads: compiled, checked and timed against one CTA a program (CUDA events,
    back to back, 50 calls after 5), or the error it raised."""
    import torch

    from kprof.kernels.lib import tiles
    from kprof.kernels.rmsnorm_linear import rstd_epilogue

    x, wf, rstd = _operands(dtype, m, k, n)
    y = torch.empty(m, n, device="cuda", dtype=x.dtype)
    plan = rstd_epilogue.tma_plan(m, k, n, tiles.persistent_sms(x), stream_k=False)  # one launch, no workspace
    meta = rstd_epilogue.tma_meta(plan, False, False)
    ref = x.double() @ wf.double()
    for ctas in (1, 2):

        def call(ctas=ctas):
            descriptors = tiles.tile_descriptors(x, wf, y, plan.tiles, plan.subtile, plan.split)
            rstd_epilogue.tma_product_kernel[(plan.programs,)](
                *descriptors, rstd, rstd, rstd, rstd, m, n, k, 0, **meta, num_ctas=ctas
            )

        try:
            call()
        except Exception as exc:  # noqa: BLE001 - what this Triton says about clusters is the finding
            first = " ".join(str(exc).split())[:400]
            print(f"num_ctas={ctas} {dtype} {m}x{k}x{n}: {type(exc).__name__}: {first}", flush=True)
            continue
        err = float((y.double() - ref).norm() / ref.norm())
        for _ in range(5):
            call()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            call()
        end.record()
        torch.cuda.synchronize()
        print(
            f"num_ctas={ctas} {dtype} {m}x{k}x{n}: rel err {err:.1e}, {start.elapsed_time(end) * 20:.1f} us a call "
            "(back to back)",
            flush=True,
        )


def child(points) -> None:
    """Each product once per point for ncu (warm-up launches outside ncu's range: compiled, cuBLAS's heuristics)."""
    import torch

    runs = []
    for dtype, (m, k, n) in points:
        calls, _ = _launchers(dtype, m, k, n)
        for _, call in calls:
            call()
        runs.append(calls)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for calls in runs:
        for _, call in calls:
            call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def _rows(raw: str, points) -> list[dict]:
    lines = [ln for ln in raw.splitlines() if ln.startswith('"')]
    table = list(csv.reader(io.StringIO("\n".join(lines))))
    header, units, body = table[0], table[1], table[2:]
    keep = [c for c in header if c in EXACT or any(s in c for s in CONTAINS)]
    labels = [(d, f"{m}x{k}x{n}", name) for d, (m, k, n) in points for name in ("triton_tma", "cublas_xw")]
    rows = []
    for (dtype, shape, name), values in zip(labels, body, strict=False):
        got = dict(zip(header, values, strict=False))
        row = {"dtype": dtype, "shape": shape, "product": name}
        row.update({f"{c} [{units[header.index(c)]}]" if units[header.index(c)] else c: got.get(c, "") for c in keep})
        rows.append(row)
    if len(body) != len(labels):
        print(f"ncu profiled {len(body)} kernels for {len(labels)} launches: the labels may be off", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--points", default=POINTS)
    ap.add_argument("--ncu", default=os.environ.get("KPROF_NCU") or shutil.which("ncu") or "ncu")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    points = _points(args.points)
    if args.child:
        child(points)
        return 0
    check(points)
    clusters(*points[0][:1], *points[0][1])
    args.out.mkdir(parents=True, exist_ok=True)
    cmd = [args.ncu, "--profile-from-start", "off", "--cache-control", "all", "--clock-control", "none"]
    cmd += ["--kernel-name", KERNELS, "--page", "raw", "--csv"]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += [sys.executable, __file__, "--child", "--points", args.points]
    print(" ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    (args.out / "ncu_raw.csv").write_text(proc.stdout)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
        return proc.returncode
    rows = _rows(proc.stdout, points)
    with open(args.out / "product_traffic.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    for row in rows:
        print(" | ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
