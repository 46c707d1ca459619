"""The branch-free kernel with the telemetry fused: each program walks its seed's rows in blocks and sums their
statistics as it goes, so the per-seed mean and variance come out of the same pass that writes y (no second read of
y). On an H100 each block's (count, mean, M2) is merged with Chan's parallel-variance formula; on an H200 most
classes sum y and y^2 shifted by the program's first row instead, per block or per element (``STATS``,
``branch_free.fast_memory_tile``), which takes fewer instructions: there the kernel is bound by issuing them,
not by memory. With fewer seeds than SMs a seed's rows are split over several programs; the one that draws the
seed's last ticket merges their parts in slot order (``branch_free``)."""

from __future__ import annotations

import torch

from kprof.kernels.kasmina.branch_free import launch
from kprof.kernels.kasmina.family import FAMILY


@FAMILY.provider(
    "triton_telemetry",
    kind="triton",
    description="the branch-free kernel with per-seed telemetry accumulated inside it",
)
def kasmina_telemetry(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    y, tele = launch(x, lifecycle, blueprint_id, alpha, weights, bias, telemetry=True)
    return y, tele
