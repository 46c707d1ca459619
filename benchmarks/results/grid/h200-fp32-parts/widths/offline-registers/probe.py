"""Registers and spills of the H200's float32 configs for 4097-16384 columns (and the table's configs they replaced),
compiled for sm_90 on the CPU by the Triton installed here (kprof.specialization.compile_resources; no GPU).

    PYTHONPATH=. python benchmarks/results/grid/h200-fp32-parts/widths/offline-registers/probe.py

The GPU machine's Triton (3.6) may allocate otherwise; this reads what a newer Triton, CI's, makes of them."""

from __future__ import annotations

import torch
import triton

from kprof.kernels.add_rmsnorm import tuned as add_tuned
from kprof.kernels.add_rmsnorm.looped import _add_rmsnorm_looped_kernel
from kprof.kernels.add_rmsnorm.one_row import _add_rmsnorm_one_row_kernel
from kprof.kernels.rmsnorm import tuned as rms_tuned
from kprof.specialization import compile_resources


def rms_call(cfg: rms_tuned.Config, n: int, dtype: torch.dtype = torch.float32) -> tuple:
    x, w = torch.empty((1, n), dtype=dtype), torch.empty(n, dtype=dtype)
    align = 8 if n % 8 == 0 else 1
    args = (x, w, x, n, n, 16384, n, 1e-6)
    if cfg.kernel == "rows":
        kernel = rms_tuned._rmsnorm_rows_kernel
        meta = dict(BLOCK_N=cfg.block_n, ROWS=cfg.rows, HINTS=cfg.hints, I64=False, TAIL=cfg.tail, ALIGN=align)
    else:
        kernel = rms_tuned._rmsnorm_two_pass_kernel
        meta = dict(BLOCK_N=cfg.block_n, ROWS=cfg.rows, I64=False, COLS=n if cfg.cols_const else 0, ALIGN=align)
    return kernel, args, dict(meta, num_warps=cfg.num_warps)


def add_call(cfg: add_tuned.Config, n: int, dtype: torch.dtype = torch.float32) -> tuple:
    x, w = torch.empty((1, n), dtype=dtype), torch.empty(n, dtype=dtype)
    align = 8 if n % 8 == 0 else 1
    if cfg.kernel == "one_row":
        args = (x, x, w, x, x, n, n, n, 1e-6)
        return _add_rmsnorm_one_row_kernel, args, dict(BLOCK_N=cfg.block_n, ALIGN=align, num_warps=cfg.num_warps)
    if cfg.kernel == "rows":
        args = (x, x, w, x, x, n, n, 16384, n, 1e-6)
        meta = dict(BLOCK_N=cfg.block_n, ROWS=cfg.rows, I64=False, ALIGN=align, num_warps=cfg.num_warps)
        return add_tuned._add_rmsnorm_rows_kernel, args, meta
    args = (x, x, w, x, x, n, n, n, 1e-6)
    meta = dict(BLOCK_N=cfg.block_n, COLS=n if cfg.cols_const else 0, ALIGN=align, HINTS=cfg.hints)
    return _add_rmsnorm_looped_kernel, args, dict(meta, num_warps=cfg.num_warps)


def main() -> None:
    print("| family | point | config | registers | spill stores (bytes) | stack | shared memory |")
    print("|---|---|---|---:|---:|---:|---:|")
    for fam, rows, n in (("rmsnorm", 16384, 6144), ("rmsnorm", 2048, 6144), ("rmsnorm", 512, 6144),
                         ("rmsnorm", 2048, 16384), ("add_rmsnorm", 2048, 6144), ("add_rmsnorm", 2048, 16384)):
        tuned = rms_tuned if fam == "rmsnorm" else add_tuned
        for label, fast in (("H200", True), ("table", False)):
            cfg = tuned.choose_config(n, 4, rows, 132, True, fast_memory=fast) if fam == "rmsnorm" else \
                tuned.choose_config(n, 4, rows, 132, True, False, fast)
            fn, args, kwargs = (rms_call if fam == "rmsnorm" else add_call)(cfg, n)
            res = compile_resources(fn, args, kwargs)
            desc = f"{label}: {cfg.kernel} {cfg.block_n} x {cfg.rows} rows x {cfg.num_warps} warps"
            desc += " const" if getattr(cfg, "cols_const", False) else ""
            print(f"| {fam} | {rows}x{n} | {desc} | {res['registers']} | {res.get('spill_stores', 0)} | "
                  f"{res.get('stack_frame', 0)} | {res['shared_mem_bytes']} |", flush=True)
    print(f"\ntriton {triton.__version__}")


if __name__ == "__main__":
    main()
