"""Does a small kernel's ``cold`` time depend on what the process allocated before its inputs?

    python benchmarks/segment_state.py --out DIR [--shapes 512x3072,512x6144] [--dtype bf16] [--rounds 3]

``kprof profile`` measures its copy and compute ceilings (a 1 GiB copy, an 8192^3 product) before the
first case; a script that times the same call alone does not. PyTorch's caching allocator then carves the
case's tensors out of the ceilings' freed segments instead of new ones. This times rmsnorm's
``triton_tuned`` and torch.compile (``timing.measure_cupti``) on inputs allocated in each state, in rounds:

- ``fresh``: after ``torch.cuda.empty_cache()``: new segments of their own;
- ``carved``: after a 1 GiB tensor was allocated and freed, so they come out of its segment;
- ``ceilings``: after ``device.measure_ceilings()`` (what ``kprof profile`` does first), without emptying.

Prints the median cold busy time per (shape, provider, state) with x's and the output's addresses, and
writes DIR/segment_state.csv.
"""

from __future__ import annotations

import statistics

import torch
from bench_common import point_args, write_csv

from kprof import device, timing
from kprof.kernels import discover

PROVIDERS = ("triton_tuned", "torch_compile")


def _prepare(state: str) -> None:
    torch.cuda.empty_cache()
    if state == "carved":
        del_me = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        del del_me
    elif state == "ceilings":
        device.measure_ceilings()


def main() -> int:
    ap = point_args(__doc__, "512x3072,512x6144,512x8192")
    ap.add_argument("--rep-ms", type=float, default=20.0)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    rows = []
    for rnd in range(args.rounds):
        for state in ("fresh", "carved", "ceilings", "fresh"):
            _prepare(state)
            for shape in shapes:
                inputs = fam.make_inputs(shape, args.dtype, "cuda", 1234)
                for p in PROVIDERS:
                    fn = fam.providers[p].fn
                    fn(**inputs)
                    out_ptr = fn(**inputs).data_ptr()
                    res = timing.measure_cupti(
                        lambda fn=fn, inputs=inputs: fn(**inputs), host_us=20.0, gpu_us=10.0, rep_ms=args.rep_ms
                    )
                    t = statistics.median(res.cold.busy_us) if res.cold else float("nan")
                    shape_s = "x".join(map(str, shape))
                    rows.append(
                        {
                            "round": rnd,
                            "state": state,
                            "shape": shape_s,
                            "provider": p,
                            "cold_us": t,
                            "x_addr": hex(inputs["x"].data_ptr()),
                            "out_addr": hex(out_ptr),
                        }
                    )
                    print(
                        f"  round {rnd} {state:<9} {shape_s:<9} {p:<14} {t:6.3f}  x@{inputs['x'].data_ptr():#x} out@{out_ptr:#x}",
                        flush=True,
                    )
                del inputs
    print("== median cold busy us per state")
    for shape in shapes:
        shape_s = "x".join(map(str, shape))
        for p in PROVIDERS:
            meds = {
                s: statistics.median(
                    r["cold_us"] for r in rows if (r["shape"], r["provider"], r["state"]) == (shape_s, p, s)
                )
                for s in ("fresh", "carved", "ceilings")
            }
            print(f"  {shape_s:<9} {p:<14}" + "".join(f"  {s} {m:6.3f}" for s, m in meds.items()), flush=True)
    write_csv(args.out / "segment_state.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
