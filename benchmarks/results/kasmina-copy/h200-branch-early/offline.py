"""Registers, spills and PTX lines of branch_free's kernel at EARLY 0, 1 and 2, compiled offline for sm_90 with a
launch's own specialisation (``kprof.specialization.compile_resources``: Triton's binder, then ptxas -v) at the H200
table's launches of the points the probe raced. No GPU needed (run where TRITON_INTERPRET is off).

    PYTHONPATH=. python benchmarks/results/kasmina-copy/h200-branch-early/offline.py
"""

from __future__ import annotations

import torch
import triton

from kprof.kernels import discover
from kprof.kernels.kasmina import branch_free
from kprof.specialization import compile_for, compile_resources

# shape, dtype, (rows per tile, warps, STATS, register cap, BY_STATE, blueprint rows a step; 0: all)
CASES = (
    ((64, 1000, 64), "bf16", (16, 2, 2, 128, False, 0)),
    ((8, 1000, 64), "bf16", (16, 2, 1, 0, False, 0)),
    ((64, 1000, 128), "bf16", (16, 2, 2, 0, False, 0)),
    ((8, 1000, 128), "bf16", (16, 2, 1, 0, False, 0)),
    ((48, 333, 100), "bf16", (16, 2, 1, 0, False, 0)),
    ((64, 250, 256), "bf16", (32, 8, 1, 0, False, 0)),
    ((512, 100, 32), "bf16", (32, 2, 2, 0, False, 0)),
    ((512, 100, 128), "bf16", (16, 2, 2, 0, True, 0)),
    ((64, 1000, 64), "fp32", (16, 2, 2, 0, True, 0)),
    ((8, 1000, 128), "fp32", (16, 4, 2, 0, False, 32)),
    ((48, 333, 100), "fp32", (16, 8, 0, 0, False, 0)),
)


def _ptx_lines(args: tuple, kwargs: dict) -> int:
    ptx = compile_for(branch_free.forward_kernel, args, kwargs, 90).asm["ptx"]
    return sum(
        1 for line in ptx.splitlines() if line.strip() and not line.strip().startswith(("//", ".", "$", "{", "}"))
    )


def main() -> None:
    fam = discover()["kasmina"]
    print(f"Triton {triton.__version__}, ptxas for sm_90, offline\n")
    print("| point | launch | EARLY 0 | EARLY 1 | EARLY 2 |")
    print("|---|---|---|---|---|")
    for shape, dtype, (block_b, warps, stats, maxnreg, by_state, k_chunk) in CASES:
        inp = fam.make_inputs(shape, dtype, "cpu", 1)
        x, n_seeds, c = inp["x"], shape[-2], shape[-1]
        n_rows = x.numel() // x.shape[-1]
        y = torch.empty_like(x)
        args = (
            x.view(n_rows, -1), y, inp["lifecycle"], inp["blueprint_id"], inp["alpha"], inp["weights"], inp["bias"],
            torch.empty((n_seeds, 2)), y, y, n_rows, c, inp["weights"].shape[0], x.shape[-1], x.shape[-1],
        )  # fmt: skip
        whole = branch_free.block_c(c)
        base = {
            "BLOCK_B": block_b, "BLOCK_C": whole, "TELEMETRY": True, "PRECISION": 2 if dtype == "fp32" else 0,
            "K_CHUNK": k_chunk or whole, "BY_STATE": by_state, "STATS": stats,
            "EVEN": branch_free.even_for(n_rows, c, block_b), "num_warps": warps,
            **({"maxnreg": maxnreg} if maxnreg else {}),
        }  # fmt: skip
        cells = []
        for early in (0, 1, 2):
            kw = {**base, "EARLY": early}
            res = compile_resources(branch_free.forward_kernel, args, kw)
            cells.append(f"{res['registers']} reg, {res.get('spill_bytes', 0)} B spilled, {_ptx_lines(args, kw)} PTX")
        launch = f"{block_b} x {warps}, STATS {stats}" + (f", cap {maxnreg}" if maxnreg else "")
        launch += (", by state" if by_state else "") + (f", {k_chunk} a step" if k_chunk else "")
        print(f"| {dtype} {'x'.join(map(str, shape))} | {launch} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
