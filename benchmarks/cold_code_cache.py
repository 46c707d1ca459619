"""Why kprof's ``cold`` time reads small kernels 0.1-0.7 us below ncu's (after ncu's fixed overhead), tested.

    python benchmarks/cold_code_cache.py --out DIR [--variants cold,code,idle,cool,tlb] [--families rmsnorm,...]

``cold`` leaves L2 cold and clean before each call (kprof's read-only flush) and reads the kernel's time from
CUPTI. ``ncu --cache-control all`` also invalidates the SMs' instruction and constant caches and runs every
kernel on an idle GPU. Two hypotheses, one variant each, on single-kernel cases under 10 us:

* ``code``: the call's code is not in any cache either. A kernel of about 128 KiB of straight-line code runs
  on every SM between the flush and the call, so the SMs' instruction caches hold that code, not the call's,
  and the flush already took the call's code out of L2.
* ``idle``: the GPU has been idle for 1 ms before the call (ncu serialises and replays with gaps); ``cool``:
  50 ms (the clock recovers from sustained load).
* ``warm``: no flush at all, against ncu replaying with ``--cache-control none`` (``--ncu-cache none``): if
  ncu minus its empty-kernel overhead still reads more than CUPTI when neither side touches the caches, the
  gap is ncu's own cost per kernel, which an empty kernel does not calibrate, not the cold state.
* ``tlb``: the address translations are cold too. Before the flush, a kernel reads one word from each 2 MiB
  page of a 32 GiB buffer, so the TLBs hold those pages; the flush then takes the page-table lines out
  of L2 as well.

Per case and variant, ``--calls`` calls each preceded by kprof's spin kernel and flush, inside one
torch.profiler session; the call's kernel duration from CUPTI, medians. Then the same cases replayed under
``ncu --cache-control all --clock-control none`` (kprof's replay child), ncu's fixed overhead per kernel
measured on an empty kernel at the case's grid in the same ncu session, subtracted. Writes DIR/cold_code.csv
and DIR/cold_code.md; prints the table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
import torch

CASES = [
    ("rmsnorm", p, s)
    for p in ("triton_tuned", "triton_one_row", "torch_F")
    for s in ((1, 4096), (64, 4096), (1, 8192), (512, 4096), (4096, 1024))
]
CASES += [("silu_mul", "triton_tuned", s) for s in ((1, 11008), (64, 11008), (512, 4096))]
CASES += [("swiglu", "triton_tuned", s) for s in ((16, 4096, 11008), (8192, 4096, 11008))]
EVICT_UNROLL = 8192  # ~16 B per instruction: ~128 KiB of code, more than an SM's instruction caches hold


def _evict_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def kprof_code_evict(ptr, N: tl.constexpr):
        # a long chain of distinct floating-point instructions (each adds its own constant): straight-line
        # code the compiler can neither fold nor loop
        pid = tl.program_id(0)
        x = tl.load(ptr + pid)
        for i in tl.static_range(N):
            x = x * 1.0000001 + (i * 0.5 + 0.25)
        tl.store(ptr + pid, x)

    return kprof_code_evict


def _empty_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def kprof_empty(ptr):
        pid = tl.program_id(0)
        tl.store(ptr + pid, pid, mask=pid < 0)

    return kprof_empty


def _kprof_empty_kernel():
    return _empty_kernel()


def _kprof_touch_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def kprof_touch(ptr):
        # one load and one store per block: the least work that goes through the memory system
        pid = tl.program_id(0)
        v = tl.load(ptr + pid)
        tl.store(ptr + pid, v + 1)

    return kprof_touch


def case_fn(family: str, provider: str, shape: tuple[int, ...]):
    from kprof.kernels import discover

    fam = discover()[family]
    inputs = fam.make_inputs(shape, "bf16", "cuda", 7)
    fn = fam.providers[provider].fn
    return lambda: fn(**inputs)


SPIN_CYCLES = 20000
VARIANTS = ("cold", "code", "idle", "cool", "tlb", "warm")
TLB_BYTES = 32 << 30  # pages touched by the ``tlb`` variant: 16384 pages of 2 MiB, more than the TLBs map
PAGE = 2 << 20
HELPERS = ("kprof_l2_flush_read", "kprof_code_evict", "kprof_tlb_touch")  # kernels the variants add


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _tlb_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def kprof_tlb_touch(ptr, n_pages, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
        # one load per 2 MiB page of a large zero buffer: every page's translation is looked up, so the
        # translation caches end up holding these pages, not the call's; the masked store never fires
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n_pages
        ptrs = ptr + offs.to(tl.int64) * STRIDE
        v = tl.load(ptrs, mask=mask, other=0)
        tl.store(ptrs, v, mask=mask & (v != 0))

    return kprof_tlb_touch


def cold_variants(fn, calls: int, evict, evict_buf, sms: int, variants=VARIANTS, tlb=None) -> dict[str, float]:
    """Median per-call time (sum of the call's kernels, us) per variant, and the SM clock the spin kernel
    before each call ran at (GHz: its cycles over its CUPTI duration)."""
    from kprof import timing

    fl = timing.flush()
    out = {}
    for variant in variants:

        def session(variant=variant) -> None:
            for _ in range(calls):
                torch.cuda._sleep(SPIN_CYCLES)
                if variant == "tlb":  # before the flush, which then also evicts the page-table lines from L2
                    tlb()
                if variant != "warm":
                    fl()
                if variant == "code":
                    evict[(sms * 4,)](evict_buf, N=EVICT_UNROLL, num_warps=1)
                if variant in ("idle", "cool"):
                    torch.cuda.synchronize()
                    time.sleep(1e-3 if variant == "idle" else 50e-3)
                fn()

        fn()
        torch.cuda.synchronize()
        recs = timing.collect_device_records(session)
        per_call, spins, cur = [], [], None
        for r in recs:  # every call follows one spin kernel; what runs between them but the call is not counted
            if "sleep" in r.name or "spin" in r.name:
                spins.append(r.duration_ns)
                cur = []
                per_call.append(cur)
            elif not any(k in r.name for k in HELPERS) and cur is not None:
                cur.append(r.duration_ns)
        sums = [sum(c) for c in per_call if c]
        out[variant] = statistics.median(sums) / 1e3 if len(sums) == calls else float("nan")
        out[f"{variant}_kernels"] = statistics.median(len(c) for c in per_call) if per_call else 0
        out[f"{variant}_clock_ghz"] = SPIN_CYCLES / statistics.median(spins) if spins else float("nan")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--families", default="rmsnorm,silu_mul,swiglu")
    ap.add_argument("--ncu-cache", default="all", help="ncu --cache-control values to replay with: all,none")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    variants = tuple(v for v in args.variants.split(",") if v)
    if "cold" not in variants:
        variants = ("cold", *variants)
    families = set(args.families.split(","))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tlb = None
    if "tlb" in variants:
        big = torch.zeros(TLB_BYTES // 4, dtype=torch.int32, device="cuda")
        n_pages, kernel = TLB_BYTES // PAGE, _tlb_kernel()

        def tlb() -> None:
            kernel[(triton_cdiv(n_pages, 1024),)](big, n_pages, STRIDE=PAGE // 4, BLOCK=1024)

    evict, buf = _evict_kernel(), torch.rand(sms * 4, device="cuda")
    t0 = time.perf_counter()
    evict[(sms * 4,)](buf, N=EVICT_UNROLL, num_warps=1)
    torch.cuda.synchronize()
    print(f"evict kernel compiled and run in {time.perf_counter() - t0:.1f} s", flush=True)
    rows = []
    for family, provider, shape in [c for c in CASES if c[0] in families]:
        fn = case_fn(family, provider, shape)
        r = cold_variants(fn, args.calls, evict, buf, sms, variants, tlb)
        rows.append({"case": f"{family}/{provider}/{'x'.join(map(str, shape))}/bf16", **r})
        print(rows[-1], flush=True)
    df = pd.DataFrame(rows).set_index("case")
    caches = args.ncu_cache.split(",")
    for cache in caches:
        df = df.join(ncu_times(args.out, families, cache), how="left")
    if "none" in caches and "warm" in variants:  # same question without any flush: warm CUPTI vs ncu
        df["ncu_none_minus_overhead"] = df["ncu_none"] - df["ncu_overhead_none"] * df["warm_kernels"]
        df["warm-ncu_none"] = df["warm"] - df["ncu_none_minus_overhead"]
    df["ncu_minus_overhead"] = df["ncu"] - df["ncu_overhead"] * df["cold_kernels"]  # ncu pays it per kernel
    for v in variants:
        df[f"{v}-ncu"] = df[v] - df["ncu_minus_overhead"]
    df["cold-ncu_touch"] = df["cold"] - (df["ncu"] - df["ncu_touch_overhead"] * df["cold_kernels"])
    df.to_csv(args.out / "cold_code.csv")
    cols = [
        *variants,
        "ncu",
        "ncu_overhead",
        "ncu_touch_overhead",
        "cold_kernels",
        *(f"{v}-ncu" for v in variants),
        "cold-ncu_touch",
        "cold_clock_ghz",
    ]
    cols += [c for c in ("ncu_none", "ncu_overhead_none", "warm-ncu_none") if c in df]
    text = df[cols].round(3).to_markdown() if hasattr(df, "to_markdown") else df[cols].round(3).to_string()
    (args.out / "cold_code.md").write_text(text + "\n")
    print(df[cols].round(3).to_string())


def ncu_times(out: Path, families: set[str], cache: str = "all") -> pd.DataFrame:
    """Median ncu gpu__time_duration per case, and ncu's overhead at the case's grid (empty kernel), with
    ncu's ``--cache-control`` as given; columns for ``none`` carry a ``_none`` suffix."""
    from kprof.analysis import case_kernel_times
    from kprof.profilers import ncu as ncu_mod
    from kprof.replay import ReplayCase, ReplaySpec, child_argv, write_spec
    from kprof.tools import find_tool, run_tool

    ncu = find_tool("ncu")
    frames = []
    for family in sorted({c[0] for c in CASES} & families):
        cases = tuple(
            ReplayCase(f"{f}/{p}/{'x'.join(map(str, s))}/bf16", p, s, "bf16", 7) for f, p, s in CASES if f == family
        )
        spec = write_spec(ReplaySpec(family, cases, repeats=5, marker="nvtx"), out / f"spec_{family}.json")
        csv_path = out / f"ncu_{family}_{cache}.csv"
        argv = ncu_mod.profile_command(ncu.path, child_argv(spec), csv_path)
        argv[1:1] = ["--cache-control", cache]
        r = run_tool(argv, timeout=400, cwd=out, log_prefix=f"ncu_{family}_{cache}")
        if not r.ok:
            print(r.describe(), file=sys.stderr)
            continue
        launches = ncu_mod.parse(csv_path)
        times = case_kernel_times(launches).groupby("case")["median_us"].sum()
        blocks = launches["grid_x"].fillna(1) * launches["grid_y"].fillna(1) * launches["grid_z"].fillna(1)
        grid = blocks.groupby(launches["case"]).max()
        frames.append(pd.DataFrame({"ncu": times, "grid": grid}))
    df = pd.concat(frames) if frames else pd.DataFrame(columns=["ncu", "grid"])
    df["ncu_overhead"] = [empty_overhead(out, g, "kprof_empty", cache) for g in df["grid"]]
    df["ncu_touch_overhead"] = [empty_overhead(out, g, "kprof_touch", cache) for g in df["grid"]]
    return df if cache == "all" else df.add_suffix("_none")


_EMPTY: dict[str, float] = {}


def empty_overhead(out: Path, grid, kernel: str, cache: str = "all") -> float:
    """ncu's time for ``kernel`` (empty, or touching one word per block) at ``grid`` blocks minus its CUPTI
    time in the matching state: cold for ``--cache-control all``, warm (back to back) for ``none``
    (measured once per grid, kernel and cache control)."""
    blocks = int(grid) if pd.notna(grid) else 1
    key = f"{kernel}/{blocks}/{cache}"
    if key not in _EMPTY:
        _EMPTY[key] = _measure_empty(out, blocks, kernel, cache)
    return _EMPTY[key]


def _measure_empty(out: Path, blocks: int, kernel: str, cache: str) -> float:
    import subprocess

    from kprof.tools import find_tool

    here = str(Path(__file__).parent)
    code = (
        f"import sys, torch; sys.path.insert(0, {here!r}); import cold_code_cache as c; k = c._{kernel}_kernel(); "
        f"b = torch.zeros({blocks}, device='cuda', dtype=torch.int32)\n"
        f"for _ in range(5): k[({blocks},)](b)\n"
        "torch.cuda.synchronize()"
    )
    csv_path = out / f"ncu_{kernel}_{blocks}_{cache}.csv"
    ncu = find_tool("ncu").path
    subprocess.run(
        [
            ncu,
            "--csv",
            "--page",
            "raw",
            "--print-units",
            "base",
            "--log-file",
            str(csv_path),
            "--metrics",
            "gpu__time_duration.sum",
            "--cache-control",
            cache,
            "--clock-control",
            "none",
            "-k",
            f"regex:{kernel}",
            sys.executable,
            "-c",
            code,
        ],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    from kprof.profilers import ncu as ncu_mod

    ncu_us = float(ncu_mod.parse(csv_path)["duration_ns"].median()) / 1e3
    from kprof import timing

    k = globals()[f"_{kernel}_kernel"]()
    b = torch.zeros(blocks, device="cuda", dtype=torch.int32)
    res = timing.measure_cupti(lambda: k[(blocks,)](b), host_us=20.0, gpu_us=2.0, rep_ms=50)
    state = res.cold if cache == "all" else res.warm
    return ncu_us - timing.median(state.busy_us)


if __name__ == "__main__":
    main()
