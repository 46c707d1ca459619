"""The branch-free kernel with the telemetry fused: each program walks its seed's rows in blocks and sums their
statistics as it goes, so the per-seed mean and variance come out of the same pass that writes y (no second read of
y). On an H100 each block's (count, mean, M2) is merged with Chan's parallel-variance formula; on an H200 most
classes sum y and y^2 shifted by the program's first row instead, per block or per element (``STATS``,
``branch_free.fast_memory_tile``), which takes fewer instructions: there the kernel is bound by issuing them,
not by memory. With fewer seeds than SMs a seed's rows are split over several programs; the one that draws the
seed's last ticket merges their parts in slot order (``branch_free``).

On an H200, at 16-bit shapes of 2^23 elements or more that its table covers, the ops API runs ``kasmina.tma``'s
kernel instead: the same statistics, its x and y tiles moved by TMA; at 1-8 rows where ``kasmina.stacked``'s table
covers the call, that kernel (a block of seeds' rows in one tile, each distinct blueprint loaded once).

On a GPU the provider launches as ``kprof.kernels.ops.kasmina_forward`` does (``op_plan.kasmina``: the checked
launch on a signature's first call, then its plan through Triton's C launcher), so the host time a profile measures
for it is the host time a model pays for the op. Through ``branch_free.launch`` on every call it was 69-135 µs a call
on an H200, 16-26 µs now (``benchmarks/results/kasmina-copy/h200-seeds/``): most of it was the checks and the JIT's
binding."""

from __future__ import annotations

import torch

from kprof.kernels.kasmina import op_plan
from kprof.kernels.kasmina.branch_free import launch
from kprof.kernels.kasmina.family import FAMILY
from kprof.kernels.lib.checks import dense_vector


@FAMILY.provider(
    "triton_telemetry",
    kind="triton",
    description="the branch-free kernel with per-seed telemetry accumulated inside it (on an H200, 16-bit x of 2^23 "
    "elements or more: kasmina.tma's kernel, its tiles moved by TMA; at 1-8 rows where its table says: "
    "kasmina.stacked's)",
)
def kasmina_telemetry(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    lifecycle, blueprint_id, alpha = (dense_vector(v) for v in (lifecycle, blueprint_id, alpha))  # read at unit stride
    if getattr(x, "is_cuda", False):
        return op_plan.kasmina(x, lifecycle, blueprint_id, alpha, weights, bias)
    # the interpreter (or a CPU tensor without it: the checks say so): plans are kept by signature, not by how
    # TRITON_INTERPRET was set when they were made, so the CPU takes the checked launch on every call
    y, tele = launch(x, lifecycle, blueprint_id, alpha, weights, bias, telemetry=True)
    return y, tele
