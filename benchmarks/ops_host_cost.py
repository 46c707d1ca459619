"""Host cost of ``kprof.kernels.ops`` against the PyTorch code each op replaces, and a CUDA-graph decode step.

    python benchmarks/ops_host_cost.py --out DIR [--rows 1,8,64] [--calls 200] [--rounds 7]

Part 1, host cost per call (bf16, H100-sized model dimensions: hidden 4096, MLP 11008): for every op at each
row count, ``--calls`` back-to-back calls without synchronising (outputs allocated by each call, as in a
model), host wall time divided by the calls; ``--rounds`` interleaved rounds (the order of the contenders
rotates every round), medians reported. Contenders per op: the Triton path of ``ops.<op>`` (what a model
calls), the registered ``torch.ops.kprof.<op>`` (what a compiled graph calls; shows the dispatcher's own
cost), and the PyTorch code it replaces: the family's eager reference and, where PyTorch has a faster one-call
form (``F.rms_norm``), that too. ``ratio`` is kprof over the faster PyTorch form; it must be <= 1.
Every contender is first checked against the float64 oracle (a failure is reported, not timed).

Part 2, one decode step, norm -> projection -> gated activation, 8 rows x 4096 -> 2 x 11008 -> 11008: time per
step (back-to-back steps, then one synchronise, divided by the steps) for eager PyTorch, torch.compile
(default and ``mode="reduce-overhead"``), kprof ops eager (norm then swiglu; rms_norm_linear then
silu_and_mul), and the same two kprof steps and the PyTorch step captured in a CUDA graph and replayed.

Writes ``DIR/host_cost.csv``, ``DIR/decode_step.csv`` and ``DIR/ops_host_cost.md``; prints both tables.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from bench_common import back_to_back_us, rel_err

HIDDEN, FF = 4096, 11008
DEVICE = "cuda"
KASMINA = (1000, 64)  # seeds, channels per seed


def host_rounds(
    fns: dict[str, Callable[[], Any]], calls: int, rounds: int, timer: Callable[..., float] = back_to_back_us
) -> dict[str, list[float]]:
    """Each fn timed once a round by ``timer(fn, calls)``, for ``rounds`` rounds whose order rotates
    (none for no fns)."""
    samples: dict[str, list[float]] = {n: [] for n in fns}
    names = list(fns)
    for r in range(rounds if names else 0):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(timer(fns[name], calls))
    return samples


def step_us(fn: Callable[[], Any], steps: int) -> float:
    """Time per step, host and GPU together: back-to-back steps, one synchronise at the end."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps * 1e6


