"""Host time a call of the ops whose wide rows take a meeting kernel or the split path, with the workspace of partial
sums kept per stream (as shipped: ``launching.meeting_buffers``, ``partials_workspace``) against one allocated per call
(as before), interleaved.

    python benchmarks/meeting_workspace_host.py [--rounds 15] [--calls 400]

Each round times ``--calls`` calls of each arm back to back without synchronising (the wall time a call, as the
harness's host column), the arms in turn; the table gives each arm's median over the rounds and the ratio of the
medians. The per-call arm wraps ``split_rows.meeting_buffers`` and ``split_rows.partials_workspace`` so that they hand
out a new ``torch.empty`` workspace on every call: what the planned launches allocated before the workspace was kept
(the split plan's lock is held in both arms). Few rows of 17001-131072 take the split path, hundreds the meeting
kernels. GPU only.
"""

from __future__ import annotations

import argparse
import statistics

import torch
from bench_common import back_to_back_us

from kprof.kernels import ops
from kprof.kernels.lib import split_rows

KEPT = split_rows.meeting_buffers, split_rows.partials_workspace


def per_call(t: torch.Tensor, count: int, partials: int) -> tuple[torch.Tensor, int, torch.Tensor]:
    """The kept counters and ticket base, and a workspace allocated for this call."""
    counters, base, _ = KEPT[0](t, count, partials)
    return counters, base, torch.empty(partials, dtype=torch.float32, device=t.device)


def split_per_call(t: torch.Tensor, partials: int) -> torch.Tensor:
    """A workspace allocated for this call."""
    return torch.empty(partials, dtype=torch.float32, device=t.device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    ops.use_triton(True)
    dt, dev = torch.bfloat16, "cuda"
    cases = []
    for rows, n in ((512, 65536), (256, 131072), (2048, 65536), (1, 65536), (8, 131072)):
        x, w = torch.randn(rows, n, device=dev, dtype=dt), torch.randn(n, device=dev, dtype=dt)
        cases.append((f"rms_norm {rows}x{n}", lambda x=x, w=w: ops.rms_norm(x, w, 1e-6)))
    for rows, n in ((64, 65536), (64, 131072), (512, 65536), (1, 65536), (8, 131072), (2, 17001)):
        x, r = torch.randn(rows, n, device=dev, dtype=dt), torch.randn(rows, n, device=dev, dtype=dt)
        w = torch.randn(n, device=dev, dtype=dt)
        cases.append((f"fused_add_rms_norm {rows}x{n}", lambda x=x, r=r, w=w: ops.fused_add_rms_norm(x, r, w, 1e-6)))
    print("| op (bf16) | kept µs | per call µs | kept / per call |\n|---|---:|---:|---:|")
    for name, fn in cases:
        times: dict[str, list[float]] = {"kept": [], "per call": []}
        for _ in range(3):
            fn()  # the plan made, the kernel compiled
        for _ in range(args.rounds):
            for arm, buffers in (("kept", KEPT), ("per call", (per_call, split_per_call))):
                split_rows.meeting_buffers, split_rows.partials_workspace = buffers
                try:
                    times[arm].append(back_to_back_us(fn, args.calls))
                finally:
                    split_rows.meeting_buffers, split_rows.partials_workspace = KEPT
        kept, fresh = statistics.median(times["kept"]), statistics.median(times["per call"])
        print(f"| {name} | {kept:.1f} | {fresh:.1f} | {kept / fresh:.3f} |", flush=True)


if __name__ == "__main__":
    main()
