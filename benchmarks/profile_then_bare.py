"""Is a small kernel's slow ``cold`` reading in ``kprof profile`` a state of the process, or of its measurement?

    python benchmarks/profile_then_bare.py --out DIR [--shapes 512x3072,512x8192] [--dtype bf16]

In one process: rmsnorm's ``triton_tuned`` and torch.compile timed bare (``timing.measure_cupti`` on inputs
of their own, as the races do), then ``kprof profile`` of the same points run in this process through its
CLI (store under DIR), then bare again. If the profile reads slower than the bare timings on both sides of
it, its own steps are the cause; if the bare timing after it is as slow, the process is. Prints the three
readings per (shape, provider) and writes DIR/profile_then_bare.csv.
"""

from __future__ import annotations

import statistics
import sys

from bench_common import point_args, write_csv

from kprof import timing
from kprof.kernels import discover
from kprof.store import RunStore

PROVIDERS = ("triton_tuned", "torch_compile")


def bare(fam, shapes: list[tuple[int, ...]], dtype: str, rounds: int = 3) -> dict[tuple[str, str], float]:
    out = {}
    for shape in shapes:
        inputs = fam.make_inputs(shape, dtype, "cuda", 1234)
        for p in PROVIDERS:
            fn = fam.providers[p].fn
            fn(**inputs)
            meds = []
            for _ in range(rounds):
                res = timing.measure_cupti(lambda fn=fn: fn(**inputs), host_us=20.0, gpu_us=10.0, rep_ms=20.0)
                meds.append(statistics.median(res.cold.busy_us) if res.cold else float("nan"))
            out[("x".join(map(str, shape)), p)] = statistics.median(meds)
    return out


def main() -> int:
    ap = point_args(__doc__, "512x3072,512x8192", rounds=None)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    before = bare(fam, shapes, args.dtype)
    store = args.out / "profile.db"
    argv = ["kprof", "profile", "rmsnorm", "--shape", args.shapes, "--dtype", args.dtype]
    argv += ["--provider", ",".join(PROVIDERS), "--profiler", "none", "--no-graph", "--store", str(store)]
    sys.argv = argv
    from kprof.cli import main as kprof_main

    try:
        kprof_main()
    except SystemExit:
        pass
    st = RunStore(store, create=False)
    m = st.metrics(st.runs()["id"].iloc[0]).set_index(["shape", "provider"])
    after = bare(fam, shapes, args.dtype)
    rows = []
    print("== median cold busy us: bare before / kprof profile in this process / bare after")
    for key in before:
        prof = float(m.loc[key, "gpu_time_us"])
        print(f"  {key[0]:<9} {key[1]:<14} {before[key]:6.3f}  {prof:6.3f}  {after[key]:6.3f}", flush=True)
        rows.append(
            {
                "shape": key[0],
                "dtype": args.dtype,
                "provider": key[1],
                "bare_before_us": before[key],
                "profile_us": prof,
                "bare_after_us": after[key],
            }
        )
    write_csv(args.out / "profile_then_bare.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
