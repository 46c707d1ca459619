"""Does swiglu's route race decide the same whichever route it times first, and as full-clock cold times do?

    python benchmarks/route_race_order.py --out DIR [--shapes 8192x8192x14336,...] [--dtype bf16] [--races 3]

At large products the power cap holds an H200's SM clock well under its highest, and a route race
(``kernels/lib/routes.py``: each route timed cold with CUDA events in ROUNDS interleaved rounds, no clock read)
decides under it. At 8192x8192x11008 bf16 one race read the tiled kernel 5% faster than cuBLAS's products then
silu_mul, while the harness's full-clock cold times of the same two routes read cuBLAS's 2% faster.

Per shape (M x K x N; swiglu on the weights as given, the two routes the op races from 129 rows, each checked
against the other first):

- ``--races`` fresh races (``RouteRace.race_now``, the op's own timer) with the tiled route first in every round,
  then as many with cuBLAS's route first;
- each route's cold time at full clock (``kprof.timing.cold_time_us``: CUPTI, calls the power cap slowed set
  aside), in 2 rounds of alternating order.

Writes DIR/races.csv (every race: order, each route's median, the route kept) and DIR/clock.csv, after each point.
"""

from __future__ import annotations

import torch
from bench_common import point_args, write_csv

from kprof.kernels.lib import routes
from kprof.kernels.swiglu import tuned
from kprof.kernels.swiglu.cublas_silu import products_then_silu_mul
from kprof.kernels.swiglu.family import make_inputs
from kprof.timing import cold_time_us

SHAPES = "8192x8192x5504,8192x8192x11008,8192x8192x14336,8192x4096x28672"


def route_calls(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> dict:
    """The race's two routes on these inputs, as ``tuned.raced_route`` builds them."""
    y = torch.empty((x.shape[0], w_gate.shape[1]), dtype=x.dtype, device=x.device)

    def tiled() -> torch.Tensor:
        wg, wu = tuned.weights_in_layout(w_gate, w_up, tuned.WEIGHT_LAYOUT)
        tuned.launch_tuned(x, wg, wu, y)
        return y

    return {"tiled": tiled, "cublas": lambda: products_then_silu_mul(x, w_gate, w_up)}


def main() -> int:
    ap = point_args(__doc__, SHAPES, rounds=None)
    ap.add_argument("--races", type=int, default=3, help="races in each order")
    args = ap.parse_args()
    probe = routes.RouteRace("probe: the tiled kernel or cuBLAS's products then silu_mul")
    races, clock = [], []
    for point in args.shapes.split(","):
        shape = tuple(int(d) for d in point.split("x"))
        inputs = make_inputs(shape, args.dtype, "cuda", seed=7)
        calls = route_calls(inputs["x"], inputs["w_gate"], inputs["w_up"])
        a, b = calls["tiled"](), calls["cublas"]()
        err = ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()
        print(f"== {point} {args.dtype}: routes agree to {err:.1e} of max|y|", flush=True)
        for order in (("tiled", "cublas"), ("cublas", "tiled")):
            for i in range(args.races):
                d = probe.race_now((point, order, i), {name: calls[name] for name in order}, "tiled")
                times = dict(d.times_us)
                races.append({"shape": point, "first": order[0], "race": i, **times, "kept": d.chosen})
                print(
                    f"  race, {order[0]} first: tiled {times['tiled']:.1f}, cublas {times['cublas']:.1f} -> {d.chosen}"
                )
        for r, order in enumerate((("tiled", "cublas"), ("cublas", "tiled"))):
            for name in order:
                us, source = cold_time_us(calls[name], rep_ms=150.0)
                clock.append({"shape": point, "round": r, "route": name, "cold_us": us, "source": source})
                print(f"  full clock, round {r}: {name} {us:.1f} us ({source})", flush=True)
        del inputs, calls, a, b
        torch.cuda.empty_cache()
        write_csv(args.out / "races.csv", races)  # after every point: a call cut short keeps what finished
        write_csv(args.out / "clock.csv", clock)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
