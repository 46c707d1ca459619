"""The rmsnorm_linear family: inputs, oracle, bytes and FLOPs models, tolerances, shared input checks."""

from __future__ import annotations

from pathlib import Path

import torch

from kprof.dtypes import element_size, torch_dtype
from kprof.kernels.lib import checks
from kprof.kernels.rmsnorm_linear.reference import rmsnorm_linear_oracle
from kprof.registry import Family, Shape

DEFAULT_EPS = 1e-6
OP = "rmsnorm_linear"


def dims(shape: Shape) -> tuple[int, int, int]:
    """``(*batch, K, N)`` -> ``(M, K, N)``."""
    return checks.matrix_dims(OP, shape, "2048x4096x4096")


def make_inputs(shape: Shape, dtype: str, device: str | torch.device, seed: int) -> dict:
    """Rows of x at different scales (the norm must undo them), g around 1, W ~ N(0, 1/K), b ~ N(0, 1)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    k, n = shape[-2], shape[-1]
    dt = torch_dtype(dtype)
    batch = tuple(shape[:-2])
    scale = torch.exp(torch.empty(batch + (1,), device=device).uniform_(-2.0, 2.0, generator=gen))
    return {
        "x": (torch.randn(batch + (k,), generator=gen, device=device) * scale).to(dt),
        "g": (1.0 + 0.5 * torch.randn(k, generator=gen, device=device)).to(dt),
        "w": (k**-0.5 * torch.randn((k, n), generator=gen, device=device)).to(dt),
        "b": torch.randn(n, generator=gen, device=device).to(dt),
        "eps": DEFAULT_EPS,
    }


def bytes_model(shape: Shape, dtype: str) -> int:
    """x, g, W, b and y each moved once."""
    m, k, n = dims(shape)
    return (m * k + k + k * n + n + m * n) * element_size(dtype)


def flops_model(shape: Shape, dtype: str) -> int:
    """The product (2*M*K*N) plus the norm (3 per element of x) and the bias."""
    m, k, n = dims(shape)
    return 2 * m * k * n + 3 * m * k + m * n


def validate(x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, *, triton: bool = True) -> None:
    """Raise ``ValueError`` saying what is wrong (``triton``: the inputs must suit a Triton kernel)."""
    checks.check_float(OP, "x", x)
    checks.check_float(OP, "g", g, like=x)
    checks.check_float(OP, "w", w, like=x)
    k = x.shape[-1]
    checks.check_shape(OP, "g", g, (k,))
    if w.dim() != 2 or w.shape[0] != k:
        raise ValueError(f"{OP}: w has shape {tuple(w.shape)}; expected [K, N] with K = {k}")
    if b is not None:
        checks.check_float(OP, "b", b, like=x)
        checks.check_shape(OP, "b", b, (w.shape[1],))
    if triton:
        checks.check_triton_device(OP, x)


def check_inputs(x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> tuple[torch.Tensor, int]:
    """Validate for a kernel; return ``(x2d, N)``."""
    validate(x, g, w, b)
    return checks.rows(x), w.shape[1]


FAMILY = Family(
    "rmsnorm_linear",
    description="(rmsnorm(x) * g) @ W + b",
    package_dir=Path(__file__).parent,
    make_inputs=make_inputs,
    oracle=rmsnorm_linear_oracle,
    bytes_model=bytes_model,
    flops_model=flops_model,
    # fp32 accumulation over K; the fused version also rounds g*W once to the input dtype
    # (bf16 allows 1.6e-2: Triton's CPU interpreter truncates fp32 -> bf16 instead of rounding, which
    # doubles the rounding error of tiny shapes; on a GPU bf16 errors stay near 3e-3)
    tolerances={"fp32": 1e-5, "bf16": 1.6e-2, "fp16": 2e-3},
    baseline="torch_eager",
    row_inputs=("x",),
)
