"""Two kernels: the tuned rmsnorm kernel writes the normalised x (times g), then the autotuned product
reads it back with the bias in its epilogue. The [M, K] intermediate makes one extra round trip through
memory, and the product cannot start before the norm ends."""

from __future__ import annotations

import torch

from kprof.kernels.lib.checks import dense_vector
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.rmsnorm_linear.fused import launch_product


def norm_then_triton(
    x2d: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """``rmsnorm_tuned(x2d, g) @ w (+ b)`` by kprof's Triton product (pinned tiles at decode sizes, else
    autotuned), for checked 2-D rows: [M, N]."""
    xn = rmsnorm_tuned(x2d, g, eps)
    y = torch.empty((x2d.shape[0], w.shape[1]), dtype=x2d.dtype, device=x2d.device)
    launch_product(xn, w.contiguous(), b, y, eps, norm=0)
    return y


@FAMILY.provider(
    "triton_two_kernels",
    kind="triton",
    description="tuned rmsnorm kernel, then an autotuned product with the bias in its epilogue",
)
def rmsnorm_linear_two_kernels(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    b = dense_vector(b)  # the kernels read the bias at unit stride
    x2d, n = check_inputs(x, g, w, b)
    return norm_then_triton(x2d, g, w, b, eps).view(*x.shape[:-1], n)