def cases(rows: int) -> list[tuple[str, str, dict, dict[str, Callable[[], Any]], Callable[[], Any]]]:
    """(op, shape, tolerance-family, contenders by name, oracle) for one row count."""
    from kprof.kernels import discover, ops
    from kprof.kernels.add_rmsnorm.reference import add_rmsnorm_eager
    from kprof.kernels.gelu_mul.family import gelu_mul_eager
    from kprof.kernels.kasmina.reference import kasmina_vectorised
    from kprof.kernels.rmsnorm.reference import rmsnorm_eager
    from kprof.kernels.rmsnorm_linear.reference import rmsnorm_linear_eager
    from kprof.kernels.silu_mul.family import silu_mul_eager
    from kprof.kernels.swiglu.reference import swiglu_eager

    fams = discover()
    kp = torch.ops.kprof
    out = []

    def add(op: str, family: str, shape: tuple[int, ...], make: Callable[[dict], dict[str, Callable[[], Any]]]) -> None:
        inp = fams[family].make_inputs(shape, "bf16", DEVICE, seed=rows)
        out.append((op, "x".join(map(str, shape)), fams[family], make(inp), lambda: fams[family].oracle(**inp)))

    eps = 1e-6
    add(
        "rms_norm",
        "rmsnorm",
        (rows, HIDDEN),
        lambda i: {
            "kprof ops": lambda: ops.rms_norm(i["x"], i["weight"], eps),
            "kprof torch.ops": lambda: kp.rms_norm(i["x"], i["weight"], eps),
            "torch eager ref": lambda: rmsnorm_eager(i["x"], i["weight"], eps),
            "torch F.rms_norm": lambda: F.rms_norm(i["x"], (HIDDEN,), i["weight"], eps),
        },
    )
    add(
        "fused_add_rms_norm",
        "add_rmsnorm",
        (rows, HIDDEN),
        lambda i: {
            "kprof ops": lambda: ops.fused_add_rms_norm(i["x"], i["residual"], i["weight"], eps),
            "kprof torch.ops": lambda: kp.fused_add_rms_norm(i["x"], i["residual"], i["weight"], eps),
            "torch eager ref": lambda: add_rmsnorm_eager(i["x"], i["residual"], i["weight"], eps),
            "torch add+F.rms_norm": lambda: _add_f_rms(i["x"], i["residual"], i["weight"], eps),
        },
    )
    add(
        "silu_and_mul",
        "silu_mul",
        (rows, 2 * FF),
        lambda i: {
            "kprof ops": lambda: ops.silu_and_mul(i["x"]),
            "kprof torch.ops": lambda: kp.silu_and_mul(i["x"]),
            "torch eager ref": lambda: silu_mul_eager(i["x"]),
        },
    )
    add(
        "gelu_tanh_and_mul",
        "gelu_mul",
        (rows, 2 * FF),
        lambda i: {
            "kprof ops": lambda: ops.gelu_tanh_and_mul(i["x"]),
            "kprof torch.ops": lambda: kp.gelu_tanh_and_mul(i["x"]),
            "torch eager ref": lambda: gelu_mul_eager(i["x"]),
        },
    )
    add(
        "swiglu",
        "swiglu",
        (rows, HIDDEN, FF),
        lambda i: {
            "kprof ops": lambda: ops.swiglu(i["x"], i["w_gate"], i["w_up"]),
            "kprof torch.ops": lambda: kp.swiglu(i["x"], i["w_gate"], i["w_up"]),
            "torch eager ref": lambda: swiglu_eager(i["x"], i["w_gate"], i["w_up"]),
        },
    )
    add(
        "rms_norm_linear",
        "rmsnorm_linear",
        (rows, HIDDEN, HIDDEN),
        lambda i: {
            "kprof ops": lambda: ops.rms_norm_linear(i["x"], i["g"], i["w"], i["b"], eps),
            "kprof torch.ops": lambda: kp.rms_norm_linear(i["x"], i["g"], i["w"], i["b"], eps),
            "torch eager ref": lambda: rmsnorm_linear_eager(i["x"], i["g"], i["w"], i["b"], eps),
            "torch F.rms_norm@w+b": lambda: torch.addmm(i["b"], F.rms_norm(i["x"], (HIDDEN,), i["g"], eps), i["w"]),
        },
    )
    add(
        "kasmina_forward",
        "kasmina",
        (rows, *KASMINA),
        lambda i: {
            "kprof ops": lambda: ops.kasmina_forward(**i),
            "kprof torch.ops": lambda: kp.kasmina_forward(
                i["x"], i["lifecycle"], i["blueprint_id"], i["alpha"], i["weights"], i["bias"], False
            ),
            "torch eager ref": lambda: kasmina_vectorised(**i),
        },
    )
    return out


