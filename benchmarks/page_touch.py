"""Is a small kernel's slow ``cold`` mode the cost of finding its pages' address translations after the flush?

    python benchmarks/page_touch.py --out DIR [--shapes 512x3072,512x6144] [--dtype bf16] [--layouts 8]

The same rmsnorm call timed ``cold`` reads about 0.5 us slower in some processes than in others (3-6 us
calls). The flush reads 200 MB, which evicts the cached translations of the call's pages along with its data.
For each of ``--layouts`` allocation layouts (a spacer of random size allocated first, so x, the weight and
the output land at other addresses) this times each provider with ``timing.measure_cupti``, with
``kprof_page_touch`` reading one byte every 64 KiB of none, one or all of the call's tensors after each
flush. Prints the median cold busy time per layout and touch and writes DIR/page_touch.csv (with each
layout's addresses).
"""

from __future__ import annotations

import functools
import random
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import torch
from bench_common import point_args, write_csv

from kprof import timing
from kprof.kernels import discover

PROVIDERS = ("triton_tuned", "torch_compile")
TOUCHES = ("none", "x", "weight", "out", "all")
MIB = 1 << 20
TOUCH_STRIDE = 64 << 10  # bytes between touched addresses: the smallest GPU page size the driver maps


@functools.cache
def _touch_kernel() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def kprof_page_touch(addrs, n, sink, BLOCK: tl.constexpr):
        # addrs: int64 device addresses, one per TOUCH_STRIDE bytes of each tensor the call uses. One byte is
        # read at each, so the address translations are cached while the data stays in DRAM (a sector per
        # 64 KiB); the sum goes to a sink of one word per program so the loads are kept
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        a = tl.load(addrs + offs, mask=offs < n, other=0)
        v = tl.load(a.to(tl.pointer_type(tl.int8), bitcast=True), mask=offs < n, other=0)
        tl.store(sink + tl.program_id(0), tl.sum(v.to(tl.int32), axis=0))

    return kprof_page_touch


class PageTouch:
    """Reads one byte every ``TOUCH_STRIDE`` bytes of the given tensors through ``kprof_page_touch``:
    after the flush, the call then finds its pages' translations cached."""

    BLOCK = 1024

    def __init__(self, tensors: Sequence[Any]) -> None:
        addrs = [
            t.data_ptr() + off for t in tensors for off in range(0, max(1, t.numel() * t.element_size()), TOUCH_STRIDE)
        ]
        self.n = len(addrs)
        self.addrs = torch.tensor(addrs or [0], dtype=torch.int64, device="cuda")
        self.grid = (max(1, -(-self.n // self.BLOCK)),)
        self.sink = torch.zeros(self.grid[0], dtype=torch.int32, device="cuda")
        self.kernel = _touch_kernel()

    def __call__(self) -> None:
        if self.n:
            self.kernel[self.grid](self.addrs, self.n, self.sink, BLOCK=self.BLOCK, num_warps=4)


def _without_touches(run: Callable[[], None]) -> list[timing.KernelRecord]:
    """The session's records with the touch kernel's taken out, so each cold segment is the call alone."""
    return [r for r in timing.collect_device_records(run) if "kprof_page_touch" not in r.name]


def main() -> int:
    ap = point_args(__doc__, "512x3072,512x6144", rounds=None)
    ap.add_argument("--layouts", type=int, default=8)
    ap.add_argument("--rep-ms", type=float, default=20.0)
    args = ap.parse_args()
    fam = discover()["rmsnorm"]
    rng = random.Random(0)
    rows = []
    for shape_s in args.shapes.split(","):
        shape = tuple(int(v) for v in shape_s.split("x"))
        print(f"== {shape_s} {args.dtype}: median cold busy us per layout; touched after each flush:", flush=True)
        for layout in range(args.layouts):
            spacer = torch.empty(
                rng.randrange(1, 300) * MIB + rng.randrange(0, 64) * 4096, dtype=torch.uint8, device="cuda"
            )
            inputs = fam.make_inputs(shape, args.dtype, "cuda", 1234 + layout)
            for p in PROVIDERS:
                fn = fam.providers[p].fn
                out = fn(**inputs)
                tensors = {"x": [inputs["x"]], "weight": [inputs["weight"]], "out": [out]}
                tensors["all"] = tensors["x"] + tensors["weight"] + tensors["out"]
                where = {k: v[0].data_ptr() for k, v in tensors.items() if k != "all"}
                touches = list(TOUCHES)
                rng.shuffle(touches)
                med = {}
                for t in touches:
                    toucher = PageTouch(tensors.get(t, ()))
                    res = timing.measure_cupti(
                        lambda fn=fn, toucher=toucher: (toucher(), fn(**inputs)),
                        host_us=20.0,
                        gpu_us=10.0,
                        rep_ms=args.rep_ms,
                        collect=_without_touches,
                    )
                    med[t] = statistics.median(res.cold.busy_us) if res.cold else float("nan")
                del out, tensors
                print(
                    f"  layout {layout} {p:<14}"
                    + "".join(f"  {t} {med[t]:6.3f}" for t in TOUCHES)
                    + "   "
                    + " ".join(f"{k}@{v:#x}" for k, v in where.items()),
                    flush=True,
                )
                rows += [
                    {
                        "shape": shape_s,
                        "dtype": args.dtype,
                        "layout": layout,
                        "provider": p,
                        "touch": t,
                        "cold_us": med[t],
                        **{f"{k}_addr": hex(v) for k, v in where.items()},
                    }
                    for t in TOUCHES
                ]
            del spacer
    write_csv(args.out / "page_touch.csv", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
