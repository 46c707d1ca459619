import torch
from kprof.specialization import compile_resources
from kprof.kernels.add_rmsnorm.tuned import _add_rmsnorm_rows_kernel
from kprof.kernels.rmsnorm.tuned import _rmsnorm_two_pass_kernel
from kprof.kernels.silu_mul.kernels import KERNELS as S
rows = []
for dt, warps in ((torch.bfloat16, 8), (torch.float16, 4)):
    for n in (6144, 8192):
        x = torch.empty(512, n, dtype=dt); w = torch.empty(n, dtype=dt)
        r = compile_resources(_add_rmsnorm_rows_kernel, (x, x, w, x, x, n, n, 512, n, 1e-6), dict(BLOCK_N=8192, ROWS=1, I64=False, ALIGN=8, num_warps=warps))
        rows.append(("add_rmsnorm rows", str(dt), n, warps, r.get("registers"), r.get("spill_stores", r.get("spill_bytes"))))
for dt in (torch.bfloat16, torch.float16):
    for n, chunk, warps in ((6144, 4096, 8), (5120, 4096, 8), (8192, 2048, 16), (16384, 4096, 16)):
        x = torch.empty(8192, n, dtype=dt); w = torch.empty(n, dtype=dt)
        r = compile_resources(_rmsnorm_two_pass_kernel, (x, w, x, n, n, 8192, n, 1e-6), dict(BLOCK_N=chunk, ROWS=1, I64=False, COLS=n, ALIGN=8, num_warps=warps))
        rows.append(("rmsnorm two_pass", str(dt), n, warps, r.get("registers"), r.get("spill_stores", r.get("spill_bytes"))))
    for h in (6144, 7168):
        x = torch.empty(512, 2*h, dtype=dt); y = torch.empty(512, h, dtype=dt)
        r = compile_resources(S.tile, (x, y, 2*h, 512, h), dict(BLOCK_H=8192, ROWS=1, HINTS=False, I64=False, ALIGN=8, COLS=h, num_warps=16))
        rows.append(("silu_mul whole row", str(dt), h, 16, r.get("registers"), r.get("spill_stores", r.get("spill_bytes"))))
for row in rows: print(*row)
