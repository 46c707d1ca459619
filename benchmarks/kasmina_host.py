"""Host time per call of kasmina's launch paths: what a model pays on the host for the layer, beside a PyTorch
launch of the same bytes.

Per shape (bf16 unless ``--dtype``), every contender is checked against the float64 oracle (after three calls:
compile, build the plan, reach the compiled launch), then timed as ``ops_host_cost.py`` times: ``--calls``
back-to-back calls without synchronising (outputs allocated by each call), host wall time over the calls, in
``--rounds`` rounds whose order rotates; medians reported. Contenders:

- ``ops``: ``kprof.kernels.ops.kasmina_forward`` with the Triton path on (its launch plan through Triton's C
  launcher; the path is off unless ``KPROF_USE_TRITON=1`` or ``ops.use_triton(True)``, as here). The ``route`` column
  says which kernel its plan launches (``tma``: ``kasmina.tma``'s, whose encoded descriptors the plan keeps by x's
  and y's addresses; ``stacked``: ``kasmina.stacked``'s, at a few rows; ``branch_free``); ``--tma-floor N`` sets
  ``tma.TMA_MIN_ELEMENTS`` (the smallest x the route takes) for the run, so the TMA route can be timed below the
  floor the ops API ships;
- ``ops, x at new addresses``: the same, x rotating over 65 copies of it (one more than a plan keeps pairs of
  addresses), so that on the TMA route no call finds its pair kept (each makes and encodes its descriptors: what a
  caller pays whose buffers never repeat);
- ``provider``: the ``triton_telemetry`` provider, what ``kprof profile`` and ``kprof grid`` time;
- ``checked launch``: ``branch_free.launch`` (the input checks, the configuration and the JIT's launch, every call);
- ``baseline ops``: with ``--baseline FILE``, the ``kasmina`` function of another revision's plan module, loaded
  beside this one (``git show REV:kernels/kasmina/op_plan.py > FILE``; ``kernels/lib/fastops.py`` before each
  family kept its op's plan);
- ``copy x``: ``torch.empty_like(x).copy_(x)``, one PyTorch allocation and launch (a floor for any op);
- ``torch eager ref``: the family's vectorised PyTorch code.

    python benchmarks/kasmina_host.py --out DIR [--shapes 1x1000x64,...] [--dtype bf16] [--baseline FILE]
        [--tma-floor N] [--with-gpu]

``--with-gpu`` times each contender as ``ops_host_cost.step_us`` does instead (back-to-back calls, one synchronise at
the end: host and GPU together, what a loop of calls without a CUDA graph waits for).

Writes DIR/kasmina_host.csv and prints one line per shape.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from bench_common import new_addresses, write_csv
from ops_host_cost import host_rounds, rel_err, step_us

from kprof.kernels import discover, ops
from kprof.kernels.kasmina import branch_free, op_plan, tma
from kprof.kernels.kasmina.reference import kasmina_vectorised
from kprof.launch import DescribedLaunch

DEFAULT_SHAPES = "1x1000x64,8x1000x64,64x1000x64,64x100x64,512x1000x64,64x250x256"


def load_baseline(path: Path) -> Callable[..., Any]:
    """The ``kasmina`` function of a plan module file (another revision's), as a module of its own."""
    spec = importlib.util.spec_from_file_location("baseline_op_plan", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kasmina


def contenders(inp: dict, baseline: Callable[..., Any] | None) -> dict[str, Callable[[], Any]]:
    provider = discover()["kasmina"].providers["triton_telemetry"].fn
    new_x = new_addresses(inp["x"])
    found = {
        "ops": lambda: ops.kasmina_forward(**inp),
        "ops, x at new addresses": lambda: ops.kasmina_forward(**{**inp, "x": new_x()}),
        "provider": lambda: provider(**inp),
        "checked launch": lambda: branch_free.launch(**inp, telemetry=True),
        "copy x": lambda: torch.empty_like(inp["x"]).copy_(inp["x"]),
        "torch eager ref": lambda: kasmina_vectorised(**inp),
    }
    if baseline is not None:
        found["baseline ops"] = lambda: baseline(**inp)
    return found


def route(x: Any) -> str:
    """Which kernel the ops API's plan for a call on ``x`` launches (after the calls that built it)."""
    for key, plan in op_plan.PLANS.plans.items():
        if key[0] == x.shape and key[2] == x.dtype:
            if type(plan) is op_plan.TmaPlan:
                return "tma (descriptors kept)" if isinstance(plan.launch.described(), DescribedLaunch) else "tma"
            return "stacked" if type(plan) is op_plan.StackedPlan else "branch_free"
    return "checked"


def run_shape(
    shape: tuple[int, ...], dtype: str, calls: int, rounds: int, baseline: Callable | None, with_gpu: bool
) -> list[dict]:
    fam = discover()["kasmina"]
    inp = fam.make_inputs(shape, dtype, "cuda", seed=sum(shape))
    ref = fam.oracle(**inp)
    ok, errors = {}, {}
    for name, fn in contenders(inp, baseline).items():
        for _ in range(3):
            got = fn()
        torch.cuda.synchronize()
        if name == "copy x":  # not the layer: checked to copy x exactly
            errors[name] = 0.0 if torch.equal(got, inp["x"]) else float("inf")
        else:
            errors[name] = rel_err(got, ref)
        if errors[name] <= fam.tolerances[dtype]:
            ok[name] = fn
        else:
            print(f"WRONG {shape} {name}: rel err {errors[name]:.2e}", file=sys.stderr)
    samples = host_rounds(ok, calls, rounds, step_us) if with_gpu else host_rounds(ok, calls, rounds)
    label = "x".join(map(str, shape))
    rows = [
        {
            "shape": label,
            "dtype": dtype,
            "contender": name,
            "route": route(inp["x"]) if name.startswith("ops") else "",
            "timer": "host and GPU" if with_gpu else "host",
            "host_us": round(statistics.median(samples[name]), 2) if name in samples else "",
            "rounds": " ".join(f"{v:.2f}" for v in samples.get(name, [])),
            "rel_err": errors[name],
        }
        for name in errors
    ]
    print(f"{dtype} {label:12s} " + "  ".join(f"{r['contender']}={r['host_us']}" for r in rows), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument(
        "--baseline", type=Path, help="another revision's kernels/kasmina/op_plan.py, timed beside this one"
    )
    ap.add_argument("--tma-floor", type=int, help="tma.TMA_MIN_ELEMENTS for this run (the TMA route's smallest x)")
    ap.add_argument("--with-gpu", action="store_true", help="time host and GPU together (one synchronise per round)")
    args = ap.parse_args()
    if args.tma_floor is not None:
        tma.TMA_MIN_ELEMENTS = args.tma_floor
    baseline = load_baseline(args.baseline) if args.baseline else None
    ops.use_triton(True)
    rows: list[dict] = []
    for s in args.shapes.split(","):
        shape = tuple(int(v) for v in s.split("x"))
        rows += run_shape(shape, args.dtype, args.calls, args.rounds, baseline, args.with_gpu)
        write_csv(args.out / "kasmina_host.csv", rows)


if __name__ == "__main__":
    main()
