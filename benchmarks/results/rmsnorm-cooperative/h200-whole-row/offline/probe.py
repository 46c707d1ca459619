"""The whole-row kernel's weight loads and first store in SASS, masked and unmasked, compiled offline for sm_90.

    python benchmarks/results/rmsnorm-cooperative/h200-whole-row/offline/probe.py > triton-VERSION.txt

For each 16-bit dtype and width: registers and spilled bytes (ptxas), the instruction count, the positions of the
weight's 8 global loads (the last 8 LDG), how many of the first 7 have their registers read before the next one is
issued (each such load's latency is waited out before the next load starts), and the first global store (STG). No
GPU needed: Triton's compiler, ptxas and nvdisasm run on the CPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

import torch
import triton

from kprof.kernels.rmsnorm import tuned
from kprof.specialization import compile_for, ptxas_resources

NVDISASM = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "nvdisasm")

print(f"triton {triton.__version__}")
for dtype in (torch.bfloat16, torch.float16):
    for n, even in ((65536, True), (65536, False), (49152, False)):
        x = torch.empty(4, n, dtype=dtype)
        args = (x, torch.empty(n, dtype=dtype), torch.empty_like(x), n, n, 4, n, 1e-6)
        options = {"BLOCK_N": 65536, "I64": False, "ALIGN": 1, "EVEN": even, "num_warps": 32}
        kernel = compile_for(tuned.whole_row_kernel, args, options)
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(kernel.asm["cubin"])
            f.flush()
            sass = subprocess.run([NVDISASM, "-c", f.name], capture_output=True, text=True, check=True).stdout
        lines = [line for line in sass.splitlines() if re.search(r"/\*[0-9a-f]{4}\*/", line)]
        loads = [i for i, line in enumerate(lines) if "LDG" in line]
        stores = [i for i, line in enumerate(lines) if "STG" in line]
        waited = 0
        for i, nxt in zip(loads[-8:-1], loads[-7:]):
            first = int(re.search(r"LDG\S* R(\d+)", lines[i])[1])
            regs = [f"R{first + q}" for q in range(4)]  # a 128-bit load's four registers
            body = [line.split(";")[0].split(" ", 1)[-1] for line in lines[i + 1 : nxt]]
            waited += any(re.search(rf"\b{r}\b", b) for b in body for r in regs)
        res = ptxas_resources(kernel.asm["ptx"])
        print(
            f"{str(dtype).split('.')[-1]:<9} N={n:<6} {'unmasked' if even else 'masked  '} "
            f"registers {res['registers']}, spilled {res['spill_bytes']} B, {len(lines)} instructions; "
            f"weight loads at {loads[-8:]} ({waited} of the first 7 read before the next is issued), "
            f"first store at {stores[0]}"
        )
