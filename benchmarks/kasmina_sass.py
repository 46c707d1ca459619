"""How many instructions kasmina's telemetry kernel issues per row tile, by tile and ``STATS``, without a GPU.

The kernel is compiled for sm_90 exactly as a launch would compile it (``kprof.specialization.compile_for``), its
cubin disassembled with the ``nvdisasm`` Triton ships, and every loop (a backward branch) counted: its SASS
instructions, and among them shuffles (``SHFL``: cross-lane reductions), barriers, selects (``FSEL``) and local
memory (``STL``/``LDL``: spills). The row loop is the longest. On an H200 ncu found the kernel issuing an
instruction in 57-59% of its cycles (``results/kasmina-copy/h200-stats/``), so these counts are what its time
follows.

    python benchmarks/kasmina_sass.py [--shape 64x1000x64] [--dtype bf16] [--tiles 16x2,16x4,32x2,64x2] [--stats 0,1,2]
        [--maxnreg 0,128] [--even 0,1]

Also the resources ptxas gave each compile (``kprof.specialization.ptxas_resources``: registers and stack frame a
thread; shared memory a program from the compiler's metadata) and what they let an SM hold at once
(``kprof.occupancy.theoretical_occupancy``, the calculator checked against the driver's): programs of 64 threads
at 134-138 registers fit 6 an SM, at 128 fit 8, which decided races at 900 and 1000 seeds
(``results/kasmina-copy/h200-seeds/``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import triton

from kprof.dtypes import torch_dtype
from kprof.kernels.kasmina import branch_free
from kprof.occupancy import theoretical_occupancy
from kprof.specialization import compile_for, ptxas_resources

_LABEL = re.compile(r"\s*(\.L_x_\d+):")
_INSTRUCTION = re.compile(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;")
_BACK = re.compile(r"BRA `\((\.L_x_\d+)\)")
KINDS = {"SHFL": ("SHFL",), "BAR": ("BAR",), "FSEL": ("FSEL",), "spill": ("STL", "LDL")}


@dataclass(frozen=True)
class Compiled:
    """One compile of the kernel for sm_90: its SASS and the resources ptxas gave it."""

    sass: str
    registers: int  # a thread
    stack: int  # bytes a thread (its stack frame: spills and calls)
    shared: int  # bytes a program
    warps: int

    def resident(self) -> int:
        """Programs an sm_90 SM holds at once with these resources."""
        return theoretical_occupancy(32 * self.warps, self.registers, self.shared).blocks_per_sm


def compile_kernel(
    shape: tuple[int, int, int],
    dtype: torch.dtype,
    block_b: int,
    warps: int,
    stats: int,
    maxnreg: int = 0,
    even: bool | None = None,
) -> Compiled:
    """The kernel for sm_90 at ``shape`` (rows, seeds, channels) with this tile, STATS and register cap (0: none),
    without masks where ``even`` (None: where the launch drops them, ``branch_free.even_for``)."""
    rows, seeds, c = shape
    x = torch.randn(rows, seeds * c).to(dtype)
    state = torch.zeros(seeds, dtype=torch.int8), torch.zeros(seeds, dtype=torch.int32), torch.zeros(seeds)
    w, b = torch.randn(8, c, c).to(dtype), torch.randn(8, c).to(dtype)
    precision = 2 if dtype == torch.float32 else 0  # the GPU's products, not the interpreter's
    cfg = branch_free.config_for(x, seeds, c, True, block_b, warps, precision, stats=stats, maxnreg=maxnreg, even=even)
    args = (x, x, *state, w, b, torch.empty(seeds, 2), x, x, rows, c, 8, seeds * c, seeds * c)
    compiled = compile_for(branch_free.forward_kernel, args, {**cfg.constexprs(), **cfg.options()}, 90)
    resources = ptxas_resources(compiled.asm["ptx"], 90)  # the PTX carries the cap (.maxnreg)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "kernel.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        nvdisasm = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
        text = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    stack = resources.get("local_bytes", 0)
    return Compiled(text, resources["registers"], stack, int(compiled.metadata.shared), warps)


def loops(text: str) -> list[dict[str, int]]:
    """Per loop of the SASS (longest first): its instructions and how many of each of ``KINDS``."""
    labels: dict[str, int] = {}
    code: list[str] = []
    for line in text.splitlines():
        if m := _LABEL.match(line):
            labels[m.group(1)] = len(code)
        elif m := _INSTRUCTION.match(line):
            code.append(m.group(1))
    found = []
    for i, ins in enumerate(code):
        m = _BACK.search(ins)
        if m and labels.get(m.group(1), i) < i:
            body = code[labels[m.group(1)] : i + 1]
            row = {"instructions": len(body)}
            row.update({kind: sum(any(op in b for op in ops) for b in body) for kind, ops in KINDS.items()})
            found.append(row)
    return sorted(found, key=lambda r: -r["instructions"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="64x1000x64")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--tiles", default="16x2,16x4,32x2,32x4,64x2,64x4")
    ap.add_argument("--stats", default="0,1,2")
    ap.add_argument("--maxnreg", default="0", help="register caps to compile each at (0: none)")
    ap.add_argument(
        "--even", default="", help="0,1: each also with its masks (0) and without (1); default: the launch's"
    )
    args = ap.parse_args()
    shape = tuple(int(v) for v in args.shape.split("x"))
    dtype = torch_dtype(args.dtype)
    evens = [bool(int(v)) for v in args.even.split(",")] if args.even else [None]
    print(f"{args.dtype} {args.shape}: the row loop of each tile, sm_90 (static SASS; one pass is one row tile)")
    for tile in args.tiles.split(","):
        block_b, warps = (int(v) for v in tile.split("x"))
        for stats in (int(v) for v in args.stats.split(",")):
            for cap, even in ((int(v), e) for v in args.maxnreg.split(",") for e in evens):
                k = compile_kernel(shape, dtype, block_b, warps, stats, cap, even)
                row = loops(k.sass)[0]
                per = row["instructions"] / (block_b * shape[2] / (32 * warps))
                masks = "" if even is None else (", no masks" if even else ", masked")
                print(
                    f"  {block_b:3d} rows x {warps} warps, STATS {stats}{f', maxnreg {cap}' if cap else ''}{masks}: "
                    f"{row['instructions']:5d} instructions ({per:.1f} per element a thread), SHFL {row['SHFL']}, "
                    f"BAR {row['BAR']}, FSEL {row['FSEL']}, spill {row['spill']}; {k.registers} registers, "
                    f"{k.stack} B stack, {k.shared} B shared: {k.resident()} programs an SM",
                    flush=True,
                )


if __name__ == "__main__":
    main()
