"""Compile swiglu's interleaved kernel for sm_90 on the CPU (no GPU) at five plans and write each PTX, without its
comments and line records, to OUT/TAG-MxKxN.ptx:

    TRITON_INTERPRET=0 python probe.py TAG [OUT]

Run at each checkout to compare (``git checkout REV -- kernels/`` for an older kernel; a kernel without LOWER_M skips
the taller tiles), then ``cmp <(bash strip.sh OUT/a-S.ptx) <(bash strip.sh OUT/b-S.ptx)`` per shape: ``strip.sh``
drops the debug sections and the labels they number."""

import re
import sys
from pathlib import Path

import torch

from kprof.kernels.lib import tiles
from kprof.kernels.swiglu import tuned
from kprof.specialization import compile_for

CASES = [  # m, k, n, persistent, tail, config
    (2048, 2048, 5504, True, True, None),  # persistent 128x128, the last wave in quarters
    (1000, 1000, 3008, True, True, None),  # persistent, halves
    (8192, 8192, 11008, False, None, None),  # one tile a program
    (2048, 2048, 768, False, True, (128, 64, 64, 8, 4, 4, 64)),  # 192x64
    (4096, 2048, 768, False, True, (128, 128, 64, 8, 8, 3, 64)),  # 192x128
]


def main() -> None:
    tag = sys.argv[1]
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/ptx")
    out.mkdir(parents=True, exist_ok=True)
    has_lower = "LOWER_M" in tuned._swiglu_interleaved_kernel.arg_names
    for m, k, n, persistent, tail, config in CASES:
        if config and not has_lower:
            continue
        plan = tuned.interleaved_plan(m, k, n, 132, persistent, tail, config)
        x, w, y = (torch.empty(r, c, dtype=torch.bfloat16) for r, c in ((m, k), (k, 2 * n), (m, n)))
        extra = {"lower": plan.lower} if getattr(plan, "lower", 0) else {}
        descs = tiles.tile_descriptors(x, w, y, plan.tiles, plan.subtile, plan.split, w_cols=2, **extra)
        meta = plan.meta(LOWER_M=getattr(plan, "lower", 0)) if has_lower else plan.meta()
        meta["IEEE"] = False
        ptx = compile_for(tuned._swiglu_interleaved_kernel, (*descs, m, n, k), meta).asm["ptx"]
        ptx = re.sub(r"\n\s*\n", "\n", re.sub(r"^\s*(\.loc|\.file|//).*$", "", ptx, flags=re.M))
        (out / f"{tag}-{m}x{k}x{n}.ptx").write_text(ptx)
        print(f"{tag} {m}x{k}x{n}: {plan}")


if __name__ == "__main__":
    main()