def _add_f_rms(x: torch.Tensor, r: torch.Tensor, w: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    h = x + r
    return F.rms_norm(h, (h.shape[-1],), w, eps), h


def part1(rows_list: list[int], calls: int, rounds: int) -> list[dict]:
    results = []
    for rows in rows_list:
        for op, shape, fam, contenders, oracle in cases(rows):
            ref = oracle()
            errors, ok = {}, {}
            for name, fn in contenders.items():
                try:
                    for _ in range(3):  # compile, autotune, build the launch plan
                        got = fn()
                    torch.cuda.synchronize()
                    err = rel_err(got, ref)
                    errors[name] = err
                    if err <= 2 * fam.tolerances["bf16"]:
                        ok[name] = fn
                    else:
                        print(f"WRONG {op} {shape} {name}: rel err {err:.2e}", file=sys.stderr)
                except Exception as exc:  # noqa: BLE001 - report and go on: one broken contender must not hide the rest
                    errors[name] = float("nan")
                    print(f"FAILED {op} {shape} {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            med = {n: statistics.median(v) for n, v in host_rounds(ok, calls, rounds).items()}
            torch_best = min((v for n, v in med.items() if n.startswith("torch")), default=float("nan"))
            torch_ref = med.get("torch eager ref", float("nan"))
            for name in contenders:
                us = med.get(name, float("nan"))
                results.append(
                    {
                        "op": op,
                        "shape": shape,
                        "rows": rows,
                        "contender": name,
                        "host_us": round(us, 2),
                        "rel_err": errors.get(name),
                        "ratio_to_ref": round(us / torch_ref, 3) if name.startswith("kprof") else "",
                        "ratio_to_best_torch": round(us / torch_best, 3) if name.startswith("kprof") else "",
                    }
                )
            print(
                f"{op:20s} {shape:16s} " + "  ".join(f"{n}={med.get(n, float('nan')):.1f}" for n in contenders),
                flush=True,
            )
    return results


def part2(steps: int, rounds: int) -> list[dict]:
    from kprof.kernels import ops

    m = 8
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    x = torch.randn(m, HIDDEN, device=DEVICE, generator=gen).to(torch.bfloat16)
    g = (1 + 0.1 * torch.randn(HIDDEN, device=DEVICE, generator=gen)).to(torch.bfloat16)
    wg = (HIDDEN**-0.5 * torch.randn(HIDDEN, FF, device=DEVICE, generator=gen)).to(torch.bfloat16)
    wu = (HIDDEN**-0.5 * torch.randn(HIDDEN, FF, device=DEVICE, generator=gen)).to(torch.bfloat16)
    w_gu = torch.cat([wg, wu], dim=1).contiguous()

    def torch_step() -> torch.Tensor:
        gate, up = (F.rms_norm(x, (HIDDEN,), g, 1e-6) @ w_gu).chunk(2, dim=-1)
        return F.silu(gate) * up

    def kprof_swiglu_step() -> torch.Tensor:
        return ops.swiglu(ops.rms_norm(x, g), wg, wu)

    def kprof_linear_step() -> torch.Tensor:
        return ops.silu_and_mul(ops.rms_norm_linear(x, g, w_gu))

    ref = torch_step().double()
    variants: dict[str, Callable[[], Any]] = {
        "torch eager": torch_step,
        "kprof ops eager (norm, swiglu)": kprof_swiglu_step,
        "kprof ops eager (rms_norm_linear, silu_and_mul)": kprof_linear_step,
    }
    for name, mode in (("torch.compile default", "default"), ("torch.compile reduce-overhead", "reduce-overhead")):
        try:
            fn = torch.compile(torch_step, mode=mode)
            for _ in range(5):
                fn()
            variants[name] = fn
        except Exception as exc:  # noqa: BLE001 - report and go on: one broken step must not hide the rest
            print(f"FAILED {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    for name, step in (
        ("torch CUDA graph", torch_step),
        ("kprof CUDA graph (norm, swiglu)", kprof_swiglu_step),
        ("kprof CUDA graph (rms_norm_linear, silu_and_mul)", kprof_linear_step),
    ):
        try:
            variants[name] = _graphed(step)
        except Exception as exc:  # noqa: BLE001 - report and go on: one step that cannot be graphed must not hide the rest
            print(f"FAILED {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    errors = {}
    for name, fn in list(variants.items()):
        err = float((fn().double() - ref).norm() / ref.norm())
        errors[name] = err
        if err > 2e-2:
            print(f"WRONG decode step {name}: rel err {err:.2e}", file=sys.stderr)
            del variants[name]
    samples = host_rounds(variants, steps, rounds, timer=step_us)
    rows = []
    for name in errors:
        us = statistics.median(samples[name]) if name in samples else float("nan")
        rows.append({"step": name, "us_per_step": round(us, 2), "rel_err": errors[name]})
        print(f"{name:50s} {us:8.1f} us/step", flush=True)
    return rows


def _graphed(step: Callable[[], torch.Tensor]) -> Callable[[], torch.Tensor]:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # compile, autotune and plan outside the capture
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()

    def replay() -> torch.Tensor:
        graph.replay()
        return out

    return replay


def _markdown(host: list[dict], decode: list[dict], header: str) -> str:
    lines = [
        f"# kprof ops: host cost and a CUDA-graph decode step\n\n{header}\n",
        "## Host cost per call (us, median of interleaved rounds; kprof / the family's eager reference, and / the "
        "fastest PyTorch form measured)\n",
        "| op | shape | contender | host us | / eager ref | / fastest torch | rel err |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in host:
        err = "" if r["rel_err"] is None else f"{r['rel_err']:.1e}"
        lines.append(
            f"| {r['op']} | {r['shape']} | {r['contender']} | {r['host_us']} | {r['ratio_to_ref']} | "
            f"{r['ratio_to_best_torch']} | {err} |"
        )
    lines += [
        "",
        "## Decode step, 8 x 4096 -> 11008 (us per step, back-to-back steps)\n",
        "| step | us/step | rel err |",
        "|---|---:|---:|",
    ]
    lines += [f"| {r['step']} | {r['us_per_step']} | {r['rel_err']:.1e} |" for r in decode]
    return "\n".join(lines) + "\n"


def _write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows", default="1,8,64")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("kprof: ops_host_cost.py needs a CUDA GPU (run it on the GPU machine)")
    from kprof.kernels import ops

    ops.use_triton(True)
    args.out.mkdir(parents=True, exist_ok=True)
    import triton

    header = (
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, Triton {triton.__version__}, bf16, "
        f"{args.calls} calls x {args.rounds} rounds"
    )
    print(header, flush=True)
    host = part1([int(r) for r in args.rows.split(",")], args.calls, args.rounds)
    decode = part2(args.steps, args.rounds)
    _write_csv(args.out / "host_cost.csv", host)
    _write_csv(args.out / "decode_step.csv", decode)
    md = _markdown(host, decode, header)
    (args.out / "ops_host_cost.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
