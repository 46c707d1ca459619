"""Measure the launch configurations the catalog's tuned versions choose from, on the GPU (bf16).

    python benchmarks/tune_catalog.py OUT_DIR [--quick]

Each race times its contenders in interleaved rounds (A B C A B C ...) with the harness's GPU timer
(L2 flushed, GPU-side spin so host time cannot leak in); medians in microseconds. Writes
``tune_memory_bound.csv`` (add_rmsnorm rows x warps, gated tiles, kasmina tiles) and
``matrix_races.csv`` (autotuned swiglu with [d, ff] vs transposed weights, rmsnorm_linear versions, against cuBLAS) to OUT_DIR.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import print_race, race_rows, write_csv  # noqa: E402

from kprof.harness import BenchSettings, race  # noqa: E402
from kprof.kernels import discover  # noqa: E402


def check(name: str, fam, inputs: dict, out) -> None:
    refs = fam.oracle(**inputs)
    refs = refs if isinstance(refs, tuple) else (refs,)
    out = out if isinstance(out, tuple) else (out,)
    for o, r in zip(out, refs, strict=True):
        err = float((o.double() - r).norm() / r.norm())
        assert err < fam.tolerances["bf16"], f"{name}: rel err {err:.2e}"


def add_rmsnorm_races(settings: BenchSettings, rows: list[dict]) -> None:
    from kprof.kernels.add_rmsnorm import tuned

    fam = discover()["add_rmsnorm"]
    for shape in [(4096, 1024), (4096, 4096), (16384, 4096), (32768, 8192), (8192, 16384)]:
        inp = fam.make_inputs(shape, "bf16", "cuda", 1)
        x2d, r2d, w = inp["x"], inp["residual"], inp["weight"]
        y, h = torch.empty_like(x2d), torch.empty_like(x2d)
        n = shape[-1]
        fns = {}
        for nr, warps in itertools.product([1, 2, 4], [4, 8, 16]):
            if nr * n * 2 > 64 * 1024:
                continue
            cfg = tuned.Config("rows", triton_pow2(n), nr, warps)
            fns[f"rows={nr} warps={warps}"] = lambda c=cfg: tuned.launch_with_config(c, x2d, r2d, w, y, h, 1e-6)
        for chunk, warps in itertools.product([4096, 8192], [8, 16]):
            cfg = tuned.Config("looped", min(chunk, triton_pow2(n)), 1, warps)
            fns[f"looped chunk={chunk} warps={warps}"] = lambda c=cfg: tuned.launch_with_config(
                c, x2d, r2d, w, y, h, 1e-6
            )
        fns["[chosen]"] = lambda: fam.providers["triton_tuned"].fn(**inp, out=(y, h))
        for name, fn in fns.items():
            fn()
            check(name, fam, inp, (y, h))
        times = race(fns, settings, rounds=2)
        print_race(f"add_rmsnorm {shape}", times)
        rows += [dict(family="add_rmsnorm", **r) for r in race_rows("x".join(map(str, shape)), times)]


def triton_pow2(n: int) -> int:
    import triton

    return triton.next_power_of_2(n)


def gated_races(settings: BenchSettings, rows: list[dict]) -> None:
    from kprof.kernels.gelu_mul.kernels import KERNELS as GELU_MUL
    from kprof.kernels.lib import gated
    from kprof.kernels.silu_mul.kernels import KERNELS as SILU_MUL

    for name, kernels in (("silu_mul", SILU_MUL), ("gelu_mul", GELU_MUL)):
        fam = discover()[name]
        for shape in [(64, 22016), (4096, 8192), (16384, 22016)]:
            inp = fam.make_inputs(shape, "bf16", "cuda", 2)
            x2d = inp["x"]
            y = torch.empty(shape[0], shape[1] // 2, dtype=x2d.dtype, device="cuda")
            fns = {}
            for block_b, tile_b, warps, hints in itertools.product(
                [2048, 4096, 8192], [4096, 8192, 16384], [4, 8], [True, False]
            ):
                if tile_b < block_b or (not hints and (block_b, tile_b) != (4096, 8192)):
                    continue
                block_h = min(triton_pow2(shape[1] // 2), block_b // 2)
                nr = max(1, tile_b // (block_h * 2))
                cfg = gated.Config(block_h, nr, warps, hints)
                fns[f"block={block_h} rows={nr} w={warps} h={int(hints)}"] = lambda c=cfg: gated.launch_tile(
                    kernels, c, x2d, y
                )
            fns["[chosen]"] = lambda: fam.providers["triton_tuned"].fn(**inp, out=y)
            fns["[one_row]"] = lambda: fam.providers["triton_one_row"].fn(**inp, out=y)
            fns["[tiled]"] = lambda: fam.providers["triton_tiled"].fn(**inp, out=y)
            for fname, fn in fns.items():
                fn()
                check(fname, fam, inp, y)
            times = race(fns, settings, rounds=2)
            print_race(f"{name} {shape}", times, top=6)
            rows += [dict(family=name, **r) for r in race_rows("x".join(map(str, shape)), times)]


def kasmina_races(settings: BenchSettings, rows: list[dict]) -> None:
    from kprof.kernels.kasmina.branch_free import launch

    fam = discover()["kasmina"]
    for shape in [(64, 1000, 64), (512, 1000, 64)]:
        inp = fam.make_inputs(shape, "bf16", "cuda", 3)
        fns = {}
        for block_b, warps in itertools.product([16, 32, 64], [2, 4, 8]):
            fns[f"tiles block_b={block_b} w={warps}"] = lambda b=block_b, nw=warps: launch(
                **inp, telemetry=False, block_b=b, num_warps=nw
            )
            fns[f"telemetry block_b={block_b} w={warps}"] = lambda b=block_b, nw=warps: launch(
                **inp, telemetry=True, block_b=b, num_warps=nw
            )
        for fname in ("triton_branch_free", "triton_telemetry", "torch_vectorised"):
            fns[f"[{fname}]"] = lambda f=fam.providers[fname].fn: f(**inp)
        times = race(fns, settings, rounds=2)
        print_race(f"kasmina {shape}", times, top=8)
        rows += [dict(family="kasmina", **r) for r in race_rows("x".join(map(str, shape)), times)]


def matrix_races(settings: BenchSettings, rows: list[dict]) -> None:
    from kprof.kernels.swiglu import tuned

    sw = discover()["swiglu"]
    for shape in [(2048, 2048, 5504), (8192, 4096, 11008), (16, 4096, 11008)]:
        inp = sw.make_inputs(shape, "bf16", "cuda", 4)
        fns = {}
        for layout in ("kn", "nk"):
            wg, wu = tuned.weights_in_layout(inp["w_gate"], inp["w_up"], layout)
            x = inp["x"]
            y = torch.empty(shape[0], shape[2], dtype=x.dtype, device="cuda")
            fns[f"tuned layout={layout}"] = lambda a=wg, b=wu, xx=x, yy=y: tuned.launch_tuned(xx, a, b, yy)
            fns[f"tuned layout={layout}"]()
            check(layout, sw, inp, y)
            print(f"swiglu {shape} layout={layout}: autotuner chose {tuned.best_config()}", flush=True)
        for p in ("cublas_gate_up", "triton_tiled", "torch_compile", "torch_eager"):
            fns[f"[{p}]"] = lambda f=sw.providers[p].fn: f(**inp)
        times = race(fns, settings, rounds=3)
        print_race(f"swiglu {shape}", times, top=10)
        rows += [dict(family="swiglu", **r) for r in race_rows("x".join(map(str, shape)), times)]
    rl = discover()["rmsnorm_linear"]
    from kprof.kernels.rmsnorm_linear import fused

    for shape in [(8, 4096, 4096), (2048, 4096, 4096), (8192, 4096, 4096)]:
        inp = rl.make_inputs(shape, "bf16", "cuda", 5)
        fns = {f"[{p}]": (lambda f=rl.providers[p].fn: f(**inp)) for p in rl.providers}
        for k in fns:
            fns[k]()
        print(f"rmsnorm_linear {shape}: autotuner chose {getattr(fused.autotuned, 'best_config', None)}", flush=True)
        times = race(fns, settings, rounds=3)
        print_race(f"rmsnorm_linear {shape}", times, top=10)
        rows += [dict(family="rmsnorm_linear", **r) for r in race_rows("x".join(map(str, shape)), times)]


def main() -> None:
    out = Path(sys.argv[1])
    settings = BenchSettings(rep_ms=50 if "--quick" in sys.argv else 100)
    which = [a for a in sys.argv[2:] if not a.startswith("--")] or ["memory", "matrix"]
    if "memory" in which:
        rows: list[dict] = []
        for step in (add_rmsnorm_races, gated_races, kasmina_races):
            step(settings, rows)
            write_csv(out / "tune_memory_bound.csv", rows)
    if "matrix" in which:
        rows = []
        matrix_races(settings, rows)
        write_csv(out / "matrix_races.csv", rows)


if __name__ == "__main__":
    main()
