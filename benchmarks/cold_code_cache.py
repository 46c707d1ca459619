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
VARIANTS = ("cold", "code", "idle", "cool", "tlb")
TLB_BYTES = 32 << 30  # pages touched by the ``tlb`` variant: 16384 pages of 2 MiB, more than the TLBs map
PAGE = 2 << 20


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
        for r in recs:
            if "kprof_l2_flush_read" in r.name:
                cur = []
                per_call.append(cur)
            elif "sleep" in r.name or "spin" in r.name:
                spins.append(r.duration_ns)
                cur = None
            elif "kprof_code_evict" not in r.name and "kprof_tlb_touch" not in r.name and cur is not None:
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
    df = df.join(ncu_times(args.out, families), how="left")
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
    text = df[cols].round(3).to_markdown() if hasattr(df, "to_markdown") else df[cols].round(3).to_string()
    (args.out / "cold_code.md").write_text(text + "\n")
    print(df[cols].round(3).to_string())


def ncu_times(out: Path, families: set[str]) -> pd.DataFrame:
    """Median ncu gpu__time_duration per case, and ncu's overhead at the case's grid (empty kernel)."""
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
        csv_path = out / f"ncu_{family}.csv"
        argv = ncu_mod.profile_command(ncu.path, child_argv(spec), csv_path)
        argv[1:1] = ["--cache-control", "all"]
        r = run_tool(argv, timeout=400, cwd=out, log_prefix=f"ncu_{family}")
        if not r.ok:
            print(r.describe(), file=sys.stderr)
            continue
        launches = ncu_mod.parse(csv_path)
        times = case_kernel_times(launches).groupby("case")["median_us"].sum()
        blocks = launches["grid_x"].fillna(1) * launches["grid_y"].fillna(1) * launches["grid_z"].fillna(1)
        grid = blocks.groupby(launches["case"]).max()
        frames.append(pd.DataFrame({"ncu": times, "grid": grid}))
    df = pd.concat(frames) if frames else pd.DataFrame(columns=["ncu", "grid"])
    df["ncu_overhead"] = [empty_overhead(out, g, "kprof_empty") for g in df["grid"]]
    df["ncu_touch_overhead"] = [empty_overhead(out, g, "kprof_touch") for g in df["grid"]]
    return df


_EMPTY: dict[str, float] = {}


def empty_overhead(out: Path, grid, kernel: str) -> float:
    """ncu's time for ``kernel`` (empty, or touching one word per block) at ``grid`` blocks minus its cold
    CUPTI time (measured once per grid and kernel)."""
    blocks = int(grid) if pd.notna(grid) else 1
    key = f"{kernel}/{blocks}"
    if key not in _EMPTY:
        _EMPTY[key] = _measure_empty(out, blocks, kernel)
    return _EMPTY[key]


def _measure_empty(out: Path, blocks: int, kernel: str) -> float:
    import subprocess

    from kprof.tools import find_tool

    here = str(Path(__file__).parent)
    code = (
        f"import sys, torch; sys.path.insert(0, {here!r}); import cold_code_cache as c; k = c._{kernel}_kernel(); "
        f"b = torch.zeros({blocks}, device='cuda', dtype=torch.int32)\n"
        f"for _ in range(5): k[({blocks},)](b)\n"
        "torch.cuda.synchronize()"
    )
    csv_path = out / f"ncu_{kernel}_{blocks}.csv"
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
            "all",
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
    cold_us, _ = timing.cold_time_us(lambda: k[(blocks,)](b), rep_ms=50)
    return ncu_us - cold_us


if __name__ == "__main__":
    main()
