"""Does this Triton build a row's sum of squares spread over the CTAs of a cluster (``num_ctas`` > 1) for sm_90?

    python benchmarks/num_ctas_compile.py [--out DIR]     # under each Triton to compare (the GPU machine's, CI's)

Compiled on the CPU (no GPU needed; not under ``TRITON_INTERPRET=1``): one 16-bit block of 16384 elements a program,
8 warps, at 1, 2 and 4 CTAs. Prints (and with ``--out`` writes to DIR/triton-VERSION.txt) a line per CTA count with
the cluster instructions its PTX holds (``barrier.cluster``, ``mapa``, ``ld.shared::cluster``: the CTAs meeting in
distributed shared memory), or the compiler's error lines. ``wide_row_clusters.py`` launches its clusters from a
kernel compiled one CTA a program because of what this shows for Triton 3.6.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path

import torch
import triton
import triton.language as tl

from kprof.specialization import compile_for

CLUSTER_PTX = re.compile(r"\b(barrier\.cluster\.\w+|mapa\S*|ld\.shared::cluster\S*)")


@triton.jit
def _row_sum_squares_kernel(
    x_ptr,  # [rows, BLOCK] 16-bit
    out_ptr,  # [rows] float32: each row's sum of squares
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * BLOCK + tl.arange(0, BLOCK)).to(tl.float32)
    tl.store(out_ptr + row, tl.sum(x * x, axis=0))


def build(num_ctas: int, block: int = 16384) -> str:
    """Compile at ``num_ctas`` for sm_90; the cluster instructions of its PTX. Raises the compiler's error."""
    args = (torch.empty(4, block, dtype=torch.bfloat16), torch.empty(4))
    compiled = compile_for(_row_sum_squares_kernel, args, {"BLOCK": block, "num_warps": 8, "num_ctas": num_ctas})
    found = sorted(set(CLUSTER_PTX.findall(compiled.asm["ptx"])))
    return "compiled; cluster instructions: " + (", ".join(found) if found else "none")


def said(num_ctas: int) -> str:
    """:func:`build`, or why it failed with MLIR's diagnostics (written to the process's stderr, read back here)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            return build(num_ctas)
        except RuntimeError as e:  # MLIR pass failures: the compiler's own words are the finding
            os.dup2(saved, 2)
            err.seek(0)
            lines = [ln.split("error:", 1)[1].strip() for ln in err.read().splitlines() if "error:" in ln]
            notes = "; ".join(dict.fromkeys(lines[:3]))
            return f"failed: {type(e).__name__}: {e}" + (f" ({notes})" if notes else "")
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the lines to DIR/triton-VERSION.txt")
    args = parser.parse_args()
    lines = [f"Triton {triton.__version__}, torch {torch.__version__}, sm_90, bf16 block of 16384, 8 warps"]
    lines += [f"num_ctas={n}: {said(n)}" for n in (1, 2, 4)]
    print("\n".join(lines))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"triton-{triton.__version__}.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
