"""Registers and spills of the H200's mid-width configs in bf16, compiled for sm_90 on the CPU by the Triton installed here (kprof.specialization.compile_resources; no GPU), and the
programs an SM that registers and warps allow (65536 registers and 64 warps an SM).

    PYTHONPATH=. python benchmarks/results/grid/h200-mid-widths/offline-registers/probe.py

The GPU machine's Triton (3.6) may allocate otherwise; this reads what a newer Triton, CI's, makes of them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
import triton

from kprof.kernels.add_rmsnorm import tuned as add_tuned
from kprof.kernels.rmsnorm import tuned as rms_tuned
from kprof.specialization import compile_resources

_FP32_PROBE = Path(__file__).parents[2] / "h200-fp32-parts" / "widths" / "offline-registers" / "probe.py"
_spec = importlib.util.spec_from_file_location("fp32_probe", _FP32_PROBE)
calls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(calls)  # rms_call and add_call: a config's kernel, arguments and constexprs

POINTS = (("add_rmsnorm", 1024, 3072), ("add_rmsnorm", 256, 5120), ("add_rmsnorm", 2048, 5120),
          ("add_rmsnorm", 1024, 6144), ("add_rmsnorm", 2048, 6144), ("add_rmsnorm", 256, 8192),
          ("add_rmsnorm", 768, 8192), ("add_rmsnorm", 1024, 8192), ("rmsnorm", 768, 8192), ("rmsnorm", 1024, 4096),
          ("rmsnorm", 2048, 4096))  # fmt: skip


def per_sm(registers: int, warps: int) -> int:
    """Programs of ``warps`` warps an SM at ``registers`` a thread (allocated by the warp in 256-register units)."""
    by_regs = 65536 // (-(-registers * 32 // 256) * 256 * warps)
    return min(by_regs, 64 // warps)


def main() -> None:
    print("| family | point | config | registers | spill stores (bytes) | programs an SM | shared memory |")
    print("|---|---|---|---:|---:|---:|---:|")
    for fam, rows, n in POINTS:
        if fam == "rmsnorm":
            cfg = rms_tuned.choose_config(n, 2, rows, 132, True, fast_memory=True)
            fn, args, kwargs = calls.rms_call(cfg, n, torch.bfloat16)
        else:
            cfg = add_tuned.choose_config(n, 2, rows, 132, True, False, True)
            fn, args, kwargs = calls.add_call(cfg, n, torch.bfloat16)
        res = compile_resources(fn, args, kwargs)
        desc = f"{cfg.kernel} {cfg.block_n} x {cfg.rows} rows x {cfg.num_warps} warps"
        desc += " const" if cfg.cols_const else ""
        desc += " hints" if getattr(cfg, "hints", False) else ""
        print(
            f"| {fam} | {rows}x{n} | {desc} | {res['registers']} | {res.get('spill_stores', 0)} | "
            f"{per_sm(res['registers'], cfg.num_warps)} | {res['shared_mem_bytes']} |",
            flush=True,
        )
    print(f"\ntriton {triton.__version__}")


if __name__ == "__main__":
    main()
