import hashlib, json, re, sys, torch
from kprof.kernels.lib import tiles
from kprof.kernels.lib.launching import TensorDescriptor
from kprof.kernels.swiglu import tuned
from kprof.specialization import compile_for
out = {}
cases = [  # m, k, n, persistent, tail, config
    (2048, 2048, 5504, True, True, None),  # quarters
    (1000, 1000, 3008, True, True, None),  # halves
    (8192, 8192, 11008, False, None, None),  # one tile a program
    (2048, 2048, 768, False, True, (128, 64, 64, 8, 4, 4, 64)),
    (4096, 2048, 768, False, True, (128, 128, 64, 8, 8, 3, 64)),
]
for m, k, n, pers, tail, cfg in cases:
    if cfg and not hasattr(tiles.TilePlan, 'lower'):
        continue
    plan = tuned.interleaved_plan(m, k, n, 132, pers, tail, cfg)
    x = torch.empty(m, k, dtype=torch.bfloat16); w = torch.empty(k, 2 * n, dtype=torch.bfloat16); y = torch.empty(m, n, dtype=torch.bfloat16)
    extra = {'lower': plan.lower} if getattr(plan, 'lower', 0) else {}
    descs = tiles.tile_descriptors(x, w, y, plan.tiles, plan.subtile, plan.split, w_cols=2, **extra)
    meta = plan.meta(LOWER_M=getattr(plan, 'lower', 0)) if "LOWER_M" in tuned._swiglu_interleaved_kernel.arg_names else plan.meta()
    meta["IEEE"] = False
    kw = dict(meta)
    ck = compile_for(tuned._swiglu_interleaved_kernel, (*descs, m, n, k), kw)
    ptx = re.sub(r"^\s*\.loc.*$|^\s*\.file.*$|^\s*//.*$", "", ck.asm["ptx"], flags=re.M)
    ptx = re.sub(r"\n\s*\n", "\n", ptx)
    out[f"{m}x{k}x{n} {plan}"] = hashlib.sha256(ptx.encode()).hexdigest()[:16] + f" regs? lines {ptx.count(chr(10))}"
    open(f"/tmp/ptx/{sys.argv[1]}-{m}x{k}x{n}.ptx", "w").write(ptx)
print(json.dumps(out, indent=1))
